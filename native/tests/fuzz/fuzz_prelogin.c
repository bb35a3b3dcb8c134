/*
 * fuzz_prelogin.c: libFuzzer target for mc_prelogin_parse (a server's PRELOGIN reply) and the
 * encryption decision that follows it: no over-read, every failure explained.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mssqlcdc/prelogin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mc_prelogin_reply r;
  mc_error err;
  err.message[0] = '\0';
  if (mc_prelogin_parse(data, size, &r, &err) != MC_OK) {
    if (err.message[0] == '\0') abort();
    return 0;
  }
  for (int mode = MC_ENCRYPT_OPTIONAL; mode <= MC_ENCRYPT_STRICT; mode++) {
    mc_tls_plan plan;
    err.message[0] = '\0';
    if (mc_prelogin_plan((mc_encrypt)mode, r.encryption, &plan, &err) != MC_OK &&
        err.message[0] == '\0') {
      abort();
    }
  }
  return 0;
}
