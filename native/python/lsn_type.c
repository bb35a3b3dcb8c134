/*
 * lsn_type.c: mssql_cdc.Lsn, an immutable, ordered, hashable SQL Server LSN over mc_lsn
 * (lsn.h). Instances compare and hash by their 10 bytes, pickle as those bytes, and print in
 * the canonical form "0x" + 20 upper-case hex digits.
 */
#include "native_module.h"

#include <string.h>

#include "mssqlcdc/lsn.h"

typedef struct {
  PyObject_HEAD mc_lsn lsn;
} LsnObject;

/* A heap type (PyType_FromSpec, the stable ABI), made once by mc_py_add_lsn_type. */
static PyTypeObject *LsnType;

#define LSN_CHECK(o) PyObject_TypeCheck((o), LsnType)

static PyObject *lsn_new_from(const mc_lsn *lsn) {
  LsnObject *self = PyObject_New(LsnObject, LsnType);
  if (self == NULL) return NULL;
  self->lsn = *lsn;
  return (PyObject *)self;
}

/* Parses a str into *out, raising ValueError that quotes (a bounded part of) the input. */
static int lsn_parse_str(PyObject *text, mc_lsn *out) {
  Py_ssize_t len = 0;
  const char *utf8 = PyUnicode_AsUTF8AndSize(text, &len);
  if (utf8 == NULL) return -1;
  mc_error err;
  mc_status st = mc_lsn_parse(utf8, (size_t)len, out, &err);
  if (st != MC_OK) { /* EINVAL: ValueError, through the one map (errors.c) */
    PyObject *message = len > 48
                            ? PyUnicode_FromFormat("invalid LSN %.40R...: %s", text, err.message)
                            : PyUnicode_FromFormat("invalid LSN %R: %s", text, err.message);
    mc_py_raise_message(st, message);
    Py_XDECREF(message);
    return -1;
  }
  return 0;
}

/* Fills *out from a 10-byte bytes-like object: 1 on success, 0 if obj has no buffer interface
 * (no exception set), -1 with an exception set. Python 3.10's limited API has no Py_buffer
 * (PyObject_GetBuffer is in it from 3.11), so the bytes come through a memoryview. */
static int lsn_from_buffer(PyObject *obj, mc_lsn *out) {
  PyObject *view = PyMemoryView_FromObject(obj);
  if (view == NULL) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
    PyErr_Clear(); /* not bytes-like */
    return 0;
  }
  PyObject *raw = PyObject_CallMethod(view, "tobytes", NULL);
  Py_DECREF(view);
  if (raw == NULL) return -1;
  char *buf = NULL;
  Py_ssize_t len = 0;
  if (PyBytes_AsStringAndSize(raw, &buf, &len) < 0) {
    Py_DECREF(raw);
    return -1;
  }
  if (len != MC_LSN_SIZE) {
    PyErr_Format(PyExc_ValueError, "an LSN is binary(10): expected 10 bytes, got %zd", len);
    Py_DECREF(raw);
    return -1;
  }
  memcpy(out->bytes, buf, MC_LSN_SIZE);
  Py_DECREF(raw);
  return 1;
}

static PyObject *Lsn_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  (void)type;
  static char *kwlist[] = {"value", NULL};
  PyObject *value = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Lsn", kwlist, &value)) return NULL;
  if (LSN_CHECK(value)) {
    Py_INCREF(value);
    return value;
  }
  mc_lsn lsn;
  if (PyUnicode_Check(value)) {
    if (lsn_parse_str(value, &lsn) != 0) return NULL;
    return lsn_new_from(&lsn);
  }
  int rc = lsn_from_buffer(value, &lsn);
  if (rc < 0) return NULL;
  if (rc == 0) {
    PyObject *tn = mc_py_type_name(value);
    if (tn != NULL) PyErr_Format(PyExc_TypeError, "Lsn() takes a str or 10 bytes, not %.100U", tn);
    Py_XDECREF(tn);
    return NULL;
  }
  return lsn_new_from(&lsn);
}

static PyObject *Lsn_parse(PyObject *cls, PyObject *text) {
  (void)cls;
  if (!PyUnicode_Check(text)) {
    PyObject *tn = mc_py_type_name(text);
    if (tn != NULL) PyErr_Format(PyExc_TypeError, "Lsn.parse() takes a str, not %.100U", tn);
    Py_XDECREF(tn);
    return NULL;
  }
  mc_lsn lsn;
  if (lsn_parse_str(text, &lsn) != 0) return NULL;
  return lsn_new_from(&lsn);
}

/* Reads one part as an unsigned integer no larger than max; -1 with ValueError otherwise. */
static int lsn_part(PyObject *value, const char *name, unsigned long long max,
                    unsigned long long *out) {
  if (!PyLong_Check(value)) {
    PyObject *tn = mc_py_type_name(value);
    if (tn != NULL) PyErr_Format(PyExc_TypeError, "LSN %s must be an int, not %.100U", name, tn);
    Py_XDECREF(tn);
    return -1;
  }
  unsigned long long v = PyLong_AsUnsignedLongLong(value);
  if ((v == (unsigned long long)-1 && PyErr_Occurred()) || v > max) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "LSN %s must be in 0..%llu, got %R", name, max, value);
    return -1;
  }
  *out = v;
  return 0;
}

static PyObject *Lsn_from_parts(PyObject *cls, PyObject *args, PyObject *kwargs) {
  (void)cls;
  static char *kwlist[] = {"vlf", "block", "slot", NULL};
  PyObject *o_vlf = NULL, *o_block = NULL, *o_slot = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:from_parts", kwlist, &o_vlf, &o_block,
                                   &o_slot)) {
    return NULL;
  }
  unsigned long long vlf = 0, block = 0, slot = 0;
  if (lsn_part(o_vlf, "vlf", 0xFFFFFFFFull, &vlf) != 0 ||
      lsn_part(o_block, "block", 0xFFFFFFFFull, &block) != 0 ||
      lsn_part(o_slot, "slot", 0xFFFFull, &slot) != 0) {
    return NULL;
  }
  mc_lsn lsn = mc_lsn_from_parts((uint32_t)vlf, (uint32_t)block, (uint16_t)slot);
  return lsn_new_from(&lsn);
}

static PyObject *Lsn_next(PyObject *self, PyObject *unused) {
  (void)unused;
  mc_lsn out;
  mc_error err;
  if (mc_lsn_increment(&((LsnObject *)self)->lsn, &out, &err) != MC_OK) {
    return mc_py_raise(MC_ERANGE, &err); /* OverflowError, through the one map (errors.c) */
  }
  return lsn_new_from(&out);
}

static PyObject *Lsn_prev(PyObject *self, PyObject *unused) {
  (void)unused;
  mc_lsn out;
  mc_error err;
  if (mc_lsn_decrement(&((LsnObject *)self)->lsn, &out, &err) != MC_OK) {
    return mc_py_raise(MC_ERANGE, &err); /* OverflowError, through the one map (errors.c) */
  }
  return lsn_new_from(&out);
}

static PyObject *Lsn_format_parts(PyObject *self, PyObject *unused) {
  (void)unused;
  char text[MC_LSN_PARTS_TEXT_SIZE];
  mc_lsn_format_parts(&((LsnObject *)self)->lsn, text);
  return PyUnicode_FromString(text);
}

static PyObject *Lsn_bytes(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyBytes_FromStringAndSize((const char *)((LsnObject *)self)->lsn.bytes, MC_LSN_SIZE);
}

static PyObject *Lsn_reduce(PyObject *self, PyObject *unused) {
  PyObject *raw = Lsn_bytes(self, unused);
  if (raw == NULL) return NULL;
  return Py_BuildValue("(O(N))", (PyObject *)Py_TYPE(self), raw);
}

static PyObject *Lsn_str(PyObject *self) {
  char text[MC_LSN_TEXT_SIZE];
  mc_lsn_format(&((LsnObject *)self)->lsn, text);
  return PyUnicode_FromString(text);
}

static PyObject *Lsn_repr(PyObject *self) {
  char text[MC_LSN_TEXT_SIZE];
  mc_lsn_format(&((LsnObject *)self)->lsn, text);
  return PyUnicode_FromFormat("Lsn('%s')", text);
}

static Py_hash_t Lsn_hash(PyObject *self) {
  /* FNV-1a over the 10 bytes; equal LSNs hash equal. */
  const unsigned char *b = ((LsnObject *)self)->lsn.bytes;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < MC_LSN_SIZE; i++) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  Py_hash_t result = (Py_hash_t)(h >> 1);
  return result == -1 ? -2 : result;
}

static PyObject *Lsn_richcompare(PyObject *a, PyObject *b, int op) {
  if (!LSN_CHECK(a) || !LSN_CHECK(b)) Py_RETURN_NOTIMPLEMENTED;
  int c = mc_lsn_compare(&((LsnObject *)a)->lsn, &((LsnObject *)b)->lsn);
  Py_RETURN_RICHCOMPARE(c, 0, op);
}

static PyObject *Lsn_get_vlf(PyObject *self, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLong(mc_lsn_vlf(&((LsnObject *)self)->lsn));
}

static PyObject *Lsn_get_block(PyObject *self, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLong(mc_lsn_block(&((LsnObject *)self)->lsn));
}

static PyObject *Lsn_get_slot(PyObject *self, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLong(mc_lsn_slot(&((LsnObject *)self)->lsn));
}

static PyMethodDef Lsn_methods[] = {
    {"parse", (PyCFunction)Lsn_parse, METH_O | METH_CLASS,
     "parse(text: str) -> Lsn\n\n"
     "Parse '0x' + up to 20 hex digits (prefix optional, either case, fewer digits left-padded\n"
     "with zeros) or the 'vlf:block:slot' hex form. Raises ValueError saying what is wrong."},
    {"from_parts", (PyCFunction)(void (*)(void))Lsn_from_parts,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_parts(vlf: int, block: int, slot: int) -> Lsn\n\n"
     "Build an LSN from its VLF sequence number, log block and slot."},
    {"next", Lsn_next, METH_NOARGS,
     "next() -> Lsn\n\nThe next possible LSN, as sys.fn_cdc_increment_lsn returns. "
     "OverflowError at the largest LSN."},
    {"prev", Lsn_prev, METH_NOARGS,
     "prev() -> Lsn\n\nThe previous possible LSN, as sys.fn_cdc_decrement_lsn returns. "
     "OverflowError at the zero LSN."},
    {"format_parts", Lsn_format_parts, METH_NOARGS,
     "format_parts() -> str\n\nThe fn_dblog / Debezium form, e.g. '0000002a:000001f4:0003'."},
    {"__bytes__", Lsn_bytes, METH_NOARGS, "The 10 big-endian bytes SQL Server stores."},
    {"__reduce__", Lsn_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Lsn_getset[] = {
    {"vlf", Lsn_get_vlf, NULL, "VLF sequence number (bytes 0-3).", NULL},
    {"block", Lsn_get_block, NULL, "Log block number (bytes 4-7).", NULL},
    {"slot", Lsn_get_slot, NULL, "Slot of the log record in the block (bytes 8-9).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(Lsn_doc,
             "Lsn(value: str | bytes)\n\n"
             "A SQL Server log sequence number: binary(10) = 4-byte VLF sequence number, 4-byte\n"
             "log block, 2-byte slot, big-endian (docs/reference/sql-server-cdc.md).\n"
             "Immutable, ordered as the log, hashable; str() gives '0x' + 20 upper-case hex\n"
             "digits and bytes() the 10 bytes. Lsn(str) is Lsn.parse(str).");

static PyType_Slot Lsn_slots[] = {
    {Py_tp_doc, (void *)Lsn_doc},
    {Py_tp_new, (void *)Lsn_new},
    {Py_tp_repr, (void *)Lsn_repr},
    {Py_tp_str, (void *)Lsn_str},
    {Py_tp_hash, (void *)Lsn_hash},
    {Py_tp_richcompare, (void *)Lsn_richcompare},
    {Py_tp_methods, Lsn_methods},
    {Py_tp_getset, Lsn_getset},
    {0, NULL},
};

static PyType_Spec Lsn_spec = {
    .name = "mssql_cdc.Lsn",
    .basicsize = sizeof(LsnObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Lsn_slots,
};

int mc_py_add_lsn_type(PyObject *module) {
  LsnType = (PyTypeObject *)PyType_FromSpec(&Lsn_spec);
  if (LsnType == NULL) return -1;
  return PyModule_AddType(module, LsnType); /* its own reference: LsnType keeps ours */
}
