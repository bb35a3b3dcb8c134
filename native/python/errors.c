/*
 * errors.c: failed calls of the C library become Python exceptions here, and only here.
 *
 * The status's name (mc_status_name) and the error go to mssql_cdc.errors.from_status, whose
 * STATUS_CLASSES is the one map from status to class; the server's ERROR token travels as
 * keyword arguments (number, state, severity, server, procedure, line), never parsed from text.
 * The module's STATUS_NAMES lists every status the C library has, for the test that each one is
 * mapped.
 */
#include <string.h>

#include "native_module.h"

static PyObject *from_status; /* mssql_cdc.errors.from_status, a reference held for good */

int mc_py_add_errors(PyObject *module) {
  PyObject *errors = PyImport_ImportModule("mssql_cdc.errors");
  if (errors == NULL) return -1;
  from_status = PyObject_GetAttrString(errors, "from_status");
  Py_DECREF(errors);
  if (from_status == NULL) return -1;
  PyObject *names = PyTuple_New(MC_STATUS_COUNT);
  if (names == NULL) return -1;
  for (int i = 0; i < MC_STATUS_COUNT; i++) {
    PyObject *name = PyUnicode_FromString(mc_status_name((mc_status)i));
    if (name == NULL || PyTuple_SetItem(names, i, name) < 0) {
      Py_DECREF(names);
      return -1;
    }
  }
  if (PyModule_AddObject(module, "STATUS_NAMES", names) < 0) { /* steals only on success */
    Py_DECREF(names);
    return -1;
  }
  return 0;
}

/* Sets the exception from_status builds for (status, message, fields). */
static PyObject *raise_with(mc_status st, PyObject *message, const mc_server_error *server) {
  PyObject *args = Py_BuildValue("(sO)", mc_status_name(st), message);
  PyObject *kwargs = NULL;
  if (server != NULL) {
    kwargs = Py_BuildValue("{s:i,s:i,s:i,s:s,s:s,s:I}", "number", (int)server->number, "state",
                           (int)server->state, "severity", (int)server->severity, "server",
                           server->server, "procedure", server->procedure, "line",
                           (unsigned)server->line);
  }
  PyObject *exc = NULL;
  if (args != NULL && (server == NULL || kwargs != NULL)) {
    exc = PyObject_Call(from_status, args, kwargs);
  }
  Py_XDECREF(args);
  Py_XDECREF(kwargs);
  if (exc != NULL) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

PyObject *mc_py_raise_message(mc_status st, PyObject *message) {
  if (message == NULL) return NULL;
  return raise_with(st, message, NULL);
}

PyObject *mc_py_raise(mc_status st, const mc_error *err) {
  /* Only a server's refusal carries its fields (status.h); has_server is read for no other. */
  bool from_server = st == MC_ESERVER || st == MC_ELOGIN;
  const mc_server_error *server = from_server && err->has_server ? &err->server : NULL;
  /* A server error's message is the server's own text; the fields say the rest. */
  PyObject *message =
      PyUnicode_DecodeUTF8(server ? server->message : err->message,
                           (Py_ssize_t)strlen(server ? server->message : err->message), "replace");
  if (message == NULL) return NULL;
  raise_with(st, message, server);
  Py_DECREF(message);
  return NULL;
}
