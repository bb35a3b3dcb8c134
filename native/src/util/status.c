/*
 * status.c: the single place that writes mc_error messages (status.h).
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
  }
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
  }
  return "UNKNOWN";
}
