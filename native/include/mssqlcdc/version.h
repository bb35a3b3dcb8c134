/*
 * version.h: library version and the TLS library it was built against.
 */
#ifndef MSSQLCDC_VERSION_H
#define MSSQLCDC_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
const char *mc_version(void);

/* The OpenSSL version string of the library loaded at run time, e.g. "OpenSSL 3.0.19 ...". */
const char *mc_tls_library_version(void);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_VERSION_H */
