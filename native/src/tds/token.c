/*
 * token.c: the token loop (MS-TDS 2.2.7, token stream; 2.2.4 token classes) behind
 * mc_tds_decoder_next, and the small tokens: DONE/DONEPROC/DONEINPROC (2.2.7.6-8),
 * ERROR/INFO (2.2.7.10/2.2.7.13), ENVCHANGE (2.2.7.9), LOGINACK (2.2.7.14), RETURNSTATUS
 * (2.2.7.18), RETURNVALUE (2.2.7.19, skipped), FEATUREEXTACK (2.2.7.11, skipped), ORDER,
 * TABNAME, COLINFO, SSPI and FEDAUTHINFO (skipped by length), and unknown tokens skipped by
 * their class: zero-length (xx01xxxx), fixed-length (xx11xxxx: 1, 2, 4 or 8 bytes) and
 * variable-length (xx10xxxx: u16 length). A variable-count token we do not know
 * (xx00xxxx) cannot be skipped and is an MC_EPROTO.
 *
 * Length-prefixed tokens are first checked to be fully buffered, then parsed inside their own
 * length: a field that runs past the token's end is corruption, not "need more".
 */
#include <stdio.h>

#include "tds/tds_int.h"

mc_status mc_tds_read_text(mc_tds_decoder *d, mc_rd *r, size_t nchars, size_t *offset) {
  const uint8_t *p;
  MC_RETURN_NOT_OK(mc_rd_bytes(r, nchars * 2, &p));
  size_t room = mc_tds_utf16_max_utf8(nchars * 2) + 1;
  if (mc_arrow_buffer_reserve(&d->text, room) != MC_OK) return MC_ENOMEM;
  *offset = d->text.size;
  size_t n = mc_tds_utf16_to_utf8(p, nchars * 2, d->text.data + d->text.size);
  d->text.data[d->text.size + n] = '\0';
  d->text.size += n + 1;
  return MC_OK;
}

/* Reads a B_VARCHAR (u8 count) or US_VARCHAR (u16 count) into d->text. */
static mc_status read_b_varchar(mc_tds_decoder *d, mc_rd *r, size_t *offset) {
  uint8_t n;
  MC_RETURN_NOT_OK(mc_rd_u8(r, &n));
  return mc_tds_read_text(d, r, n, offset);
}
static mc_status read_us_varchar(mc_tds_decoder *d, mc_rd *r, size_t *offset) {
  uint16_t n;
  MC_RETURN_NOT_OK(mc_rd_u16(r, &n));
  return mc_tds_read_text(d, r, n, offset);
}

static const char *text_at(const mc_tds_decoder *d, size_t offset) {
  return (const char *)d->text.data + offset;
}

/* Turns a short read inside a token of known length into corruption. */
static mc_status inside(mc_status st, uint8_t token, mc_error *err) {
  if (st == MC_NEEDMORE) {
    return MC_TDS_CORRUPT(err, "token 0x%02X is shorter than its fields", token);
  }
  if (st == MC_ENOMEM)
    return mc_error_set(err, MC_ENOMEM, "out of memory reading token 0x%02X", token);
  return st;
}

/* Checks that a token with a u16 length (after the token byte) is buffered; sets *body to
 * its contents. On MC_NEEDMORE sets *want to the token's full size. */
static mc_status length_prefixed(mc_rd *r, mc_rd *body, size_t *used, size_t *want) {
  if (mc_rd_left(r) < 3) return MC_NEEDMORE;
  uint16_t len = mc_load_u16(r->p + 1);
  if (mc_rd_left(r) < 3 + (size_t)len) {
    *want = 3 + (size_t)len;
    return MC_NEEDMORE;
  }
  body->p = r->p + 3;
  body->end = body->p + len;
  *used = 3 + (size_t)len;
  return MC_OK;
}

static mc_status parse_message(mc_tds_decoder *d, uint8_t token, mc_rd *b, mc_error *err) {
  uint32_t number, line;
  uint8_t state, severity;
  size_t msg, server, proc;
  mc_status st = mc_rd_u32(b, &number);
  if (st == MC_OK) st = mc_rd_u8(b, &state);
  if (st == MC_OK) st = mc_rd_u8(b, &severity);
  if (st == MC_OK) st = read_us_varchar(d, b, &msg);
  if (st == MC_OK) st = read_b_varchar(d, b, &server);
  if (st == MC_OK) st = read_b_varchar(d, b, &proc);
  if (st == MC_OK) st = mc_rd_u32(b, &line);
  if (st != MC_OK) return inside(st, token, err);
  d->msg.is_error = token == MC_TDS_TOKEN_ERROR;
  d->msg.number = mc_i32_from_u32(number);
  d->msg.state = state;
  d->msg.severity = severity;
  d->msg.message = text_at(d, msg);
  d->msg.server = text_at(d, server);
  d->msg.procedure = text_at(d, proc);
  d->msg.line = line;
  return MC_OK;
}

static mc_status parse_envchange(mc_tds_decoder *d, mc_rd *b, mc_error *err) {
  uint8_t type;
  mc_status st = mc_rd_u8(b, &type);
  if (st != MC_OK) return inside(st, MC_TDS_TOKEN_ENVCHANGE, err);
  memset(&d->env, 0, sizeof d->env);
  d->env.type = type;
  switch (type) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 13:
    case 19: {
      size_t nv, ov;
      st = read_b_varchar(d, b, &nv);
      if (st == MC_OK) st = read_b_varchar(d, b, &ov);
      if (st != MC_OK) return inside(st, MC_TDS_TOKEN_ENVCHANGE, err);
      d->env.new_value = text_at(d, nv);
      d->env.old_value = text_at(d, ov);
      if (type == MC_TDS_ENV_PACKET_SIZE) {
        unsigned long v = 0;
        const char *s = d->env.new_value;
        for (; *s >= '0' && *s <= '9' && v < 1000000; s++) v = v * 10 + (unsigned long)(*s - '0');
        if (*s != '\0' || v < 512 || v > 32767) {
          return MC_TDS_CORRUPT(err, "ENVCHANGE packet size \"%s\" is not 512..32767",
                                d->env.new_value);
        }
        d->env.packet_size = (uint32_t)v;
      }
      return MC_OK;
    }
    case 7:
    case 8:
    case 9:
    case 10:
    case 11:
    case 12:
    case 16:
    case 17:
    case 18: {
      uint8_t n;
      const uint8_t *p;
      st = mc_rd_u8(b, &n);
      if (st == MC_OK) st = mc_rd_bytes(b, n, &p);
      if (st != MC_OK) return inside(st, MC_TDS_TOKEN_ENVCHANGE, err);
      d->env.new_bytes = p;
      d->env.new_len = n;
      return MC_OK; /* the old value is not needed */
    }
    case MC_TDS_ENV_ROUTING: {
      uint16_t len, port;
      uint8_t protocol;
      size_t server;
      st = mc_rd_u16(b, &len);
      if (st == MC_OK && mc_rd_left(b) < len) st = MC_NEEDMORE;
      if (st == MC_OK) st = mc_rd_u8(b, &protocol);
      if (st == MC_OK) st = mc_rd_u16(b, &port);
      if (st == MC_OK) st = read_us_varchar(d, b, &server);
      if (st != MC_OK) return inside(st, MC_TDS_TOKEN_ENVCHANGE, err);
      if (protocol != 0) return MC_TDS_CORRUPT(err, "routing ENVCHANGE with protocol %u", protocol);
      d->env.routing_port = port;
      d->env.routing_server = text_at(d, server);
      return MC_OK;
    }
    default: return MC_OK; /* other types: reported with no values */
  }
}

static mc_status parse_loginack(mc_tds_decoder *d, mc_rd *b, mc_error *err) {
  uint8_t interface;
  const uint8_t *ver, *prog;
  size_t name;
  mc_status st = mc_rd_u8(b, &interface);
  if (st == MC_OK) st = mc_rd_bytes(b, 4, &ver);
  if (st == MC_OK) st = read_b_varchar(d, b, &name);
  if (st == MC_OK) st = mc_rd_bytes(b, 4, &prog);
  if (st != MC_OK) return inside(st, MC_TDS_TOKEN_LOGINACK, err);
  d->ack.interface = interface;
  /* TDSVersion is sent big-endian (0x74000004 as 74 00 00 04). */
  d->ack.tds_version =
      ((uint32_t)ver[0] << 24) | ((uint32_t)ver[1] << 16) | ((uint32_t)ver[2] << 8) | ver[3];
  d->ack.prog_name = text_at(d, name);
  d->ack.prog_version =
      ((uint32_t)prog[0] << 24) | ((uint32_t)prog[1] << 16) | ((uint32_t)prog[2] << 8) | prog[3];
  return MC_OK;
}

mc_status mc_tds_returnvalue_skip(mc_rd *r, mc_error *err) {
  uint8_t name_len;
  mc_tds_column c;
  mc_tds_cell cell;
  memset(&c, 0, sizeof c);
  MC_RETURN_NOT_OK(mc_rd_skip(r, 1 + 2)); /* token, ordinal */
  MC_RETURN_NOT_OK(mc_rd_u8(r, &name_len));
  MC_RETURN_NOT_OK(
      mc_rd_skip(r, (size_t)name_len * 2 + 1 + 4 + 2)); /* name, status, usertype, flags */
  MC_RETURN_NOT_OK(mc_tds_type_info_parse(r, &c, err));
  return mc_tds_value_measure(&c, r, &cell, err);
}

/* FEATUREEXTACK: FeatureId u8, u32 length, data ..., ended by 0xFF. No total length. */
static mc_status skip_featureextack(mc_rd *r) {
  MC_RETURN_NOT_OK(mc_rd_skip(r, 1));
  for (;;) {
    uint8_t id;
    uint32_t len;
    MC_RETURN_NOT_OK(mc_rd_u8(r, &id));
    if (id == 0xFF) return MC_OK;
    MC_RETURN_NOT_OK(mc_rd_u32(r, &len));
    MC_RETURN_NOT_OK(mc_rd_skip(r, len));
  }
}

/* Skips a token we do not decode, by its class. *used on MC_OK. */
static mc_status skip_token(mc_rd *r, size_t *used, size_t *want, mc_error *err) {
  uint8_t token = r->p[0];
  size_t left = mc_rd_left(r);
  if (token == MC_TDS_TOKEN_FEDAUTHINFO) { /* u32 length */
    if (left < 5) return MC_NEEDMORE;
    uint32_t len = mc_load_u32(r->p + 1);
    *want = 5 + (size_t)len;
    if (left < *want) return MC_NEEDMORE;
    *used = *want;
    return MC_OK;
  }
  switch (token & 0x30) {
    case 0x10: *used = 1; return MC_OK; /* zero length */
    case 0x30: {                        /* fixed length: 1, 2, 4 or 8 bytes */
      size_t n = (size_t)1 << ((token >> 2) & 3);
      if (left < 1 + n) return MC_NEEDMORE;
      *used = 1 + n;
      return MC_OK;
    }
    case 0x20: { /* variable length, u16 */
      if (left < 3) return MC_NEEDMORE;
      *want = 3 + (size_t)mc_load_u16(r->p + 1);
      if (left < *want) return MC_NEEDMORE;
      *used = *want;
      return MC_OK;
    }
    default: return MC_TDS_CORRUPT(err, "unknown token 0x%02X", token);
  }
}

/* Records a fatal status so every later call repeats it. */
static mc_status fail(mc_tds_decoder *d, mc_status st, const mc_error *e, mc_error *err) {
  d->broken = st;
  snprintf(d->broken_msg, sizeof d->broken_msg, "%s", e->message);
  return mc_error_set(err, st, "%s", d->broken_msg);
}

static bool batch_full(const mc_tds_decoder *d) {
  return d->batch.length >= d->opt.batch_rows || d->batch_wire_bytes >= d->opt.batch_bytes;
}

mc_status mc_tds_decoder_next(mc_tds_decoder *d, mc_tds_event *event, mc_error *err) {
  *event = MC_TDS_EVENT_NONE;
  if (d->broken != MC_OK) return mc_error_set(err, d->broken, "%s", d->broken_msg);
  if (d->batch_ready) {
    *event = MC_TDS_EVENT_BATCH;
    return MC_OK;
  }
  mc_error e;
  e.message[0] = '\0';
  for (;;) {
    size_t avail = d->end - d->start;
    if (avail == 0 || avail < d->want) return MC_NEEDMORE;
    d->want = 0;
    mc_rd r = {d->buf + d->start, d->buf + d->end};
    uint8_t token = r.p[0];
    size_t used = 0;
    size_t want = 0;
    mc_status st;
    mc_tds_event ev = MC_TDS_EVENT_NONE;

    bool ends_result = token == MC_TDS_TOKEN_DONE || token == MC_TDS_TOKEN_DONEPROC ||
                       token == MC_TDS_TOKEN_DONEINPROC || token == MC_TDS_TOKEN_COLMETADATA;
    if (ends_result && d->batch.length > 0) { /* hand over the rows first */
      d->batch_ready = 1;
      *event = MC_TDS_EVENT_BATCH;
      return MC_OK;
    }

    switch (token) {
      case MC_TDS_TOKEN_ROW:
      case MC_TDS_TOKEN_NBCROW: /* as many rows as are buffered and fit in the batch */
        for (;;) {
          size_t one = 0;
          st = mc_tds_row_decode(d, &r, &one, &want, &e);
          if (st != MC_OK) break;
          used += one;
          r.p += one;
          d->batch_wire_bytes += one;
          if (batch_full(d)) {
            d->batch_ready = 1;
            ev = MC_TDS_EVENT_BATCH;
            break;
          }
          if (r.p == r.end || (*r.p != MC_TDS_TOKEN_ROW && *r.p != MC_TDS_TOKEN_NBCROW)) break;
        }
        if (used > 0 && st == MC_NEEDMORE) { /* keep the rows; wait for the rest of the next */
          d->start += used;
          d->want = want;
          return MC_NEEDMORE;
        }
        if (used > 0 && st == MC_OK) break;
        if (used > 0) d->start += used; /* the rows before a bad one stay appended */
        break;
      case MC_TDS_TOKEN_COLMETADATA:
        d->text.size = 0;
        st = mc_tds_colmetadata_parse(d, &r, &used, &e);
        if (st == MC_OK && d->cols != NULL) ev = MC_TDS_EVENT_METADATA;
        break;
      case MC_TDS_TOKEN_DONE:
      case MC_TDS_TOKEN_DONEPROC:
      case MC_TDS_TOKEN_DONEINPROC:
        if (avail < 13) {
          st = MC_NEEDMORE;
          want = 13;
          break;
        }
        d->done.token = token;
        d->done.status = mc_load_u16(r.p + 1);
        d->done.cur_cmd = mc_load_u16(r.p + 3);
        d->done.row_count = mc_load_u64(r.p + 5);
        used = 13;
        st = MC_OK;
        ev = MC_TDS_EVENT_DONE;
        break;
      case MC_TDS_TOKEN_RETURNSTATUS:
        if (avail < 5) {
          st = MC_NEEDMORE;
          want = 5;
          break;
        }
        d->return_status = mc_i32_from_u32(mc_load_u32(r.p + 1));
        used = 5;
        st = MC_OK;
        ev = MC_TDS_EVENT_RETURN_STATUS;
        break;
      case MC_TDS_TOKEN_ERROR:
      case MC_TDS_TOKEN_INFO:
      case MC_TDS_TOKEN_ENVCHANGE:
      case MC_TDS_TOKEN_LOGINACK: {
        mc_rd body;
        st = length_prefixed(&r, &body, &used, &want);
        if (st != MC_OK) break;
        d->text.size = 0;
        if (token == MC_TDS_TOKEN_ENVCHANGE) {
          st = parse_envchange(d, &body, &e);
          ev = MC_TDS_EVENT_ENVCHANGE;
        } else if (token == MC_TDS_TOKEN_LOGINACK) {
          st = parse_loginack(d, &body, &e);
          ev = MC_TDS_EVENT_LOGINACK;
        } else {
          st = parse_message(d, token, &body, &e);
          ev = MC_TDS_EVENT_MESSAGE;
        }
        break;
      }
      case MC_TDS_TOKEN_RETURNVALUE:
        st = mc_tds_returnvalue_skip(&r, &e);
        used = (size_t)(r.p - (d->buf + d->start));
        break;
      case MC_TDS_TOKEN_FEATUREEXTACK:
        st = skip_featureextack(&r);
        used = (size_t)(r.p - (d->buf + d->start));
        break;
      default: st = skip_token(&r, &used, &want, &e); break;
    }

    if (st == MC_NEEDMORE) {
      d->want = want;
      return MC_NEEDMORE;
    }
    if (st != MC_OK) {
      if (st == MC_ENOMEM && e.message[0] == '\0') {
        mc_error_set(&e, MC_ENOMEM, "out of memory decoding token 0x%02X", token);
      }
      return fail(d, st, &e, err);
    }
    d->start += used;
    if (d->start == d->end) d->start = d->end = 0;
    if (ev != MC_TDS_EVENT_NONE) {
      *event = ev;
      return MC_OK;
    }
  }
}
