/*
 * transport.c: TCP with deadlines and TLS through OpenSSL memory BIOs (transport.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "mssqlcdc/packet.h"

/* Handshake records ride in PRELOGIN packets of this size (any legal size works). */
#define HANDSHAKE_PACKET_SIZE 4096

double mc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void mc_transport_init(mc_transport *t) {
  memset(t, 0, sizeof *t);
  t->fd = -1;
}

/* Waits until fd is ready for events or the deadline passes; the time counts as network wait. */
static mc_status wait_fd(mc_transport *t, short events, double deadline, const char *what,
                         mc_error *err) {
  for (;;) {
    int timeout_ms = -1;
    double start = mc_now();
    if (deadline > 0) {
      double left = deadline - start;
      if (left <= 0) return mc_error_set(err, MC_ETIMEOUT, "timed out %s", what);
      timeout_ms = (int)(left * 1000.0) + 1;
    }
    struct pollfd p = {t->fd, events, 0};
    int r = poll(&p, 1, timeout_ms);
    t->network_wait_seconds += mc_now() - start;
    if (r > 0) return MC_OK;
    if (r == 0) continue; /* loop re-checks the deadline */
    if (errno == EINTR) continue;
    return mc_error_set(err, MC_EIO, "poll failed %s: %s", what, strerror(errno));
  }
}

mc_status mc_transport_connect(mc_transport *t, const char *host, uint16_t port, double deadline,
                               mc_error *err) {
  char port_text[8];
  snprintf(port_text, sizeof port_text, "%u", (unsigned)port);
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo *list = NULL;
  int gai = getaddrinfo(host, port_text, &hints, &list);
  if (gai != 0) {
    return mc_error_set(err, MC_EIO, "cannot resolve %s: %s", host, gai_strerror(gai));
  }
  mc_status st = MC_EIO;
  char last[160] = "no address";
  for (struct addrinfo *ai = list; ai != NULL; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) continue;
    int flags = fcntl(fd, F_GETFL, 0);
    (void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    t->fd = fd;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      st = MC_OK;
      break;
    }
    if (errno == EINPROGRESS) {
      st = wait_fd(t, POLLOUT, deadline, "connecting", err);
      if (st == MC_OK) {
        int so_error = 0;
        socklen_t len = sizeof so_error;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) == 0 && so_error == 0) break;
        snprintf(last, sizeof last, "%s", strerror(so_error));
        st = MC_EIO;
      } else if (st == MC_ETIMEOUT) {
        close(fd);
        t->fd = -1;
        break;
      }
    } else {
      snprintf(last, sizeof last, "%s", strerror(errno));
    }
    close(fd);
    t->fd = -1;
  }
  freeaddrinfo(list);
  if (st == MC_ETIMEOUT) {
    return mc_error_set(err, MC_ETIMEOUT, "timed out connecting to %s,%u", host, (unsigned)port);
  }
  if (st != MC_OK) {
    return mc_error_set(err, MC_EIO, "cannot connect to %s,%u: %s", host, (unsigned)port, last);
  }
  return MC_OK;
}

static mc_status raw_write(mc_transport *t, const uint8_t *buf, size_t len, double deadline,
                           mc_error *err) {
  size_t off = 0;
  while (off < len) {
    ssize_t n = send(t->fd, buf + off, len - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += (size_t)n;
      t->bytes_sent += (uint64_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      MC_RETURN_NOT_OK(wait_fd(t, POLLOUT, deadline, "sending to the server", err));
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      return mc_error_set(err, MC_ECLOSED, "the server closed the connection (%s)",
                          strerror(errno));
    }
    return mc_error_set(err, MC_EIO, "send failed: %s", strerror(errno));
  }
  return MC_OK;
}

static mc_status raw_read(mc_transport *t, uint8_t *buf, size_t cap, size_t *got, double deadline,
                          mc_error *err) {
  for (;;) {
    ssize_t n = recv(t->fd, buf, cap, 0);
    if (n > 0) {
      *got = (size_t)n;
      t->bytes_received += (uint64_t)n;
      return MC_OK;
    }
    if (n == 0) return mc_error_set(err, MC_ECLOSED, "the server closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      MC_RETURN_NOT_OK(wait_fd(t, POLLIN, deadline, "waiting for the server", err));
      continue;
    }
    if (errno == ECONNRESET) {
      return mc_error_set(err, MC_ECLOSED, "the server reset the connection");
    }
    return mc_error_set(err, MC_EIO, "recv failed: %s", strerror(errno));
  }
}

/* Sends what OpenSSL wrote, wrapped in PRELOGIN packets during a TDS 7.x handshake. */
static mc_status flush_tls(mc_transport *t, bool wrapped, double deadline, mc_error *err) {
  uint8_t buf[16384];
  uint8_t framed[16384 + 8 * 8];
  int n;
  while ((n = BIO_read(t->wbio, buf, (int)sizeof buf)) > 0) {
    if (!wrapped) {
      MC_RETURN_NOT_OK(raw_write(t, buf, (size_t)n, deadline, err));
      continue;
    }
    size_t written = 0;
    MC_RETURN_NOT_OK(mc_tds_frame(MC_TDS_PRELOGIN, buf, (size_t)n, HANDSHAKE_PACKET_SIZE, 1, framed,
                                  sizeof framed, &written, err));
    MC_RETURN_NOT_OK(raw_write(t, framed, written, deadline, err));
  }
  return MC_OK;
}

/* One sentence on why OpenSSL failed, with the certificate verdict when that was the cause. */
static mc_status tls_failure(mc_transport *t, const char *what, mc_error *err) {
  char reason[256] = "unknown error";
  unsigned long e = ERR_get_error();
  if (e != 0) ERR_error_string_n(e, reason, sizeof reason);
  ERR_clear_error();
  long verify = t->ssl != NULL ? SSL_get_verify_result(t->ssl) : X509_V_OK;
  if (verify != X509_V_OK) {
    return mc_error_set(err, MC_ETLS,
                        "TLS %s failed: the server certificate was not accepted: %s (set "
                        "TrustServerCertificate=yes only for a server you trust)",
                        what, X509_verify_cert_error_string(verify));
  }
  return mc_error_set(err, MC_ETLS, "TLS %s failed: %s", what, reason);
}

/* Sets what the certificate must match: a DNS name (also sent as SNI) or an IP address. */
static mc_status expect_peer(mc_transport *t, const char *name, mc_error *err) {
  unsigned char addr[16];
  X509_VERIFY_PARAM *param = SSL_get0_param(t->ssl);
  int is_ip = inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;
  int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name)
                 : X509_VERIFY_PARAM_set1_host(param, name, 0);
  if (!is_ip) ok = ok && SSL_set_tlsext_host_name(t->ssl, name);
  if (!ok) return tls_failure(t, "set-up", err);
  return MC_OK;
}

mc_status mc_transport_tls_start(mc_transport *t, const mc_conn_params *params, bool wrapped,
                                 double deadline, mc_error *err) {
  t->ctx = SSL_CTX_new(TLS_client_method());
  if (t->ctx == NULL) return tls_failure(t, "set-up", err);
  SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
  if (wrapped) SSL_CTX_set_max_proto_version(t->ctx, TLS1_2_VERSION);
  if (params->trust_server_certificate) {
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_NONE, NULL);
  } else {
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) return tls_failure(t, "set-up", err);
  }
  t->ssl = SSL_new(t->ctx);
  t->rbio = BIO_new(BIO_s_mem());
  t->wbio = BIO_new(BIO_s_mem());
  if (t->ssl == NULL || t->rbio == NULL || t->wbio == NULL) {
    BIO_free(t->rbio);
    BIO_free(t->wbio);
    t->rbio = t->wbio = NULL;
    return tls_failure(t, "set-up", err);
  }
  SSL_set_bio(t->ssl, t->rbio, t->wbio); /* the SSL owns both BIOs now */
  SSL_set_connect_state(t->ssl);
  if (!params->trust_server_certificate) {
    const char *name = params->host_name_in_certificate[0] != '\0'
                           ? params->host_name_in_certificate
                           : params->host;
    MC_RETURN_NOT_OK(expect_peer(t, name, err));
  } else if (inet_pton(AF_INET, params->host, (unsigned char[16]){0}) != 1) {
    SSL_set_tlsext_host_name(t->ssl, params->host);
  }
  if (!wrapped) {
    static const unsigned char alpn[] = {7, 't', 'd', 's', '/', '8', '.', '0'};
    if (SSL_set_alpn_protos(t->ssl, alpn, sizeof alpn) != 0) {
      return tls_failure(t, "set-up", err);
    }
  }

  mc_tds_deframer deframer;
  mc_tds_deframer_init(&deframer, 0, MC_TDS_MAX_PACKET);
  uint8_t in[16384];
  for (;;) {
    int r = SSL_do_handshake(t->ssl);
    MC_RETURN_NOT_OK(flush_tls(t, wrapped, deadline, err));
    if (r == 1) break;
    int e = SSL_get_error(t->ssl, r);
    if (e != SSL_ERROR_WANT_READ) return tls_failure(t, "handshake", err);
    size_t got = 0;
    mc_status st = raw_read(t, in, sizeof in, &got, deadline, err);
    if (st == MC_ECLOSED) {
      return mc_error_set(err, MC_ETLS,
                          "TLS handshake failed: the server closed the connection (does it "
                          "support %s?)",
                          wrapped ? "TLS for TDS 7.x" : "TDS 8.0 strict encryption");
    }
    MC_RETURN_NOT_OK(st);
    if (!wrapped) {
      if (BIO_write(t->rbio, in, (int)got) != (int)got) return tls_failure(t, "handshake", err);
      continue;
    }
    size_t off = 0;
    while (off < got) {
      size_t used = 0;
      const uint8_t *payload = NULL;
      size_t n = 0;
      if (deframer.done) mc_tds_deframer_init(&deframer, 0, MC_TDS_MAX_PACKET);
      MC_RETURN_NOT_OK(mc_tds_deframe(&deframer, in + off, got - off, &used, &payload, &n, err));
      off += used;
      if (n > 0 && BIO_write(t->rbio, payload, (int)n) != (int)n) {
        return tls_failure(t, "handshake", err);
      }
    }
  }
  if (!wrapped) {
    const unsigned char *proto = NULL;
    unsigned int len = 0;
    SSL_get0_alpn_selected(t->ssl, &proto, &len);
    /* A server that selects no protocol is accepted (mssql-jdbc's TDS 8.0 handshake does the
     * same); one that selects another protocol is not speaking TDS 8.0. */
    if (len != 0 && (len != 7 || memcmp(proto, "tds/8.0", 7) != 0)) {
      return mc_error_set(err, MC_ETLS,
                          "TLS handshake failed: the server did not agree to TDS 8.0 (ALPN "
                          "tds/8.0); it may not support Encrypt=strict");
    }
  }
  t->tls = true;
  return MC_OK;
}

void mc_transport_tls_drop(mc_transport *t) {
  t->tls = false;
  SSL_free(t->ssl); /* frees both BIOs */
  SSL_CTX_free(t->ctx);
  t->ssl = NULL;
  t->ctx = NULL;
  t->rbio = t->wbio = NULL;
}

mc_status mc_transport_write(mc_transport *t, const uint8_t *buf, size_t len, double deadline,
                             mc_error *err) {
  if (!t->tls) return raw_write(t, buf, len, deadline, err);
  size_t off = 0;
  while (off < len) {
    size_t chunk = len - off > 16384 ? 16384 : len - off;
    int n = SSL_write(t->ssl, buf + off, (int)chunk);
    if (n <= 0) return tls_failure(t, "write", err);
    off += (size_t)n;
    MC_RETURN_NOT_OK(flush_tls(t, false, deadline, err));
  }
  return MC_OK;
}

mc_status mc_transport_read(mc_transport *t, uint8_t *buf, size_t cap, size_t *got, double deadline,
                            mc_error *err) {
  if (!t->tls) return raw_read(t, buf, cap, got, deadline, err);
  for (;;) {
    int n = SSL_read(t->ssl, buf, (int)(cap > 1 << 30 ? 1 << 30 : cap));
    if (n > 0) {
      *got = (size_t)n;
      return MC_OK;
    }
    int e = SSL_get_error(t->ssl, n);
    MC_RETURN_NOT_OK(flush_tls(t, false, deadline, err)); /* e.g. a key update reply */
    if (e == SSL_ERROR_ZERO_RETURN) {
      return mc_error_set(err, MC_ECLOSED, "the server closed the TLS session");
    }
    if (e != SSL_ERROR_WANT_READ) return tls_failure(t, "read", err);
    uint8_t in[16384];
    size_t n_in = 0;
    MC_RETURN_NOT_OK(raw_read(t, in, sizeof in, &n_in, deadline, err));
    if (BIO_write(t->rbio, in, (int)n_in) != (int)n_in) return tls_failure(t, "read", err);
  }
}

void mc_transport_interrupt(mc_transport *t) {
  if (t->fd >= 0) (void)shutdown(t->fd, SHUT_RDWR);
}

void mc_transport_close(mc_transport *t) {
  if (t->ssl != NULL || t->ctx != NULL) mc_transport_tls_drop(t);
  if (t->fd >= 0) close(t->fd);
  t->fd = -1;
}
