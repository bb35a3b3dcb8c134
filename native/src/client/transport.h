/*
 * transport.h (private): the byte pipe under a TDS connection: a TCP socket with deadlines,
 * optionally wrapped in TLS through OpenSSL memory BIOs.
 *
 * TLS comes in three shapes (MS-TDS 2.2.6.5, 3.2.5.1, 3.3.5.2):
 *  - TDS 7.x: the handshake records travel as the payload of PRELOGIN (0x12) packets; after it,
 *    TLS records go straight on TCP. Limited to TLS 1.2, as SQL Server's 7.x path is.
 *  - login only: as 7.x, but TLS is dropped after the LOGIN7 packet (mc_transport_tls_drop).
 *  - TDS 8.0 strict: TLS first on the bare socket, ALPN "tds/8.0", TLS 1.2 or 1.3.
 * Memory BIOs keep the socket in our hands, so every wait goes through one poll() with the
 * deadline and is counted as network wait.
 */
#ifndef MSSQLCDC_TRANSPORT_H
#define MSSQLCDC_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "mssqlcdc/connstr.h"
#include "mssqlcdc/status.h"

typedef struct mc_transport {
  int fd;
  SSL_CTX *ctx;
  SSL *ssl;
  BIO *rbio; /* bytes from the network, for OpenSSL */
  BIO *wbio; /* bytes from OpenSSL, for the network */
  bool tls;  /* TLS wraps reads and writes */
  uint64_t bytes_received;
  uint64_t bytes_sent;
  double network_wait_seconds;
} mc_transport;

/* Monotonic seconds; deadlines are absolute values of this clock, or 0 for none. */
double mc_now(void);

void mc_transport_init(mc_transport *t);

/* Resolves host and connects over TCP (IPv4 or IPv6) before the deadline. MC_EIO / MC_ETIMEOUT
 * with a message naming host and port. */
MC_NODISCARD mc_status mc_transport_connect(mc_transport *t, const char *host, uint16_t port,
                                            double deadline, mc_error *err);

/* TLS handshake. wrapped: inside PRELOGIN packets (TDS 7.x); else direct with ALPN tds/8.0.
 * Verifies the certificate chain (system store, or the file in SSL_CERT_FILE) and the host
 * name (params->host_name_in_certificate, else params->host) unless
 * params->trust_server_certificate. MC_ETLS with OpenSSL's reason on failure. */
MC_NODISCARD mc_status mc_transport_tls_start(mc_transport *t, const mc_conn_params *params,
                                              bool wrapped, double deadline, mc_error *err);

/* Stops using TLS (login-only encryption), without a close_notify. */
void mc_transport_tls_drop(mc_transport *t);

/* Writes all of buf (through TLS when on). */
MC_NODISCARD mc_status mc_transport_write(mc_transport *t, const uint8_t *buf, size_t len,
                                          double deadline, mc_error *err);

/* Reads at least one byte (at most cap) into buf. MC_ECLOSED when the server closed the
 * connection, MC_ETIMEOUT at the deadline. */
MC_NODISCARD mc_status mc_transport_read(mc_transport *t, uint8_t *buf, size_t cap, size_t *got,
                                         double deadline, mc_error *err);

/* Shuts the socket down so that a read or write blocked in another thread returns; the
 * descriptor stays open until mc_transport_close. Thread-safe (one syscall). */
void mc_transport_interrupt(mc_transport *t);

/* Closes the socket and frees TLS state. Safe to call twice. */
void mc_transport_close(mc_transport *t);

#endif /* MSSQLCDC_TRANSPORT_H */
