/*
 * connection.c: mssql_cdc._native.connect() and the Connection type: the CPython face of the C
 * TDS client's connection (conn.h).
 *
 * The GIL is released while connecting and while a request waits for the server. A lock per
 * connection serialises its use across threads; execute() bumps a generation so an older
 * Result knows it was superseded. Rows are read through Result (result_type.c), arguments are
 * converted by params.c and every failure is raised by errors.c; messages never hold the
 * password or the access token.
 */
#include <stdlib.h>

#include "conn_type.h"

/* Heap type (PyType_FromSpec, the stable ABI), made once by mc_py_add_conn_types. */
static PyTypeObject *ConnectionType;

static PyObject *native_connect(PyObject *module, PyObject *args, PyObject *kwargs) {
  (void)module;
  static char *kwlist[] = {"connection_string", "user",          "password",   "access_token",
                           "login_timeout",     "query_timeout", "max_buffer", NULL};
  PyObject *text_obj = NULL;
  PyObject *user = NULL, *password = NULL, *token = NULL, *login_timeout = Py_None,
           *query_timeout = Py_None;
  long long max_buffer = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|$OOOOOL:connect", kwlist, &text_obj, &user,
                                   &password, &token, &login_timeout, &query_timeout,
                                   &max_buffer)) {
    return NULL;
  }
  if (max_buffer < 0) {
    PyErr_SetString(PyExc_ValueError, "max_buffer must be 0 (the default, 1 GiB) or positive");
    return NULL;
  }
  Py_ssize_t text_len = 0;
  const char *text = PyUnicode_AsUTF8AndSize(text_obj, &text_len);
  if (text == NULL) {
    PyErr_Clear(); /* the UnicodeEncodeError would hold the string, password included */
    PyErr_SetString(PyExc_ValueError,
                    "connection_string is not valid Unicode text (it holds a lone surrogate)");
    return NULL;
  }
  mc_conn_params params;
  mc_conn_params_init(&params);
  mc_error err;
  mc_status st = mc_conn_params_parse(&params, text, (size_t)text_len, &err);
  if (st != MC_OK) {
    mc_conn_params_clear(&params);
    return mc_py_raise(st, &err);
  }
  if (params.unknown_keys[0] != '\0') {
    int rc;
    if (params.has_password) {
      /* An unbraced ';' in a password makes its tail look like a keyword: never show names
       * when the string holds a password. */
      rc = PyErr_WarnEx(PyExc_UserWarning,
                        "connection string: unknown keywords ignored (names not shown because "
                        "the string holds a password; a value holding ';' goes in braces)",
                        1);
    } else {
      rc = PyErr_WarnFormat(PyExc_UserWarning, 1, "connection string: unknown keywords ignored: %s",
                            params.unknown_keys);
    }
    if (rc < 0) {
      mc_conn_params_clear(&params);
      return NULL;
    }
  }
  mc_conn_auth auth = {0};
  if (mc_py_optional_str(user, "user", &auth.user) < 0 ||
      mc_py_optional_str(password, "password", &auth.password) < 0 ||
      mc_py_optional_str(token, "access_token", &auth.access_token) < 0) {
    mc_conn_params_clear(&params);
    return NULL;
  }
  double lt = 0, qt = 0;
  int has_lt = mc_py_timeout_arg(login_timeout, "login_timeout", &lt);
  if (has_lt < 0 || mc_py_timeout_arg(query_timeout, "query_timeout", &qt) < 0) {
    mc_conn_params_clear(&params);
    return NULL;
  }
  if (has_lt) params.login_timeout_seconds = lt;
  params.max_buffer = (size_t)max_buffer;
  mc_conn *conn = NULL;
  Py_BEGIN_ALLOW_THREADS st = mc_conn_open(&params, &auth, &conn, &err);
  Py_END_ALLOW_THREADS mc_conn_params_clear(&params);
  if (st != MC_OK) return mc_py_raise(st, &err); /* a refused login is MC_ELOGIN, with fields */
  ConnectionObject *self = PyObject_New(ConnectionObject, ConnectionType);
  if (self == NULL) {
    mc_conn_close(conn);
    return NULL;
  }
  self->conn = NULL;
  self->lock = PyThread_allocate_lock();
  if (self->lock == NULL) {
    mc_conn_close(conn);
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  self->conn = conn;
  self->query_timeout = qt;
  self->max_buffer = (size_t)max_buffer;
  self->generation = 0;
  return (PyObject *)self;
}

int mc_py_check_open(ConnectionObject *self) {
  if (self->conn == NULL) {
    PyErr_SetString(PyExc_ValueError, "the connection is closed");
    return -1;
  }
  return 0;
}

static PyObject *Connection_execute(ConnectionObject *self, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"sql", "params", "batch_rows", "batch_bytes", NULL};
  const char *sql = NULL;
  Py_ssize_t sql_len = 0;
  PyObject *params_obj = Py_None;
  long long batch_rows = 65536, batch_bytes = 64ll << 20;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s#|O$LL:execute", kwlist, &sql, &sql_len,
                                   &params_obj, &batch_rows, &batch_bytes)) {
    return NULL;
  }
  if (mc_py_check_open(self) < 0) return NULL;
  if (batch_rows < 1 || batch_bytes < 1) {
    return PyErr_Format(PyExc_ValueError, "batch_rows and batch_bytes must be at least 1");
  }
  mc_param *params = NULL;
  Py_ssize_t nparams = 0;
  PyObject *keep = NULL;
  if (mc_py_convert_params(params_obj, &params, &nparams, &keep) < 0) return NULL;
  mc_exec_options opts = {batch_rows, (size_t)batch_bytes, self->query_timeout, self->max_buffer};
  mc_error err;
  mc_status st = MC_OK;
  self->generation++;
  int closed = 0, has_rows = 0;
  int64_t affected = -1;
  Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(self->lock, WAIT_LOCK);
  if (self->conn == NULL) {
    closed = 1;
  } else {
    st = mc_conn_execute(self->conn, sql, (size_t)sql_len, params, (size_t)nparams, &opts, &err);
    has_rows = mc_conn_has_result(self->conn);
    affected = mc_conn_rows_affected(self->conn);
  }
  PyThread_release_lock(self->lock);
  Py_END_ALLOW_THREADS PyMem_Free(params);
  Py_XDECREF(keep);
  if (closed) {
    mc_py_check_open(self);
    return NULL;
  }
  if (st != MC_OK) return mc_py_raise(st, &err);
  return mc_py_result_new(self, has_rows, affected);
}

static PyObject *Connection_cancel(ConnectionObject *self, PyObject *unused) {
  (void)unused;
  if (mc_py_check_open(self) < 0) return NULL;
  mc_error err;
  mc_status st = MC_OK;
  int closed = 0;
  Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(self->lock, WAIT_LOCK);
  if (self->conn == NULL) {
    closed = 1;
  } else {
    st = mc_conn_cancel(self->conn, &err);
  }
  PyThread_release_lock(self->lock);
  Py_END_ALLOW_THREADS if (closed) {
    mc_py_check_open(self);
    return NULL;
  }
  if (st != MC_OK) return mc_py_raise(st, &err);
  self->generation++;
  Py_RETURN_NONE;
}

static PyObject *Connection_close(ConnectionObject *self, PyObject *unused) {
  (void)unused;
  if (self->conn == NULL || self->lock == NULL) Py_RETURN_NONE;
  if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
    /* Another thread is in a request: make its read return, then wait for it to let go. */
    mc_conn_interrupt(self->conn);
    Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
  }
  mc_conn *conn = self->conn; /* NULL if another close() won the race */
  self->conn = NULL;
  self->generation++;
  PyThread_release_lock(self->lock);
  Py_BEGIN_ALLOW_THREADS mc_conn_close(conn);
  Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

static PyObject *Connection_enter(PyObject *self, PyObject *unused) {
  (void)unused;
  Py_INCREF(self);
  return self;
}

static PyObject *Connection_exit(ConnectionObject *self, PyObject *args) {
  (void)args;
  return Connection_close(self, NULL);
}

static PyObject *Connection_stats(ConnectionObject *self, PyObject *unused) {
  (void)unused;
  if (mc_py_check_open(self) < 0) return NULL;
  mc_conn_stats s;
  int closed = 0;
  Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(self->lock, WAIT_LOCK);
  if (self->conn == NULL) {
    closed = 1;
  } else {
    mc_conn_stats_get(self->conn, &s);
  }
  PyThread_release_lock(self->lock);
  Py_END_ALLOW_THREADS if (closed) {
    mc_py_check_open(self);
    return NULL;
  }
  return Py_BuildValue(
      "{s:K,s:K,s:K,s:K,s:d,s:d}", "bytes_received", (unsigned long long)s.bytes_received,
      "bytes_sent", (unsigned long long)s.bytes_sent, "packets",
      (unsigned long long)s.packets_received, "round_trips", (unsigned long long)s.round_trips,
      "network_wait_seconds", s.network_wait_seconds, "decode_seconds", s.decode_seconds);
}

/* Runs sql and keeps the first row of its first result set (batch_rows = 1), cancelling the
 * rest, all under the connection's lock, so no other thread's request can come in between. On
 * MC_OK, *has_row tells whether *schema / *array hold a row (the caller owns them). */
static mc_status scalar_request(ConnectionObject *self, const char *sql, size_t len,
                                const mc_param *params, size_t nparams, struct ArrowSchema *schema,
                                struct ArrowArray *array, int *has_row, mc_error *err) {
  mc_exec_options opts = {1, 64u << 20, self->query_timeout, self->max_buffer};
  *has_row = 0;
  schema->release = NULL;
  array->release = NULL;
  MC_RETURN_NOT_OK(mc_conn_execute(self->conn, sql, len, params, nparams, &opts, err));
  if (!mc_conn_has_result(self->conn)) return MC_OK;
  MC_RETURN_NOT_OK(mc_conn_schema(self->conn, schema, err));
  mc_status st = mc_conn_next_batch(self->conn, array, err);
  if (st == MC_OK && array->release != NULL) {
    *has_row = 1;
    struct ArrowArray more;
    st = mc_conn_next_batch(self->conn, &more, err); /* usually the end of a one-row result */
    if (st == MC_OK && more.release != NULL) {
      more.release(&more);
      st = mc_conn_cancel(self->conn, err); /* the rest is not needed */
    }
  }
  if (st != MC_OK || !*has_row) {
    if (array->release != NULL) array->release(array);
    schema->release(schema);
    *has_row = 0;
  }
  return st;
}

static PyObject *Connection_scalar(ConnectionObject *self, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"sql", "params", NULL};
  const char *sql = NULL;
  Py_ssize_t sql_len = 0;
  PyObject *params_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s#|O:scalar", kwlist, &sql, &sql_len,
                                   &params_obj)) {
    return NULL;
  }
  if (mc_py_check_open(self) < 0) return NULL;
  mc_param *params = NULL;
  Py_ssize_t nparams = 0;
  PyObject *keep = NULL;
  if (mc_py_convert_params(params_obj, &params, &nparams, &keep) < 0) return NULL;
  struct ArrowSchema schema;
  struct ArrowArray array;
  int has_row = 0, closed = 0;
  mc_error err;
  mc_status st = MC_OK;
  self->generation++;
  Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(self->lock, WAIT_LOCK);
  if (self->conn == NULL) {
    closed = 1;
  } else {
    st = scalar_request(self, sql, (size_t)sql_len, params, (size_t)nparams, &schema, &array,
                        &has_row, &err);
  }
  PyThread_release_lock(self->lock);
  Py_END_ALLOW_THREADS PyMem_Free(params);
  Py_XDECREF(keep);
  if (closed) {
    mc_py_check_open(self);
    return NULL;
  }
  if (st != MC_OK) return mc_py_raise(st, &err);
  if (!has_row) Py_RETURN_NONE;
  /* Hand the one row to pyarrow as a stream and take column 0 of row 0. */
  struct ArrowArrayStream *stream = calloc(1, sizeof *stream);
  if (stream == NULL || mc_arrow_stream_from_arrays(&schema, &array, 1, stream) != MC_OK) {
    free(stream);
    array.release(&array);
    schema.release(&schema);
    return PyErr_NoMemory();
  }
  PyObject *capsule = PyCapsule_New(stream, "arrow_array_stream", mc_py_stream_capsule_destructor);
  if (capsule == NULL) {
    stream->release(stream);
    free(stream);
    return NULL;
  }
  PyObject *value = NULL;
  PyObject *reader = PyObject_CallMethod(mc_py_pyarrow_attr("RecordBatchReader"),
                                         "_import_from_c_capsule", "O", capsule);
  Py_DECREF(capsule);
  if (reader != NULL) {
    PyObject *table = PyObject_CallMethod(reader, "read_all", NULL);
    if (table != NULL) {
      PyObject *col = PyObject_CallMethod(table, "column", "i", 0);
      PyObject *zero = PyLong_FromLong(0);
      PyObject *item = (col != NULL && zero != NULL) ? PyObject_GetItem(col, zero) : NULL;
      value = item ? PyObject_CallMethod(item, "as_py", NULL) : NULL;
      Py_XDECREF(item);
      Py_XDECREF(zero);
      Py_XDECREF(col);
      Py_DECREF(table);
    }
    Py_DECREF(reader);
  }
  return value;
}

static PyObject *Connection_get_closed(ConnectionObject *self, void *closure) {
  (void)closure;
  return PyBool_FromLong(self->conn == NULL);
}

static PyObject *Connection_get_server_version(ConnectionObject *self, void *closure) {
  (void)closure;
  if (mc_py_check_open(self) < 0) return NULL;
  return PyUnicode_FromString(mc_conn_server_version(self->conn));
}

static PyObject *Connection_repr(ConnectionObject *self) {
  if (self->conn == NULL) return PyUnicode_FromString("<mssql_cdc._native.Connection closed>");
  if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
    return PyUnicode_FromString("<mssql_cdc._native.Connection busy>");
  }
  PyObject *text =
      PyUnicode_FromFormat("<mssql_cdc._native.Connection server %s, database %s>",
                           mc_conn_server_version(self->conn), mc_conn_database(self->conn));
  PyThread_release_lock(self->lock);
  return text;
}

static void Connection_dealloc(ConnectionObject *self) {
  PyTypeObject *type = Py_TYPE(self);
  mc_conn_close(self->conn); /* no Result holds a reference, so no thread is inside */
  if (self->lock != NULL) PyThread_free_lock(self->lock);
  PyObject_Free(self);
  Py_DECREF(type); /* an instance of a heap type holds a reference to it */
}

static PyMethodDef Connection_methods[] = {
    {"execute", (PyCFunction)(void (*)(void))Connection_execute, METH_VARARGS | METH_KEYWORDS,
     "execute(sql, params=None, *, batch_rows=65536, batch_bytes=64 MiB) -> Result\n\n"
     "Run sql (a SQLBatch, or sp_executesql with params @P1, @P2, ...) and return its first\n"
     "result set as an Arrow stream of bounded batches."},
    {"scalar", (PyCFunction)(void (*)(void))Connection_scalar, METH_VARARGS | METH_KEYWORDS,
     "scalar(sql, params=None) -> object\n\nThe first column of the first row, or None."},
    {"cancel", (PyCFunction)Connection_cancel, METH_NOARGS,
     "cancel() -> None\n\nStop the current request (Attention) and drain it; the connection\n"
     "stays usable."},
    {"close", (PyCFunction)Connection_close, METH_NOARGS, "close() -> None"},
    {"stats", (PyCFunction)Connection_stats, METH_NOARGS,
     "stats() -> dict\n\nbytes_received, bytes_sent, packets, round_trips,\n"
     "network_wait_seconds, decode_seconds since the connection opened."},
    {"__enter__", Connection_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Connection_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Connection_getset[] = {
    {"closed", (getter)Connection_get_closed, NULL, "True after close().", NULL},
    {"server_version", (getter)Connection_get_server_version, NULL,
     "The server's version from LOGINACK, e.g. '16.0.1000'.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Connection_slots[] = {
    {Py_tp_doc, (void *)"A connection to SQL Server; made by mssql_cdc._native.connect()."},
    {Py_tp_dealloc, (void *)Connection_dealloc},
    {Py_tp_repr, (void *)Connection_repr},
    {Py_tp_methods, Connection_methods},
    {Py_tp_getset, Connection_getset},
    {0, NULL},
};

/* Instances come only from connect() (as from a static type without tp_new). */
static PyType_Spec Connection_spec = {
    .name = "mssql_cdc._native.Connection",
    .basicsize = sizeof(ConnectionObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = Connection_slots,
};

static PyMethodDef conn_functions[] = {
    {"connect", (PyCFunction)(void (*)(void))native_connect, METH_VARARGS | METH_KEYWORDS,
     "connect(connection_string, *, user=None, password=None, access_token=None,\n"
     "        login_timeout=None, query_timeout=None, max_buffer=0) -> Connection\n\n"
     "Open a connection: ODBC-style connection string (Encrypt defaults to yes and the\n"
     "certificate is verified); user/password/access_token override it; login_timeout in\n"
     "seconds (default: the string's Connection Timeout, 30); query_timeout in seconds, a\n"
     "deadline for each whole request, from sending it to its last byte (default: none);\n"
     "max_buffer: the most bytes of one row or token (so one value) held, past which the\n"
     "request fails with ProtocolError (0 = 1 GiB)."},
    {NULL, NULL, 0, NULL},
};

int mc_py_add_conn_types(PyObject *module) {
  ConnectionType = (PyTypeObject *)PyType_FromSpec(&Connection_spec);
  if (ConnectionType == NULL) return -1;
  /* PyModule_AddType takes its own reference: the static keeps its one. */
  if (PyModule_AddType(module, ConnectionType) < 0) return -1;
  return PyModule_AddFunctions(module, conn_functions);
}
