/*
 * native_module.h: declarations shared by the files of the mssql_cdc._native extension.
 */
#ifndef MSSQLCDC_NATIVE_MODULE_H
#define MSSQLCDC_NATIVE_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds the Lsn type to the module; 0 on success, -1 with an exception set. */
int mc_py_add_lsn_type(PyObject *module);

/* Adds connect(), Connection and Result; 0 on success, -1 with an exception set. */
int mc_py_add_conn_types(PyObject *module);

#endif /* MSSQLCDC_NATIVE_MODULE_H */
