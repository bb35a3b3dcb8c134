/*
 * packet.h: TDS packet framing (MS-TDS 2.2.3.1 "Packet Header").
 *
 * Every TDS message travels as one or more packets: an 8-byte header (type, status, length
 * big-endian including the header, SPID big-endian, packet id, window) and a payload. A
 * message ends with the packet whose status has EOM (0x01). Payload data (tokens, values, PLP
 * chunks) may be split across packets at any byte.
 *
 * mc_tds_frame splits an outgoing message into packets; mc_tds_deframer strips the headers of
 * an incoming message without copying, however the bytes arrive from the socket.
 */
#ifndef MSSQLCDC_PACKET_H
#define MSSQLCDC_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mssqlcdc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_TDS_HEADER_SIZE 8
#define MC_TDS_MIN_PACKET 512
#define MC_TDS_MAX_PACKET 32767

/* Packet types (MS-TDS 2.2.3.1.1). */
enum {
  MC_TDS_SQLBATCH = 0x01,
  MC_TDS_RPC = 0x03,
  MC_TDS_REPLY = 0x04,
  MC_TDS_ATTENTION = 0x06,
  MC_TDS_FEDAUTH_TOKEN = 0x08,
  MC_TDS_LOGIN7 = 0x10,
  MC_TDS_PRELOGIN = 0x12
};

/* Status bits (MS-TDS 2.2.3.1.2). */
enum { MC_TDS_STATUS_EOM = 0x01, MC_TDS_STATUS_IGNORE = 0x02, MC_TDS_STATUS_RESET = 0x08 };

typedef struct mc_tds_header {
  uint8_t type;
  uint8_t status;
  uint16_t length; /* whole packet, header included */
  uint16_t spid;
  uint8_t packet_id;
  uint8_t window;
} mc_tds_header;

/* Reads a header from 8 bytes. MC_EPROTO if its length is below 8 or above max_packet. */
MC_NODISCARD mc_status mc_tds_header_read(const uint8_t in[MC_TDS_HEADER_SIZE], uint32_t max_packet,
                                          mc_tds_header *out, mc_error *err);

/* Writes a header into 8 bytes. */
void mc_tds_header_write(const mc_tds_header *h, uint8_t out[MC_TDS_HEADER_SIZE]);

/* Bytes mc_tds_frame writes for a payload of len bytes in packets of packet_size. */
size_t mc_tds_framed_size(size_t len, uint32_t packet_size);

/*
 * Frames payload[0..len) as a message of the given type in packets of at most packet_size
 * bytes (512..32767), numbering packets from first_packet_id (mod 256) and setting EOM on the
 * last; an empty payload is one header-only packet. Writes mc_tds_framed_size(len, packet_size)
 * bytes to out (capacity out_cap). MC_EINVAL on a bad packet size or a too small buffer.
 */
MC_NODISCARD mc_status mc_tds_frame(uint8_t type, const uint8_t *payload, size_t len,
                                    uint32_t packet_size, uint8_t first_packet_id, uint8_t *out,
                                    size_t out_cap, size_t *written, mc_error *err);

/* Strips packet headers from one incoming message. */
typedef struct mc_tds_deframer {
  uint8_t header[MC_TDS_HEADER_SIZE]; /* a header split across reads is gathered here */
  size_t header_have;
  size_t payload_left; /* payload bytes of the current packet not yet returned */
  uint32_t max_packet;
  uint8_t expected_type; /* 0 = any */
  bool in_packet;
  bool last_packet; /* the current packet has EOM */
  bool done;        /* the whole message was returned */
  uint8_t status;   /* status of the last header read */
  uint64_t packets; /* headers read so far */
} mc_tds_deframer;

/* Takes the header gathered in d->header (header_have == 8): checks it (length, type) and
 * starts its packet (in_packet, payload_left; an empty last packet ends the message). For a
 * caller that reads payload bytes itself, straight to where they are decoded (conn_io.c).
 * MC_EPROTO for a bad header or a header after the end of the message. */
MC_NODISCARD mc_status mc_tds_deframer_take_header(mc_tds_deframer *d, mc_error *err);

/* Starts a message. expected_type is the packet type every packet must have (0 = any). */
void mc_tds_deframer_init(mc_tds_deframer *d, uint8_t expected_type, uint32_t max_packet);

/*
 * Consumes input bytes up to the next payload run. On MC_OK, *consumed bytes of in were used
 * and, if *payload_len > 0, *payload points INTO in at *payload_len payload bytes (no copy).
 * Call again with the rest of in; when in is used up, read more from the socket. d->done turns
 * true once the EOM packet's payload has been returned. MC_EPROTO for a bad header (wrong
 * type, bad length) or bytes after the end of the message.
 */
MC_NODISCARD mc_status mc_tds_deframe(mc_tds_deframer *d, const uint8_t *in, size_t in_len,
                                      size_t *consumed, const uint8_t **payload,
                                      size_t *payload_len, mc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_PACKET_H */
