/*
 * connstr.c: the ODBC connection-string parser (connstr.h).
 *
 * Grammar (ODBC "SQLDriverConnect" connection strings): attribute pairs separated by ';';
 * "key=value"; a value that starts with '{' runs to the '}' that is not doubled, "}}" inside
 * standing for '}', and only spaces may follow it before the next ';'. Keys are matched ignoring
 * ASCII case and surrounding spaces; an unbraced value is trimmed of spaces.
 */
#include "mssqlcdc/connstr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* A view into the input, or into the unescape buffer for braced values. */
typedef struct {
  const char *ptr;
  size_t len;
} span;

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static span trim(span s) {
  while (s.len > 0 && is_space(s.ptr[0])) {
    s.ptr++;
    s.len--;
  }
  while (s.len > 0 && is_space(s.ptr[s.len - 1])) s.len--;
  return s;
}

static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

/* Case-insensitive equality of a span and a NUL-terminated lower-case word. */
static bool span_is(span s, const char *word) {
  size_t n = strlen(word);
  if (s.len != n) return false;
  for (size_t i = 0; i < n; i++) {
    if (lower(s.ptr[i]) != word[i]) return false;
  }
  return true;
}

/* Copies s into dst (size dst_size, NUL-terminated) or fails naming the keyword. */
static mc_status copy_value(char *dst, size_t dst_size, span s, const char *keyword,
                            mc_error *err) {
  if (s.len >= dst_size) {
    return mc_error_set(err, MC_EINVAL,
                        "connection string: %s is %zu bytes long; at most %zu are allowed", keyword,
                        s.len, dst_size - 1);
  }
  if (memchr(s.ptr, '\0', s.len) != NULL) {
    return mc_error_set(err, MC_EINVAL, "connection string: %s holds a NUL character", keyword);
  }
  memcpy(dst, s.ptr, s.len);
  dst[s.len] = '\0';
  return MC_OK;
}

/* Quotes a non-secret value in an error message, bounded. */
static mc_status bad_value(mc_error *err, const char *keyword, span value, const char *allowed) {
  int shown = value.len > 40 ? 40 : (int)value.len;
  return mc_error_set(err, MC_EINVAL, "connection string: %s=%.*s%s is not valid; allowed: %s",
                      keyword, shown, value.ptr, value.len > 40 ? "..." : "", allowed);
}

static mc_status parse_bool(span value, const char *keyword, bool *out, mc_error *err) {
  if (span_is(value, "yes") || span_is(value, "true") || span_is(value, "1")) {
    *out = true;
    return MC_OK;
  }
  if (span_is(value, "no") || span_is(value, "false") || span_is(value, "0")) {
    *out = false;
    return MC_OK;
  }
  return bad_value(err, keyword, value, "yes, no, true, false, 1, 0");
}

/* Parses an unsigned decimal integer in [lo, hi]. */
static mc_status parse_uint(span value, const char *keyword, unsigned long lo, unsigned long hi,
                            unsigned long *out, mc_error *err) {
  char allowed[64];
  snprintf(allowed, sizeof allowed, "an integer from %lu to %lu", lo, hi);
  if (value.len == 0 || value.len > 10) return bad_value(err, keyword, value, allowed);
  unsigned long v = 0;
  for (size_t i = 0; i < value.len; i++) {
    char c = value.ptr[i];
    if (c < '0' || c > '9') return bad_value(err, keyword, value, allowed);
    v = v * 10 + (unsigned long)(c - '0');
  }
  if (v < lo || v > hi) return bad_value(err, keyword, value, allowed);
  *out = v;
  return MC_OK;
}

/* Server=[tcp:]host[,port]; host may be [ipv6]; "host\instance" needs SQL Browser (UDP 1434),
 * which this client does not speak, so it is refused with the fix. */
static mc_status parse_server(mc_conn_params *p, span value, mc_error *err) {
  span s = value;
  if (s.len >= 4 && span_is((span){s.ptr, 4}, "tcp:")) {
    s.ptr += 4;
    s.len -= 4;
  }
  span host = s;
  span port = {NULL, 0};
  const char *comma = memchr(s.ptr, ',', s.len);
  if (comma != NULL) {
    host.len = (size_t)(comma - s.ptr);
    port.ptr = comma + 1;
    port.len = s.len - host.len - 1;
  }
  host = trim(host);
  if (host.len >= 2 && host.ptr[0] == '[' && host.ptr[host.len - 1] == ']') {
    host.ptr++;
    host.len -= 2;
  }
  if (host.len == 0) return bad_value(err, "Server", value, "host or host,port");
  if (memchr(host.ptr, '\\', host.len) != NULL) {
    return mc_error_set(err, MC_EINVAL,
                        "connection string: Server names an instance (host\\instance); "
                        "give its TCP port instead: Server=host,port");
  }
  if (span_is(host, ".") || span_is(host, "(local)")) host = (span){"localhost", 9};
  if (port.ptr != NULL) {
    unsigned long v = 0;
    MC_RETURN_NOT_OK(parse_uint(trim(port), "Server port", 1, 65535, &v, err));
    p->port = (uint16_t)v;
  }
  return copy_value(p->host, sizeof p->host, host, "Server", err);
}

static void note_unknown(mc_conn_params *p, span key) {
  size_t used = strlen(p->unknown_keys);
  size_t need = key.len + (used > 0 ? 2 : 0);
  if (used + need + 1 > sizeof p->unknown_keys) return; /* the warning lists the first ones */
  if (used > 0) {
    memcpy(p->unknown_keys + used, ", ", 2);
    used += 2;
  }
  memcpy(p->unknown_keys + used, key.ptr, key.len);
  p->unknown_keys[used + key.len] = '\0';
}

static mc_status apply(mc_conn_params *p, span key, span value, mc_error *err) {
  if (span_is(key, "server") || span_is(key, "address") || span_is(key, "addr") ||
      span_is(key, "data source")) {
    return parse_server(p, value, err);
  }
  if (span_is(key, "database") || span_is(key, "initial catalog")) {
    return copy_value(p->database, sizeof p->database, value, "Database", err);
  }
  if (span_is(key, "uid") || span_is(key, "user id") || span_is(key, "user")) {
    p->has_user = true;
    return copy_value(p->user, sizeof p->user, value, "UID", err);
  }
  if (span_is(key, "pwd") || span_is(key, "password")) {
    p->has_password = true;
    return copy_value(p->password, sizeof p->password, value, "PWD", err);
  }
  if (span_is(key, "encrypt")) {
    if (span_is(value, "yes") || span_is(value, "true") || span_is(value, "mandatory") ||
        span_is(value, "1")) {
      p->encrypt = MC_ENCRYPT_MANDATORY;
    } else if (span_is(value, "no") || span_is(value, "false") || span_is(value, "optional") ||
               span_is(value, "0")) {
      p->encrypt = MC_ENCRYPT_OPTIONAL;
    } else if (span_is(value, "strict")) {
      p->encrypt = MC_ENCRYPT_STRICT;
    } else {
      return bad_value(err, "Encrypt", value, "yes, no, mandatory, optional, strict");
    }
    return MC_OK;
  }
  if (span_is(key, "trustservercertificate")) {
    return parse_bool(value, "TrustServerCertificate", &p->trust_server_certificate, err);
  }
  if (span_is(key, "hostnameincertificate")) {
    return copy_value(p->host_name_in_certificate, sizeof p->host_name_in_certificate, value,
                      "HostNameInCertificate", err);
  }
  if (span_is(key, "connection timeout") || span_is(key, "connect timeout") ||
      span_is(key, "logintimeout") || span_is(key, "timeout")) {
    unsigned long v = 0;
    MC_RETURN_NOT_OK(parse_uint(value, "Connection Timeout", 0, 86400, &v, err));
    p->login_timeout_seconds = (double)v;
    return MC_OK;
  }
  if (span_is(key, "packet size")) {
    unsigned long v = 0;
    MC_RETURN_NOT_OK(parse_uint(value, "Packet Size", 512, 32767, &v, err));
    p->packet_size = (uint32_t)v;
    return MC_OK;
  }
  if (span_is(key, "application name") || span_is(key, "app")) {
    return copy_value(p->application_name, sizeof p->application_name, value, "Application Name",
                      err);
  }
  if (span_is(key, "applicationintent")) {
    if (span_is(value, "readonly")) {
      p->read_only_intent = true;
    } else if (span_is(value, "readwrite")) {
      p->read_only_intent = false;
    } else {
      return bad_value(err, "ApplicationIntent", value, "ReadOnly, ReadWrite");
    }
    return MC_OK;
  }
  if (span_is(key, "driver") || span_is(key, "dsn")) return MC_OK; /* ODBC plumbing; harmless */
  note_unknown(p, key);
  return MC_OK;
}

void mc_conn_params_init(mc_conn_params *params) {
  memset(params, 0, sizeof *params);
  params->port = 1433;
  params->encrypt = MC_ENCRYPT_MANDATORY;
  params->login_timeout_seconds = 30.0;
  params->packet_size = 32767;
  memcpy(params->application_name, "mssql-cdc", sizeof "mssql-cdc");
}

void mc_conn_params_clear(mc_conn_params *params) { OPENSSL_cleanse(params, sizeof *params); }

mc_status mc_conn_params_parse(mc_conn_params *params, const char *text, size_t len,
                               mc_error *err) {
  /* Braced values are unescaped into this buffer; it may hold a password, so it is wiped. */
  char *scratch = malloc(len + 1);
  if (scratch == NULL) return mc_error_set(err, MC_ENOMEM, "out of memory");
  mc_status st = MC_OK;
  size_t i = 0;
  while (i < len && st == MC_OK) {
    size_t key_start = i;
    while (i < len && text[i] != '=' && text[i] != ';') i++;
    span key = trim((span){text + key_start, i - key_start});
    if (i == len || text[i] == ';') {
      if (key.len != 0) {
        /* The text is not quoted: it may be the tail of a password cut at an unbraced ';'. */
        st = mc_error_set(err, MC_EINVAL,
                          "connection string: the attribute at offset %zu has no '=' (expected "
                          "key=value pairs separated by ';'; a value holding ';' goes in braces, "
                          "e.g. PWD={a;b})",
                          key_start);
      }
      i++;
      continue;
    }
    i++; /* '=' */
    while (i < len && is_space(text[i])) i++;
    span value;
    if (i < len && text[i] == '{') {
      size_t n = 0;
      bool closed = false;
      for (i++; i < len; i++) {
        if (text[i] == '}') {
          if (i + 1 < len && text[i + 1] == '}') {
            scratch[n++] = '}';
            i++;
            continue;
          }
          closed = true;
          i++;
          break;
        }
        scratch[n++] = text[i];
      }
      if (!closed) {
        st = mc_error_set(err, MC_EINVAL,
                          "connection string: the braced value of '%.*s' has no closing '}'",
                          key.len > 40 ? 40 : (int)key.len, key.ptr);
        break;
      }
      while (i < len && is_space(text[i])) i++;
      if (i < len && text[i] != ';') {
        st = mc_error_set(err, MC_EINVAL,
                          "connection string: unexpected text after the braced value of '%.*s' "
                          "(write '}' inside braces as '}}')",
                          key.len > 40 ? 40 : (int)key.len, key.ptr);
        break;
      }
      value = (span){scratch, n};
    } else {
      size_t value_start = i;
      while (i < len && text[i] != ';') i++;
      value = trim((span){text + value_start, i - value_start});
    }
    i++; /* ';' or end */
    if (key.len == 0) {
      st = mc_error_set(err, MC_EINVAL, "connection string: a value has no key before its '='");
      break;
    }
    st = apply(params, key, value, err);
  }
  OPENSSL_cleanse(scratch, len + 1);
  free(scratch);
  return st;
}
