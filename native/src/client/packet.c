/*
 * packet.c: TDS packet headers, framing and deframing (packet.h; MS-TDS 2.2.3.1).
 */
#include "mssqlcdc/packet.h"

#include <string.h>

mc_status mc_tds_header_read(const uint8_t in[MC_TDS_HEADER_SIZE], uint32_t max_packet,
                             mc_tds_header *out, mc_error *err) {
  mc_tds_header h;
  h.type = in[0];
  h.status = in[1];
  h.length = (uint16_t)((in[2] << 8) | in[3]);
  h.spid = (uint16_t)((in[4] << 8) | in[5]);
  h.packet_id = in[6];
  h.window = in[7];
  if (h.length < MC_TDS_HEADER_SIZE || h.length > max_packet) {
    return mc_error_set(err, MC_EPROTO,
                        "TDS packet header declares %u bytes; a packet is 8 to %u bytes",
                        (unsigned)h.length, (unsigned)max_packet);
  }
  *out = h;
  return MC_OK;
}

void mc_tds_header_write(const mc_tds_header *h, uint8_t out[MC_TDS_HEADER_SIZE]) {
  out[0] = h->type;
  out[1] = h->status;
  out[2] = (uint8_t)(h->length >> 8);
  out[3] = (uint8_t)h->length;
  out[4] = (uint8_t)(h->spid >> 8);
  out[5] = (uint8_t)h->spid;
  out[6] = h->packet_id;
  out[7] = h->window;
}

size_t mc_tds_framed_size(size_t len, uint32_t packet_size) {
  size_t per = packet_size - MC_TDS_HEADER_SIZE;
  size_t packets = len == 0 ? 1 : (len + per - 1) / per;
  return len + packets * MC_TDS_HEADER_SIZE;
}

mc_status mc_tds_frame(uint8_t type, const uint8_t *payload, size_t len, uint32_t packet_size,
                       uint8_t first_packet_id, uint8_t *out, size_t out_cap, size_t *written,
                       mc_error *err) {
  if (packet_size < MC_TDS_MIN_PACKET || packet_size > MC_TDS_MAX_PACKET) {
    return mc_error_set(err, MC_EINVAL, "TDS packet size %u is outside 512..32767",
                        (unsigned)packet_size);
  }
  size_t need = mc_tds_framed_size(len, packet_size);
  if (out_cap < need) {
    return mc_error_set(err, MC_EINVAL, "framing buffer holds %zu bytes; %zu are needed", out_cap,
                        need);
  }
  size_t per = packet_size - MC_TDS_HEADER_SIZE;
  size_t off = 0;
  size_t o = 0;
  uint8_t id = first_packet_id;
  do {
    size_t n = len - off < per ? len - off : per;
    mc_tds_header h = {type, 0, (uint16_t)(n + MC_TDS_HEADER_SIZE), 0, id++, 0};
    if (off + n == len) h.status = MC_TDS_STATUS_EOM;
    mc_tds_header_write(&h, out + o);
    o += MC_TDS_HEADER_SIZE;
    if (n > 0) memcpy(out + o, payload + off, n);
    o += n;
    off += n;
  } while (off < len);
  *written = o;
  return MC_OK;
}

void mc_tds_deframer_init(mc_tds_deframer *d, uint8_t expected_type, uint32_t max_packet) {
  memset(d, 0, sizeof *d);
  d->expected_type = expected_type;
  d->max_packet = max_packet;
}

mc_status mc_tds_deframer_take_header(mc_tds_deframer *d, mc_error *err) {
  if (d->done) return mc_error_set(err, MC_EPROTO, "bytes arrived after the end of a TDS message");
  mc_tds_header h;
  MC_RETURN_NOT_OK(mc_tds_header_read(d->header, d->max_packet, &h, err));
  if (d->expected_type != 0 && h.type != d->expected_type) {
    return mc_error_set(err, MC_EPROTO, "TDS packet of type 0x%02X where 0x%02X was expected",
                        (unsigned)h.type, (unsigned)d->expected_type);
  }
  d->header_have = 0;
  d->packets++;
  d->in_packet = true;
  d->status = h.status;
  d->last_packet = (h.status & MC_TDS_STATUS_EOM) != 0;
  d->payload_left = (size_t)h.length - MC_TDS_HEADER_SIZE;
  if (d->payload_left == 0) {
    d->in_packet = false;
    if (d->last_packet) d->done = true;
  }
  return MC_OK;
}

mc_status mc_tds_deframe(mc_tds_deframer *d, const uint8_t *in, size_t in_len, size_t *consumed,
                         const uint8_t **payload, size_t *payload_len, mc_error *err) {
  size_t used = 0;
  *payload = NULL;
  *payload_len = 0;
  while (used < in_len) {
    if (d->done) {
      *consumed = used;
      return mc_error_set(err, MC_EPROTO, "%zu bytes arrived after the end of a TDS message",
                          in_len - used);
    }
    if (!d->in_packet) {
      size_t take = MC_TDS_HEADER_SIZE - d->header_have;
      if (take > in_len - used) take = in_len - used;
      memcpy(d->header + d->header_have, in + used, take);
      d->header_have += take;
      used += take;
      if (d->header_have < MC_TDS_HEADER_SIZE) break;
      mc_status st = mc_tds_deframer_take_header(d, err);
      if (st != MC_OK) {
        *consumed = used;
        return st;
      }
      if (!d->in_packet) continue; /* an empty packet */
    }
    size_t n = d->payload_left < in_len - used ? d->payload_left : in_len - used;
    d->payload_left -= n;
    if (d->payload_left == 0) {
      d->in_packet = false;
      if (d->last_packet) d->done = true;
    }
    if (n > 0) {
      *payload = in + used;
      *payload_len = n;
      used += n;
      break;
    }
  }
  *consumed = used;
  return MC_OK;
}
