/*
 * version.c: version strings (version.h).
 */
#include "mssqlcdc/version.h"

#include <openssl/crypto.h>

#ifndef MSSQLCDC_VERSION_STRING
#define MSSQLCDC_VERSION_STRING "0.0.0"
#endif

const char *mc_version(void) { return MSSQLCDC_VERSION_STRING; }

const char *mc_tls_library_version(void) { return OpenSSL_version(OPENSSL_VERSION); }
