/*
 * params.c: Python arguments to the C client's types: the parameters of a request
 * (None, bool, int, float, str, bytes-like, Lsn -> mc_param), optional credential strings and
 * timeouts. Messages name the argument and its type, never its value (it may be a secret).
 */
#include "conn_type.h"

int mc_py_optional_str(PyObject *obj, const char *name, const char **out) {
  *out = NULL;
  if (obj == NULL || obj == Py_None) return 0;
  if (!PyUnicode_Check(obj)) {
    PyObject *tn = mc_py_type_name(obj);
    if (tn != NULL) PyErr_Format(PyExc_TypeError, "%s must be a str or None, not %.100U", name, tn);
    Py_XDECREF(tn);
    return -1;
  }
  *out = PyUnicode_AsUTF8AndSize(obj, NULL);
  if (*out == NULL) {
    /* The UnicodeEncodeError would carry the whole string (a secret): replace it. */
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s is not valid Unicode text (it holds a lone surrogate)",
                 name);
    return -1;
  }
  return 0;
}

/* A timeout argument: None, or a finite number of seconds >= 0. */
int mc_py_timeout_arg(PyObject *obj, const char *name, double *out) {
  if (obj == Py_None) return 0;
  double t = PyFloat_AsDouble(obj);
  if (t == -1.0 && PyErr_Occurred()) return -1;
  if (!(t >= 0.0) || t > 1e9) { /* also NaN and infinity */
    PyErr_Format(PyExc_ValueError, "%s must be a finite number of seconds >= 0, got %R", name, obj);
    return -1;
  }
  *out = t;
  return 1;
}

/* Converts a Python sequence of parameters; *out is PyMem-allocated, *keep holds the objects
 * whose buffers the params point into. */
int mc_py_convert_params(PyObject *seq, mc_param **out, Py_ssize_t *n, PyObject **keep) {
  *out = NULL;
  *n = 0;
  *keep = NULL;
  if (seq == NULL || seq == Py_None) return 0;
  PyObject *fast = PySequence_Fast(seq, "params must be a sequence (list or tuple)");
  if (fast == NULL) return -1;
  Py_ssize_t count = PySequence_Size(fast);
  mc_param *p = PyMem_Calloc(count > 0 ? (size_t)count : 1, sizeof *p);
  PyObject *keep_list = PyList_New(0);
  if (p == NULL || keep_list == NULL) goto fail;
  for (Py_ssize_t i = 0; i < count; i++) {
    /* PySequence_Fast gives a list or a tuple; borrowed references. */
    PyObject *v = PyList_Check(fast) ? PyList_GetItem(fast, i) : PyTuple_GetItem(fast, i);
    if (v == NULL) goto fail;
    if (v == Py_None) {
      p[i].type = MC_PARAM_NULL;
    } else if (PyBool_Check(v)) {
      p[i].type = MC_PARAM_BOOL;
      p[i].i64 = v == Py_True;
    } else if (PyLong_Check(v)) {
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
      if (overflow != 0) {
        PyErr_Format(PyExc_OverflowError, "parameter %zd does not fit in bigint", i + 1);
        goto fail;
      }
      p[i].type = MC_PARAM_INT64;
      p[i].i64 = x;
    } else if (PyFloat_Check(v)) {
      p[i].type = MC_PARAM_FLOAT64;
      p[i].f64 = PyFloat_AsDouble(v);
    } else if (PyUnicode_Check(v)) {
      Py_ssize_t len = 0;
      const char *s = PyUnicode_AsUTF8AndSize(v, &len);
      if (s == NULL) goto fail;
      p[i].type = MC_PARAM_TEXT;
      p[i].bytes = (const uint8_t *)s;
      p[i].len = (size_t)len;
    } else {
      PyObject *raw = NULL;
      if (PyBytes_Check(v)) {
        raw = v;
        Py_INCREF(raw);
      } else if (PyByteArray_Check(v) || PyMemoryView_Check(v) ||
                 PyObject_HasAttrString(v, "__bytes__")) {
        raw = PyObject_Bytes(v);
      }
      if (raw == NULL) {
        PyObject *tn = PyErr_Occurred() ? NULL : mc_py_type_name(v);
        if (tn != NULL) {
          PyErr_Format(PyExc_TypeError,
                       "parameter %zd has type %.100U; supported: None, bool, int, float, str, "
                       "bytes (an Lsn passes as binary(10))",
                       i + 1, tn);
          Py_DECREF(tn);
        }
        goto fail;
      }
      if (PyList_Append(keep_list, raw) < 0) {
        Py_DECREF(raw);
        goto fail;
      }
      Py_DECREF(raw);
      p[i].type = MC_PARAM_BINARY;
      char *raw_bytes = NULL;
      Py_ssize_t raw_len = 0;
      if (PyBytes_AsStringAndSize(raw, &raw_bytes, &raw_len) < 0) goto fail;
      p[i].bytes = (const uint8_t *)raw_bytes;
      p[i].len = (size_t)raw_len;
    }
  }
  if (PyList_Append(keep_list, fast) < 0) goto fail; /* keeps the str objects alive */
  Py_DECREF(fast);
  *out = p;
  *n = count;
  *keep = keep_list;
  return 0;
fail:
  Py_DECREF(fast);
  Py_XDECREF(keep_list);
  PyMem_Free(p);
  return -1;
}
