/*
 * native_module.h: declarations shared by the files of the mssql_cdc._native extension.
 */
#ifndef MSSQLCDC_NATIVE_MODULE_H
#define MSSQLCDC_NATIVE_MODULE_H

/* The extension is built for the stable ABI (abi3) of CPython 3.10 and later: one wheel for
 * every CPython >= 3.10. The build defines Py_LIMITED_API (native/python/CMakeLists.txt); only
 * the limited C API may be used here (no static types, no Py_buffer, no struct fields). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "mssqlcdc/status.h"

/* The name of obj's type for error messages, as the full API's tp_name gives it ("int",
 * "datetime.date"; __name__ for a heap type): a new reference, or NULL with an exception set. */
PyObject *mc_py_type_name(PyObject *obj);

/* Adds the Lsn type to the module; 0 on success, -1 with an exception set. */
int mc_py_add_lsn_type(PyObject *module);

/* Adds connect() and Connection (connection.c); 0 on success, -1 with an exception set. */
int mc_py_add_conn_types(PyObject *module);

/* encode_rows(columns, batch, nbcrow=False) -> bytes (encode.c). */
PyObject *mc_py_encode_rows(PyObject *self, PyObject *args, PyObject *kwargs);

/* Adds Result (result_type.c); 0 on success, -1 with an exception set. */
int mc_py_add_result_type(PyObject *module);

/* Looks up mssql_cdc.errors.from_status and adds STATUS_NAMES (errors.c); called first. */
int mc_py_add_errors(PyObject *module);

/* Raises the mssql_cdc.errors class of st (the one map, errors.c) with err's message, or for a
 * server error with the server's text and fields. Returns NULL. */
PyObject *mc_py_raise(mc_status st, const mc_error *err);

/* As mc_py_raise with a message of the caller's (a str; a borrowed reference; NULL passes an
 * exception already set through). Returns NULL. */
PyObject *mc_py_raise_message(mc_status st, PyObject *message);

#endif /* MSSQLCDC_NATIVE_MODULE_H */
