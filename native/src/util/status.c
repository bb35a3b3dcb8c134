/*
 * status.c: the single place that writes mc_error (status.h): a formatted sentence, and for an
 * ERROR token from the server its fields as data.
 */
#include "mssqlcdc/status.h"

#include <stdarg.h>
#include <stdio.h>

mc_status mc_error_set(mc_error *err, mc_status status, const char *fmt, ...) {
  if (err != NULL) {
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(err->message, sizeof err->message, fmt, args);
    va_end(args);
    if (n < 0) {
      err->message[0] = '\0';
    }
    err->has_server = false;
  }
  return status;
}

mc_status mc_error_set_server(mc_error *err, mc_status status, int32_t number, uint8_t state,
                              uint8_t severity, const char *message, const char *server,
                              const char *procedure, uint32_t line) {
  if (err == NULL) return status;
  const char *text = message != NULL ? message : "";
  const char *proc = procedure != NULL ? procedure : "";
  const char *lead = status == MC_ELOGIN ? "login failed: " : "";
  if (proc[0] != '\0') {
    mc_error_set(err, status, "%s[%d] %s (procedure %s, line %u)", lead, (int)number, text, proc,
                 (unsigned)line);
  } else {
    mc_error_set(err, status, "%s[%d] %s", lead, (int)number, text);
  }
  mc_server_error *s = &err->server;
  s->number = number;
  s->state = state;
  s->severity = severity;
  s->line = line;
  snprintf(s->message, sizeof s->message, "%s", text);
  snprintf(s->server, sizeof s->server, "%s", server != NULL ? server : "");
  snprintf(s->procedure, sizeof s->procedure, "%s", proc);
  err->has_server = true;
  return status;
}

const char *mc_status_name(mc_status status) {
  switch (status) {
    case MC_OK: return "OK";
    case MC_EINVAL: return "EINVAL";
    case MC_ERANGE: return "ERANGE";
    case MC_ENOMEM: return "ENOMEM";
    case MC_EPROTO: return "EPROTO";
    case MC_NEEDMORE: return "NEEDMORE";
    case MC_EIO: return "EIO";
    case MC_ETIMEOUT: return "ETIMEOUT";
    case MC_ESERVER: return "ESERVER";
    case MC_ETLS: return "ETLS";
    case MC_ECLOSED: return "ECLOSED";
    case MC_EUNSUPPORTED: return "EUNSUPPORTED";
    case MC_ELOGIN: return "ELOGIN";
    case MC_STATUS_COUNT: break;
  }
  return "UNKNOWN";
}
