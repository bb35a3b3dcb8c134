/*
 * conn_type.h (private): what the files of the connection binding share: the Connection
 * object (connection.c), the Result type that reads its rows (result_type.c) and the argument
 * conversions (params.c).
 */
#ifndef MSSQLCDC_CONN_TYPE_H
#define MSSQLCDC_CONN_TYPE_H

#include "mssqlcdc/conn.h"
#include "native_module.h"

typedef struct {
  PyObject_HEAD mc_conn *conn;
  PyThread_type_lock lock; /* serialises every use of conn across threads */
  double query_timeout;
  size_t max_buffer;   /* 0 = the C default */
  uint64_t generation; /* bumped by every execute: older results are superseded */
} ConnectionObject;

/* ValueError "the connection is closed" and -1 if it is; 0 if open. */
int mc_py_check_open(ConnectionObject *self);

/* A new Result over owner's open request (a new reference), or NULL with an exception set. */
PyObject *mc_py_result_new(ConnectionObject *owner, int has_rows, int64_t rows_affected);

/* The capsule destructor of an "arrow_array_stream" capsule: releases and frees the stream. */
void mc_py_stream_capsule_destructor(PyObject *capsule);

/* The attribute name of the pyarrow module ("RecordBatchReader", "Schema", ...): a borrowed
 * reference the module keeps alive, or NULL with an exception set. */
PyObject *mc_py_pyarrow_attr(const char *name);

/* params.c */

/* *out = obj's UTF-8 (borrowed from obj) or NULL for None/absent; -1 with TypeError or
 * ValueError naming `name` (never the value: it may be a secret). */
int mc_py_optional_str(PyObject *obj, const char *name, const char **out);

/* A timeout argument: 0 for None, 1 with *out set for a finite number of seconds >= 0, -1 with
 * ValueError otherwise. */
int mc_py_timeout_arg(PyObject *obj, const char *name, double *out);

/* Converts a Python sequence of parameters: *out is PyMem-allocated (PyMem_Free it), *keep
 * holds the objects whose buffers the params point into (Py_XDECREF it after the request).
 * 0, or -1 with an exception set. */
int mc_py_convert_params(PyObject *seq, mc_param **out, Py_ssize_t *n, PyObject **keep);

#endif /* MSSQLCDC_CONN_TYPE_H */
