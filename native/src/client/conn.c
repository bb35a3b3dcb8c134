/*
 * conn.c: opening a connection (TCP, PRELOGIN, TLS, LOGIN7, login response, routing) and
 * closing it (conn.h; MS-TDS 3.2.5 client state machine). Bytes go through conn_io.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "conn_int.h"
#include "conn_io.h"
#include "mssqlcdc/login7.h"
#include "mssqlcdc/prelogin.h"

/* Packets of the login phase: every server takes 4096 before ENVCHANGE says otherwise. */
#define LOGIN_PACKET_SIZE 4096
/* "The maximum network packet size for encrypted connections is 16,383 bytes" ("Configure the
 * network packet size Server Configuration Option", Microsoft Learn): the most this client
 * asks for on a session TLS protects throughout. */
#define MAX_ENCRYPTED_PACKET_SIZE 16383

/* Reads one whole PRELOGIN reply (a small message) into buf. */
static mc_status read_prelogin_reply(mc_conn *c, uint8_t *buf, size_t cap, size_t *len,
                                     double deadline, mc_error *err) {
  mc_tds_deframer d;
  mc_tds_deframer_init(&d, MC_TDS_REPLY, MC_TDS_MAX_PACKET);
  *len = 0;
  while (!d.done) {
    size_t got = 0;
    MC_RETURN_NOT_OK(mc_transport_read(&c->t, c->rbuf, sizeof c->rbuf, &got, deadline, err));
    size_t off = 0;
    while (off < got) {
      size_t used = 0, n = 0;
      const uint8_t *payload = NULL;
      MC_RETURN_NOT_OK(mc_tds_deframe(&d, c->rbuf + off, got - off, &used, &payload, &n, err));
      off += used;
      if (n > cap - *len) {
        return mc_error_set(err, MC_EPROTO, "PRELOGIN reply is larger than %zu bytes", cap);
      }
      if (n > 0) memcpy(buf + *len, payload, n);
      *len += n;
    }
  }
  c->packets_before += d.packets;
  return MC_OK;
}

static void host_name(char *out, size_t cap) {
  if (gethostname(out, cap) != 0) snprintf(out, cap, "localhost");
  out[cap - 1] = '\0';
}

/* One attempt: connect to params' host and port and log in. */
static mc_status login(mc_conn *c, const mc_conn_auth *auth, double deadline, mc_error *err) {
  const mc_conn_params *p = &c->params;
  MC_RETURN_NOT_OK(mc_transport_connect(&c->t, p->host, p->port, deadline, err));
  if (p->encrypt == MC_ENCRYPT_STRICT) {
    MC_RETURN_NOT_OK(mc_transport_tls_start(&c->t, p, false, deadline, err));
  }
  bool token = auth->access_token != NULL;
  uint8_t pre[MC_PRELOGIN_REQUEST_MAX];
  size_t pre_len = mc_prelogin_build(mc_prelogin_client_encryption(p->encrypt), token, pre);
  MC_RETURN_NOT_OK(mc_conn_send(c, MC_TDS_PRELOGIN, pre, pre_len, err));
  uint8_t reply[4096];
  size_t reply_len = 0;
  MC_RETURN_NOT_OK(read_prelogin_reply(c, reply, sizeof reply, &reply_len, deadline, err));
  mc_prelogin_reply r;
  MC_RETURN_NOT_OK(mc_prelogin_parse(reply, reply_len, &r, err));
  mc_tls_plan plan;
  MC_RETURN_NOT_OK(mc_prelogin_plan(p->encrypt, r.encryption, &plan, err));
  if (p->encrypt != MC_ENCRYPT_STRICT && plan != MC_TLS_NONE) {
    /* Encrypt=optional does not validate the certificate, as in ODBC Driver 18: TLS there
     * only hides the login packet from passive observers. */
    mc_conn_params tls_params = *p;
    if (p->encrypt == MC_ENCRYPT_OPTIONAL) tls_params.trust_server_certificate = true;
    mc_status st = mc_transport_tls_start(&c->t, &tls_params, true, deadline, err);
    OPENSSL_cleanse(&tls_params, sizeof tls_params);
    MC_RETURN_NOT_OK(st);
  }

  char client_host[256];
  host_name(client_host, sizeof client_host);
  mc_login7_request req;
  memset(&req, 0, sizeof req);
  bool encrypted = p->encrypt == MC_ENCRYPT_STRICT || plan == MC_TLS_FULL;
  req.packet_size = p->packet_size;
  if (encrypted && req.packet_size > MAX_ENCRYPTED_PACKET_SIZE) {
    req.packet_size = MAX_ENCRYPTED_PACKET_SIZE;
  }
  req.tds_version = p->encrypt == MC_ENCRYPT_STRICT ? MC_TDS_VERSION_80 : MC_TDS_VERSION_74;
  req.host_name = client_host;
  req.user = auth->user != NULL ? auth->user : p->user;
  req.password = auth->password != NULL ? auth->password : p->password;
  req.app_name = p->application_name;
  req.server_name = p->host;
  req.library = "mssql-cdc";
  req.database = p->database;
  req.access_token = auth->access_token;
  req.access_token_len = token ? strlen(auth->access_token) : 0;
  req.fedauth_echo = r.fedauth_required;
  req.read_only_intent = p->read_only_intent;
  req.client_pid = (uint32_t)getpid();
  uint8_t *msg = NULL;
  size_t msg_len = 0;
  MC_RETURN_NOT_OK(mc_login7_build(&req, &msg, &msg_len, err));
  mc_status st = mc_conn_send(c, MC_TDS_LOGIN7, msg, msg_len, err);
  mc_login7_free(msg, msg_len);
  MC_RETURN_NOT_OK(st);
  if (plan == MC_TLS_LOGIN_ONLY) mc_transport_tls_drop(&c->t);

  /* The login response: LOGINACK, ENVCHANGEs, INFOs, maybe an ERROR, DONE. */
  c->login_deadline = deadline; /* the whole login shares one deadline, however the server
                                   trickles its bytes */
  mc_conn_begin_response(c);
  bool acknowledged = false;
  for (;;) {
    mc_tds_event ev;
    MC_RETURN_NOT_OK(mc_conn_next_event(c, &ev, err));
    if (ev == MC_TDS_EVENT_NONE) break;
    if (ev == MC_TDS_EVENT_LOGINACK) {
      const mc_tds_loginack *ack = mc_tds_decoder_loginack(c->dec);
      acknowledged = true;
      uint32_t v = ack->prog_version;
      snprintf(c->server_version, sizeof c->server_version, "%u.%u.%u", (unsigned)(v >> 24),
               (unsigned)((v >> 16) & 0xFF), (unsigned)(v & 0xFFFF));
    } else if (ev == MC_TDS_EVENT_ENVCHANGE) {
      mc_conn_apply_envchange(c);
    } else if (ev == MC_TDS_EVENT_MESSAGE) {
      mc_conn_keep_message(c);
    }
  }
  c->in_request = false;
  c->login_deadline = 0;
  if (c->has_message) { /* the server's fields travel as data, not only as text */
    const mc_tds_message *m = &c->message;
    return mc_error_set_server(err, MC_ELOGIN, m->number, m->state, m->severity, m->message,
                               m->server, m->procedure, m->line);
  }
  if (!acknowledged) {
    return mc_error_set(err, MC_EPROTO, "the login response has no LOGINACK");
  }
  return MC_OK;
}

mc_status mc_conn_open(const mc_conn_params *params, const mc_conn_auth *auth_in, mc_conn **out,
                       mc_error *err) {
  *out = NULL;
  mc_conn_auth auth = {0};
  if (auth_in != NULL) auth = *auth_in;
  if (params->host[0] == '\0') {
    return mc_error_set(err, MC_EINVAL, "connection string: Server is required");
  }
  mc_conn *c = calloc(1, sizeof *c);
  if (c == NULL) return mc_error_set(err, MC_ENOMEM, "out of memory opening a connection");
  c->params = *params;
  c->dec_options.batch_rows = 65536;
  c->dec_options.max_buffer = params->max_buffer;
  c->dec = mc_tds_decoder_new(&c->dec_options);
  if (c->dec == NULL) {
    mc_conn_close(c);
    return mc_error_set(err, MC_ENOMEM, "out of memory opening a connection");
  }
  c->rows_affected = -1;
  double deadline =
      params->login_timeout_seconds > 0 ? mc_now() + params->login_timeout_seconds : 0;
  mc_status st = MC_OK;
  for (int attempt = 0; attempt < 2; attempt++) {
    mc_transport_init(&c->t);
    c->packet_size = LOGIN_PACKET_SIZE;
    c->routing_host[0] = '\0';
    c->has_message = false;
    st = login(c, &auth, deadline, err);
    if (st != MC_OK || c->routing_host[0] == '\0') break;
    /* ENVCHANGE routing (MS-TDS 2.2.7.9): log in again at the host it names. */
    mc_transport_close(&c->t);
    snprintf(c->params.host, sizeof c->params.host, "%s", c->routing_host);
    c->params.port = c->routing_port;
    st = mc_error_set(err, MC_EPROTO, "the server routed the connection twice");
  }
  OPENSSL_cleanse(c->params.password, sizeof c->params.password);
  c->login_deadline = 0;
  if (st == MC_ETIMEOUT) {
    mc_error_set(err, MC_ETIMEOUT, "login timed out after %.3g s (Connection Timeout)",
                 params->login_timeout_seconds);
  }
  if (st != MC_OK) {
    mc_conn_close(c);
    return st;
  }
  c->has_message = false;
  *out = c;
  return MC_OK;
}

void mc_conn_stats_get(const mc_conn *c, mc_conn_stats *out) {
  out->bytes_received = c->t.bytes_received;
  out->bytes_sent = c->t.bytes_sent;
  out->packets_received = c->packets_before + c->deframer.packets;
  out->round_trips = c->round_trips;
  out->network_wait_seconds = c->t.network_wait_seconds;
  out->decode_seconds = c->decode_seconds;
}

const char *mc_conn_server_version(const mc_conn *c) { return c->server_version; }
const char *mc_conn_database(const mc_conn *c) { return c->database; }
bool mc_conn_in_transaction(const mc_conn *c) {
  static const uint8_t none[8] = {0};
  return memcmp(c->transaction, none, sizeof none) != 0;
}
const mc_tds_message *mc_conn_last_message(const mc_conn *c) {
  return c->has_message ? &c->message : NULL;
}
int64_t mc_conn_rows_affected(const mc_conn *c) { return c->rows_affected; }

void mc_conn_interrupt(mc_conn *c) {
  if (c != NULL) mc_transport_interrupt(&c->t);
}

void mc_conn_close(mc_conn *c) {
  if (c == NULL) return;
  mc_transport_close(&c->t);
  mc_tds_decoder_free(c->dec);
  OPENSSL_cleanse(c, sizeof *c);
  free(c);
}
