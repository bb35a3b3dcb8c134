/*
 * conn_type.c: mssql_cdc._native.connect(), Connection and Result: the CPython face of the C
 * TDS client (conn.h).
 *
 * The GIL is released while connecting and while a request waits for the server or decodes
 * rows. A Result is an Arrow C stream (PyCapsule protocol, __arrow_c_stream__); its get_next
 * runs without the GIL, which pyarrow drops while reading. Errors become the classes of
 * mssql_cdc.errors; messages never hold the password or the access token.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mssqlcdc/conn.h"
#include "native_module.h"

/* Exception classes from mssql_cdc.errors, looked up at module init. */
static PyObject *ErrSqlServer, *ErrLogin, *ErrConnectionLost, *ErrTls, *ErrTimeout, *ErrProtocol;

typedef struct {
  PyObject_HEAD mc_conn *conn;
  PyThread_type_lock lock; /* serialises every use of conn across threads */
  double query_timeout;
  uint64_t generation; /* bumped by every execute: older results are superseded */
} ConnectionObject;

typedef struct {
  PyObject_HEAD ConnectionObject *owner;
  uint64_t generation;
  int exported;
  int64_t rows_affected;
  int has_rows;
} ResultObject;

/* Heap types (PyType_FromSpec, the stable ABI), made once by mc_py_add_conn_types. */
static PyTypeObject *ConnectionType;
static PyTypeObject *ResultType;

static void stream_capsule_destructor(PyObject *capsule);

/* pyarrow.RecordBatchReader (a borrowed-forever reference after the first call), or NULL with an
 * exception set. */
static PyObject *PyArrowReaderType(void) {
  static PyObject *reader_type = NULL;
  if (reader_type == NULL) {
    PyObject *pa = PyImport_ImportModule("pyarrow");
    if (pa == NULL) return NULL;
    reader_type = PyObject_GetAttrString(pa, "RecordBatchReader");
    Py_DECREF(pa);
  }
  return reader_type;
}

/* Raises the exception for status st with err's message; login selects LoginError for a
 * server error. Returns NULL. */
static PyObject *raise_status(ConnectionObject *self, mc_status st, const mc_error *err,
                              int login) {
  const char *text = err->message;
  PyObject *cls = ErrSqlServer;
  switch (st) {
    case MC_EINVAL: PyErr_SetString(PyExc_ValueError, text); return NULL;
    case MC_ENOMEM: PyErr_SetString(PyExc_MemoryError, text); return NULL;
    case MC_EPROTO: PyErr_SetString(ErrProtocol, text); return NULL;
    case MC_ETLS: cls = ErrTls; break;
    case MC_ETIMEOUT: cls = ErrTimeout; break;
    case MC_EIO:
    case MC_ECLOSED: cls = ErrConnectionLost; break;
    case MC_ESERVER: cls = login ? ErrLogin : ErrSqlServer; break;
    default: break;
  }
  const mc_tds_message *m = (st == MC_ESERVER && self != NULL && self->conn != NULL)
                                ? mc_conn_last_message(self->conn)
                                : NULL;
  PyObject *args = NULL, *kwargs = NULL, *exc = NULL;
  if (m != NULL) {
    args = Py_BuildValue("(s)", m->message);
    kwargs = Py_BuildValue("{s:i,s:i,s:i,s:s,s:s,s:I}", "number", (int)m->number, "state",
                           (int)m->state, "severity", (int)m->severity, "server", m->server,
                           "procedure", m->procedure, "line", (unsigned)m->line);
  } else {
    args = Py_BuildValue("(s)", text);
    kwargs = PyDict_New();
  }
  if (args != NULL && kwargs != NULL) exc = PyObject_Call(cls, args, kwargs);
  Py_XDECREF(args);
  Py_XDECREF(kwargs);
  if (exc != NULL) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

/* Login failures keep the server's fields although the connection object never existed. */
static PyObject *raise_login(mc_status st, const mc_error *err) {
  if (st != MC_ESERVER) return raise_status(NULL, st, err, 1);
  int number = 0;
  const char *text = err->message;
  const char *open = strchr(text, '[');
  if (open != NULL) number = atoi(open + 1);
  const char *close = strchr(text, ']');
  const char *msg = close != NULL && close[1] == ' ' ? close + 2 : text;
  PyObject *exc = PyObject_CallFunction(ErrLogin, "s", msg);
  if (exc == NULL) return NULL;
  PyObject *n = PyLong_FromLong(number);
  if (n != NULL) PyObject_SetAttrString(exc, "number", n);
  Py_XDECREF(n);
  PyErr_SetObject(ErrLogin, exc);
  Py_DECREF(exc);
  return NULL;
}

static int copy_optional_str(PyObject *obj, const char *name, const char **out) {
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
static int timeout_arg(PyObject *obj, const char *name, double *out) {
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

static PyObject *native_connect(PyObject *module, PyObject *args, PyObject *kwargs) {
  (void)module;
  static char *kwlist[] = {"connection_string", "user",          "password", "access_token",
                           "login_timeout",     "query_timeout", NULL};
  PyObject *text_obj = NULL;
  PyObject *user = NULL, *password = NULL, *token = NULL, *login_timeout = Py_None,
           *query_timeout = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|$OOOOO:connect", kwlist, &text_obj, &user,
                                   &password, &token, &login_timeout, &query_timeout)) {
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
    PyErr_SetString(PyExc_ValueError, err.message);
    return NULL;
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
  if (copy_optional_str(user, "user", &auth.user) < 0 ||
      copy_optional_str(password, "password", &auth.password) < 0 ||
      copy_optional_str(token, "access_token", &auth.access_token) < 0) {
    mc_conn_params_clear(&params);
    return NULL;
  }
  double lt = 0, qt = 0;
  int has_lt = timeout_arg(login_timeout, "login_timeout", &lt);
  if (has_lt < 0 || timeout_arg(query_timeout, "query_timeout", &qt) < 0) {
    mc_conn_params_clear(&params);
    return NULL;
  }
  if (has_lt) params.login_timeout_seconds = lt;
  mc_conn *conn = NULL;
  Py_BEGIN_ALLOW_THREADS st = mc_conn_open(&params, &auth, &conn, &err);
  Py_END_ALLOW_THREADS mc_conn_params_clear(&params);
  if (st != MC_OK) return raise_login(st, &err);
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
  self->generation = 0;
  return (PyObject *)self;
}

static int check_open(ConnectionObject *self) {
  if (self->conn == NULL) {
    PyErr_SetString(PyExc_ValueError, "the connection is closed");
    return -1;
  }
  return 0;
}

/* Converts a Python sequence of parameters; *out is PyMem-allocated, *keep holds the objects
 * whose buffers the params point into. */
static int convert_params(PyObject *seq, mc_param **out, Py_ssize_t *n, PyObject **keep) {
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
  if (check_open(self) < 0) return NULL;
  if (batch_rows < 1 || batch_bytes < 1) {
    return PyErr_Format(PyExc_ValueError, "batch_rows and batch_bytes must be at least 1");
  }
  mc_param *params = NULL;
  Py_ssize_t nparams = 0;
  PyObject *keep = NULL;
  if (convert_params(params_obj, &params, &nparams, &keep) < 0) return NULL;
  mc_exec_options opts = {batch_rows, (size_t)batch_bytes, self->query_timeout};
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
    check_open(self);
    return NULL;
  }
  if (st != MC_OK) return raise_status(self, st, &err, 0);
  ResultObject *r = PyObject_New(ResultObject, ResultType);
  if (r == NULL) return NULL;
  Py_INCREF(self);
  r->owner = self;
  r->generation = self->generation;
  r->exported = 0;
  r->has_rows = has_rows;
  r->rows_affected = affected;
  return (PyObject *)r;
}

static PyObject *Connection_cancel(ConnectionObject *self, PyObject *unused) {
  (void)unused;
  if (check_open(self) < 0) return NULL;
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
    check_open(self);
    return NULL;
  }
  if (st != MC_OK) return raise_status(self, st, &err, 0);
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
  if (check_open(self) < 0) return NULL;
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
    check_open(self);
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
  mc_exec_options opts = {1, 64u << 20, self->query_timeout};
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
  if (check_open(self) < 0) return NULL;
  mc_param *params = NULL;
  Py_ssize_t nparams = 0;
  PyObject *keep = NULL;
  if (convert_params(params_obj, &params, &nparams, &keep) < 0) return NULL;
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
    check_open(self);
    return NULL;
  }
  if (st != MC_OK) return raise_status(self, st, &err, 0);
  if (!has_row) Py_RETURN_NONE;
  /* Hand the one row to pyarrow as a stream and take column 0 of row 0. */
  struct ArrowArrayStream *stream = calloc(1, sizeof *stream);
  if (stream == NULL || mc_arrow_stream_from_arrays(&schema, &array, 1, stream) != MC_OK) {
    free(stream);
    array.release(&array);
    schema.release(&schema);
    return PyErr_NoMemory();
  }
  PyObject *capsule = PyCapsule_New(stream, "arrow_array_stream", stream_capsule_destructor);
  if (capsule == NULL) {
    stream->release(stream);
    free(stream);
    return NULL;
  }
  PyObject *value = NULL;
  PyObject *reader =
      PyObject_CallMethod((PyObject *)PyArrowReaderType(), "_import_from_c_capsule", "O", capsule);
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
  if (check_open(self) < 0) return NULL;
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

/* ---- Result: an Arrow C stream over the connection ------------------------------------- */

typedef struct {
  ConnectionObject *owner; /* strong reference, released under the GIL */
  uint64_t generation;
  int has_rows;
  char last_error[MC_ERROR_MESSAGE_SIZE];
} stream_private;

static void empty_schema_release(struct ArrowSchema *s) { s->release = NULL; }

static int stream_get_schema(struct ArrowArrayStream *stream, struct ArrowSchema *out) {
  stream_private *p = stream->private_data;
  if (!p->has_rows) {
    memset(out, 0, sizeof *out);
    out->format = "+s";
    out->name = "";
    out->release = empty_schema_release;
    return 0;
  }
  PyThread_acquire_lock(p->owner->lock, WAIT_LOCK);
  int rc = 0;
  mc_error err;
  if (p->owner->conn == NULL || p->owner->generation != p->generation) {
    snprintf(p->last_error, sizeof p->last_error, "the result was superseded or closed");
    rc = 5; /* EIO */
  } else if (mc_conn_schema(p->owner->conn, out, &err) != MC_OK) {
    snprintf(p->last_error, sizeof p->last_error, "%s", err.message);
    rc = 5;
  }
  PyThread_release_lock(p->owner->lock);
  return rc;
}

static int stream_get_next(struct ArrowArrayStream *stream, struct ArrowArray *out) {
  stream_private *p = stream->private_data;
  out->release = NULL;
  if (!p->has_rows) return 0;
  /* The lock makes a read from another thread, or close(), wait for this one. */
  PyThread_acquire_lock(p->owner->lock, WAIT_LOCK);
  if (p->owner->conn == NULL || p->owner->generation != p->generation) {
    PyThread_release_lock(p->owner->lock);
    snprintf(p->last_error, sizeof p->last_error,
             "the result was superseded by a later execute() or the connection was closed");
    return 5;
  }
  mc_error err;
  mc_status st = mc_conn_next_batch(p->owner->conn, out, &err);
  PyThread_release_lock(p->owner->lock);
  if (st != MC_OK) {
    /* The status name leads so callers can tell a server error from a lost connection. */
    int n = snprintf(p->last_error, sizeof p->last_error, "%s: ", mc_status_name(st));
    if (n > 0 && (size_t)n < sizeof p->last_error) {
      snprintf(p->last_error + n, sizeof p->last_error - (size_t)n, "%.*s",
               (int)(sizeof p->last_error - (size_t)n - 1), err.message);
    }
    return 5;
  }
  return 0;
}

static const char *stream_get_last_error(struct ArrowArrayStream *stream) {
  stream_private *p = stream->private_data;
  return p->last_error[0] ? p->last_error : NULL;
}

static void stream_release(struct ArrowArrayStream *stream) {
  stream_private *p = stream->private_data;
  if (p != NULL) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(p->owner);
    PyGILState_Release(g);
    free(p);
  }
  stream->private_data = NULL;
  stream->release = NULL;
}

static void stream_capsule_destructor(PyObject *capsule) {
  struct ArrowArrayStream *s = PyCapsule_GetPointer(capsule, "arrow_array_stream");
  if (s == NULL) {
    PyErr_Clear();
    return;
  }
  if (s->release != NULL) s->release(s);
  free(s);
}

static PyObject *Result_arrow_c_stream(ResultObject *self, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"requested_schema", NULL};
  PyObject *requested = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:__arrow_c_stream__", kwlist, &requested)) {
    return NULL;
  }
  if (requested != Py_None) {
    return PyErr_Format(PyExc_NotImplementedError,
                        "casting to a requested schema is not supported; cast the batches");
  }
  if (self->exported) {
    return PyErr_Format(PyExc_ValueError, "this result was already consumed (read it once)");
  }
  struct ArrowArrayStream *s = calloc(1, sizeof *s);
  stream_private *p = calloc(1, sizeof *p);
  if (s == NULL || p == NULL) {
    free(s);
    free(p);
    return PyErr_NoMemory();
  }
  Py_INCREF(self->owner);
  p->owner = self->owner;
  p->generation = self->generation;
  p->has_rows = self->has_rows;
  s->get_schema = stream_get_schema;
  s->get_next = stream_get_next;
  s->get_last_error = stream_get_last_error;
  s->release = stream_release;
  s->private_data = p;
  PyObject *capsule = PyCapsule_New(s, "arrow_array_stream", stream_capsule_destructor);
  if (capsule == NULL) {
    stream_release(s);
    free(s);
    return NULL;
  }
  self->exported = 1;
  return capsule;
}

static PyObject *Result_get_rows_affected(ResultObject *self, void *closure) {
  (void)closure;
  return PyLong_FromLongLong(self->rows_affected);
}

static PyObject *Result_get_has_rows(ResultObject *self, void *closure) {
  (void)closure;
  return PyBool_FromLong(self->has_rows);
}

static void Result_dealloc(ResultObject *self) {
  PyTypeObject *type = Py_TYPE(self);
  Py_XDECREF(self->owner);
  PyObject_Free(self);
  Py_DECREF(type);
}

static PyMethodDef Result_methods[] = {
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))Result_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_stream__(requested_schema=None) -> PyCapsule\n\n"
     "Export the result set as an ArrowArrayStream (read once)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Result_getset[] = {
    {"rows_affected", (getter)Result_get_rows_affected, NULL,
     "Rows the last statement before the result set reported (DONE count), or -1.", NULL},
    {"has_rows", (getter)Result_get_has_rows, NULL, "True if the request returned a result set.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Result_slots[] = {
    {Py_tp_doc, (void *)"The result of Connection.execute: an Arrow C stream (read once)."},
    {Py_tp_dealloc, (void *)Result_dealloc},
    {Py_tp_methods, Result_methods},
    {Py_tp_getset, Result_getset},
    {0, NULL},
};

static PyType_Spec Result_spec = {
    .name = "mssql_cdc._native.Result",
    .basicsize = sizeof(ResultObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = Result_slots,
};

static PyMethodDef conn_functions[] = {
    {"connect", (PyCFunction)(void (*)(void))native_connect, METH_VARARGS | METH_KEYWORDS,
     "connect(connection_string, *, user=None, password=None, access_token=None,\n"
     "        login_timeout=None, query_timeout=None) -> Connection\n\n"
     "Open a connection: ODBC-style connection string (Encrypt defaults to yes and the\n"
     "certificate is verified); user/password/access_token override it; login_timeout in\n"
     "seconds (default: the string's Connection Timeout, 30); query_timeout in seconds, the\n"
     "longest wait for the server during a request (default: none)."},
    {NULL, NULL, 0, NULL},
};

int mc_py_add_conn_types(PyObject *module) {
  PyObject *errors = PyImport_ImportModule("mssql_cdc.errors");
  if (errors == NULL) return -1;
  ErrSqlServer = PyObject_GetAttrString(errors, "SqlServerError");
  ErrLogin = PyObject_GetAttrString(errors, "LoginError");
  ErrConnectionLost = PyObject_GetAttrString(errors, "ConnectionLostError");
  ErrTls = PyObject_GetAttrString(errors, "TlsError");
  ErrTimeout = PyObject_GetAttrString(errors, "SqlTimeoutError");
  ErrProtocol = PyObject_GetAttrString(errors, "ProtocolError");
  Py_DECREF(errors);
  if (!ErrSqlServer || !ErrLogin || !ErrConnectionLost || !ErrTls || !ErrTimeout || !ErrProtocol) {
    return -1;
  }
  ConnectionType = (PyTypeObject *)PyType_FromSpec(&Connection_spec);
  if (ConnectionType == NULL) return -1;
  ResultType = (PyTypeObject *)PyType_FromSpec(&Result_spec);
  if (ResultType == NULL) return -1;
  /* PyModule_AddType takes its own reference: the statics keep theirs. */
  if (PyModule_AddType(module, ConnectionType) < 0 || PyModule_AddType(module, ResultType) < 0) {
    return -1;
  }
  return PyModule_AddFunctions(module, conn_functions);
}
