/*
 * module.c: the mssql_cdc._native extension module: a thin CPython layer over the mssqlcdc C
 * library. One job per file: lsn_type.c (Lsn), connection.c (connect, Connection),
 * result_type.c (Result: Arrow stream and typed reads), params.c (argument conversion),
 * encode.c (encode_rows: Arrow to TDS rows, for the emulator), errors.c (status to exception,
 * through mssql_cdc.errors).
 */
#include "native_module.h"

#include "mssqlcdc/version.h"

PyObject *mc_py_type_name(PyObject *obj) {
  PyTypeObject *type = Py_TYPE(obj);
  PyObject *name = PyObject_GetAttrString((PyObject *)type, "__name__");
  if (name == NULL || (PyType_GetFlags(type) & Py_TPFLAGS_HEAPTYPE) != 0) return name;
  /* A static type's tp_name is "module.name", or "name" for a builtin. */
  PyObject *module = PyObject_GetAttrString((PyObject *)type, "__module__");
  PyObject *full = NULL;
  if (module == NULL) {
    full = NULL;
  } else if (PyUnicode_Check(module) && PyUnicode_CompareWithASCIIString(module, "builtins") != 0) {
    full = PyUnicode_FromFormat("%U.%U", module, name);
  } else {
    Py_INCREF(name);
    full = name;
  }
  Py_XDECREF(module);
  Py_DECREF(name);
  return full;
}

static PyObject *native_version(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyUnicode_FromString(mc_version());
}

static PyObject *native_tls_library_version(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyUnicode_FromString(mc_tls_library_version());
}

static PyMethodDef native_methods[] = {
    {"version", native_version, METH_NOARGS, "version() -> str: the C library's version."},
    {"tls_library_version", native_tls_library_version, METH_NOARGS,
     "tls_library_version() -> str: the OpenSSL version the C library runs with."},
    {"encode_rows", (PyCFunction)(void (*)(void))mc_py_encode_rows, METH_VARARGS | METH_KEYWORDS,
     "encode_rows(columns, batch, nbcrow=False) -> bytes: the ROW (or NBCROW) tokens of an Arrow\n"
     "record batch; columns holds one (kind, nullable, plp, utf8, size, precision, scale, width)\n"
     "per column (native/include/mssqlcdc/tds_encode.h)."},
    {NULL, NULL, 0, NULL},
};

static int native_exec(PyObject *module) {
  if (mc_py_add_errors(module) < 0 || mc_py_add_lsn_type(module) < 0 ||
      mc_py_add_result_type(module) < 0) {
    return -1;
  }
  return mc_py_add_conn_types(module);
}

static PyModuleDef_Slot native_slots[] = {
    {Py_mod_exec, (void *)native_exec},
    {0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "mssql_cdc._native",
    "Native core of mssql-cdc: the C library's Python binding.",
    0,
    native_methods,
    native_slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__native(void);

PyMODINIT_FUNC PyInit__native(void) { return PyModuleDef_Init(&native_module); }
