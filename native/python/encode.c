/*
 * encode.c: encode_rows(), the Python face of the row encoder (tds_encode.h): an Arrow record
 * batch (any object with __arrow_c_array__, e.g. pyarrow.RecordBatch) and the columns' wire
 * descriptions in, the ROW / NBCROW tokens as bytes out. The emulator serves result sets with it.
 */
#include "native_module.h"

#include <stdlib.h>

#include "mssqlcdc/tds_encode.h"

/* One column description: (kind, nullable, plp, utf8, size, precision, scale, width). */
static int parse_column(PyObject *item, mc_enc_column *col) {
  int kind, nullable, plp, utf8, size, precision, scale;
  unsigned int width;
  if (!PyArg_ParseTuple(item, "iiiiiiiI", &kind, &nullable, &plp, &utf8, &size, &precision, &scale,
                        &width)) {
    return -1;
  }
  if (kind < MC_ENC_INT || kind > MC_ENC_RAW || size < 0 || size > 17 || precision < 0 ||
      precision > 38 || scale < 0 || scale > 38) {
    PyErr_Format(PyExc_ValueError, "bad column description (kind %d, size %d, scale %d)", kind,
                 size, scale);
    return -1;
  }
  col->kind = (mc_enc_kind)kind;
  col->nullable = nullable != 0;
  col->plp = plp != 0;
  col->utf8 = utf8 != 0;
  col->size = (uint8_t)size;
  col->precision = (uint8_t)precision;
  col->scale = (uint8_t)scale;
  col->width = width;
  return 0;
}

PyObject *mc_py_encode_rows(PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)self;
  static char *kwlist[] = {"columns", "batch", "nbcrow", NULL};
  PyObject *columns, *batch;
  int nbcrow = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p:encode_rows", kwlist, &columns, &batch,
                                   &nbcrow)) {
    return NULL;
  }
  PyObject *seq = PySequence_Tuple(columns);
  if (seq == NULL) return NULL;
  Py_ssize_t ncols = PyTuple_Size(seq);
  mc_enc_column *cols = calloc(ncols > 0 ? (size_t)ncols : 1, sizeof *cols);
  PyObject *pair = NULL, *result = NULL;
  mc_enc_buffer out = {0};
  if (cols == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t k = 0; k < ncols; k++) {
    if (parse_column(PyTuple_GetItem(seq, k), &cols[k]) < 0) goto done;
  }
  pair = PyObject_CallMethod(batch, "__arrow_c_array__", NULL);
  if (pair == NULL) goto done;
  if (!PyTuple_Check(pair) || PyTuple_Size(pair) != 2) {
    PyErr_SetString(PyExc_TypeError, "__arrow_c_array__ did not return (schema, array)");
    goto done;
  }
  const struct ArrowSchema *schema = PyCapsule_GetPointer(PyTuple_GetItem(pair, 0), "arrow_schema");
  const struct ArrowArray *array = PyCapsule_GetPointer(PyTuple_GetItem(pair, 1), "arrow_array");
  if (schema == NULL || array == NULL) goto done;
  mc_error err;
  mc_status st;
  Py_BEGIN_ALLOW_THREADS st =
      mc_tds_encode_rows(cols, (size_t)ncols, schema, array, nbcrow != 0, &out, &err);
  Py_END_ALLOW_THREADS if (st != MC_OK) {
    mc_py_raise(st, &err);
    goto done;
  }
  result = PyBytes_FromStringAndSize((const char *)out.data, (Py_ssize_t)out.len);
done:
  mc_enc_buffer_free(&out);
  free(cols);
  Py_XDECREF(pair);
  Py_DECREF(seq);
  return result;
}
