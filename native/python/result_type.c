/*
 * result_type.c: the Result type: the rows of Connection.execute as Arrow record batches.
 *
 * Two ways to read, both once: the Arrow C stream (PyCapsule protocol, __arrow_c_stream__; its
 * get_next runs without the GIL, which pyarrow drops while reading) and the Result's own
 * iteration / reader(), which raise the mssql_cdc.errors class of a failure (errors.c) where
 * pyarrow can only raise OSError with the stream's text ("ECLOSED: ..."). A read takes the
 * connection's lock, so a read from another thread, or close(), waits for it; a result that a
 * later execute() superseded fails cleanly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_type.h"

typedef struct {
  PyObject_HEAD ConnectionObject *owner;
  uint64_t generation;
  int exported; /* read once: set by the first __arrow_c_stream__, iteration or reader() */
  int64_t rows_affected;
  int has_rows;
  struct ArrowArrayStream *own; /* the Result's own read (iteration, reader()), or NULL */
  PyObject *schema;             /* pyarrow.Schema of that read */
} ResultObject;

/* Heap type (PyType_FromSpec, the stable ABI), made once by mc_py_add_result_type. */
static PyTypeObject *ResultType;

PyObject *mc_py_pyarrow_attr(const char *name) {
  static PyObject *pyarrow = NULL; /* the module, held for good after the first call */
  if (pyarrow == NULL) {
    pyarrow = PyImport_ImportModule("pyarrow");
    if (pyarrow == NULL) return NULL;
  }
  PyObject *attr = PyObject_GetAttrString(pyarrow, name);
  if (attr == NULL) return NULL;
  Py_DECREF(attr); /* the module holds it for as long as it lives (for good) */
  return attr;
}

PyObject *mc_py_result_new(ConnectionObject *owner, int has_rows, int64_t rows_affected) {
  ResultObject *r = PyObject_New(ResultObject, ResultType);
  if (r == NULL) return NULL;
  Py_INCREF(owner);
  r->owner = owner;
  r->generation = owner->generation;
  r->exported = 0;
  r->has_rows = has_rows;
  r->rows_affected = rows_affected;
  r->own = NULL;
  r->schema = NULL;
  return (PyObject *)r;
}

typedef struct {
  ConnectionObject *owner; /* strong reference, released under the GIL */
  uint64_t generation;
  int has_rows;
  mc_status status; /* of the last failure, with its error (server fields included) */
  mc_error error;
  char last_error[MC_ERROR_MESSAGE_SIZE]; /* "STATUS: message", for get_last_error */
} stream_private;

/* Records a failure: the typed error for Result's own reads, the text for the C stream's
 * get_last_error (the status name leads so a reader of the text can tell a server error from a
 * lost connection). Returns the errno the Arrow C stream interface reports (EIO). */
static int stream_fail(stream_private *p, mc_status st, const mc_error *err) {
  p->status = st;
  p->error = *err;
  int n = snprintf(p->last_error, sizeof p->last_error, "%s: ", mc_status_name(st));
  if (n > 0 && (size_t)n < sizeof p->last_error) {
    snprintf(p->last_error + n, sizeof p->last_error - (size_t)n, "%.*s",
             (int)(sizeof p->last_error - (size_t)n - 1), err->message);
  }
  return 5; /* EIO */
}

/* The failure of a result that a later execute() superseded or close() closed. */
static int stream_superseded(stream_private *p) {
  mc_error err;
  mc_error_set(&err, MC_EINVAL,
               "the result was superseded by a later execute() or the connection was closed");
  stream_fail(p, MC_EINVAL, &err);
  snprintf(p->last_error, sizeof p->last_error, "%s", err.message); /* as before: no status */
  return 5;
}

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
  mc_status st = MC_OK;
  if (p->owner->conn == NULL || p->owner->generation != p->generation) {
    rc = stream_superseded(p);
  } else if ((st = mc_conn_schema(p->owner->conn, out, &err)) != MC_OK) {
    rc = stream_fail(p, st, &err);
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
    return stream_superseded(p);
  }
  mc_error err;
  mc_status st = mc_conn_next_batch(p->owner->conn, out, &err);
  PyThread_release_lock(p->owner->lock);
  return st != MC_OK ? stream_fail(p, st, &err) : 0;
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

void mc_py_stream_capsule_destructor(PyObject *capsule) {
  struct ArrowArrayStream *s = PyCapsule_GetPointer(capsule, "arrow_array_stream");
  if (s == NULL) {
    PyErr_Clear();
    return;
  }
  if (s->release != NULL) s->release(s);
  free(s);
}

/* A new stream over self's request (read once: marks self consumed), or NULL with an
 * exception set. */
static struct ArrowArrayStream *new_stream(ResultObject *self) {
  if (self->exported) {
    PyErr_Format(PyExc_ValueError, "this result was already consumed (read it once)");
    return NULL;
  }
  struct ArrowArrayStream *s = calloc(1, sizeof *s);
  stream_private *p = calloc(1, sizeof *p);
  if (s == NULL || p == NULL) {
    free(s);
    free(p);
    PyErr_NoMemory();
    return NULL;
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
  self->exported = 1;
  return s;
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
  struct ArrowArrayStream *s = new_stream(self);
  if (s == NULL) return NULL;
  PyObject *capsule = PyCapsule_New(s, "arrow_array_stream", mc_py_stream_capsule_destructor);
  if (capsule == NULL) {
    stream_release(s);
    free(s);
    return NULL;
  }
  return capsule;
}

/* Starts the Result's own read (iteration, reader()): the stream and the pyarrow schema.
 * 0, or -1 with an exception set (the typed error if the schema could not be read). */
static int start_reading(ResultObject *self) {
  if (self->own != NULL) return 0;
  struct ArrowArrayStream *s = new_stream(self);
  if (s == NULL) return -1;
  self->own = s;
  struct ArrowSchema schema;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = s->get_schema(s, &schema);
  Py_END_ALLOW_THREADS if (rc != 0) {
    stream_private *p = s->private_data;
    mc_py_raise(p->status, &p->error);
    return -1;
  }
  PyObject *address = PyLong_FromVoidPtr(&schema);
  PyObject *cls = mc_py_pyarrow_attr("Schema");
  self->schema = (address != NULL && cls != NULL)
                     ? PyObject_CallMethod(cls, "_import_from_c", "O", address)
                     : NULL;
  Py_XDECREF(address);
  if (schema.release != NULL) schema.release(&schema); /* not moved if the import failed */
  return self->schema != NULL ? 0 : -1;
}

static PyObject *Result_iter(ResultObject *self) {
  if (start_reading(self) < 0) return NULL;
  Py_INCREF(self);
  return (PyObject *)self;
}

/* The next pyarrow.RecordBatch; NULL without an exception at the end; a failure raises its
 * mssql_cdc.errors class (errors.c), not pyarrow's OSError. */
static PyObject *Result_next(ResultObject *self) {
  if (start_reading(self) < 0) return NULL;
  struct ArrowArrayStream *s = self->own;
  struct ArrowArray array;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = s->get_next(s, &array);
  Py_END_ALLOW_THREADS if (rc != 0) {
    stream_private *p = s->private_data;
    return mc_py_raise(p->status, &p->error);
  }
  if (array.release == NULL) return NULL; /* the end */
  PyObject *address = PyLong_FromVoidPtr(&array);
  PyObject *cls = mc_py_pyarrow_attr("RecordBatch");
  PyObject *batch = (address != NULL && cls != NULL)
                        ? PyObject_CallMethod(cls, "_import_from_c", "OO", address, self->schema)
                        : NULL;
  Py_XDECREF(address);
  if (array.release != NULL) array.release(&array); /* not moved if the import failed */
  return batch;
}

static PyObject *Result_reader(ResultObject *self, PyObject *unused) {
  (void)unused;
  if (start_reading(self) < 0) return NULL;
  PyObject *cls = mc_py_pyarrow_attr("RecordBatchReader");
  if (cls == NULL) return NULL;
  return PyObject_CallMethod(cls, "from_batches", "OO", self->schema, (PyObject *)self);
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
  if (self->own != NULL) {
    if (self->own->release != NULL) self->own->release(self->own);
    free(self->own);
  }
  Py_XDECREF(self->schema);
  Py_XDECREF(self->owner);
  PyObject_Free(self);
  Py_DECREF(type);
}

static PyMethodDef Result_methods[] = {
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))Result_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_stream__(requested_schema=None) -> PyCapsule\n\n"
     "Export the result set as an ArrowArrayStream (read once). A failure while pyarrow\n"
     "reads it is pyarrow's OSError (the C stream interface carries only text); reader()\n"
     "and iteration raise the mssql_cdc.errors classes instead."},
    {"reader", (PyCFunction)Result_reader, METH_NOARGS,
     "reader() -> pyarrow.RecordBatchReader\n\n"
     "The result set as a reader (read once) whose failures are the mssql_cdc.errors classes."},
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
    {Py_tp_iter, (void *)Result_iter},
    {Py_tp_iternext, (void *)Result_next},
    {Py_tp_getset, Result_getset},
    {0, NULL},
};

static PyType_Spec Result_spec = {
    .name = "mssql_cdc._native.Result",
    .basicsize = sizeof(ResultObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = Result_slots,
};

int mc_py_add_result_type(PyObject *module) {
  ResultType = (PyTypeObject *)PyType_FromSpec(&Result_spec);
  if (ResultType == NULL) return -1;
  /* PyModule_AddType takes its own reference: the static keeps its one. */
  return PyModule_AddType(module, ResultType);
}
