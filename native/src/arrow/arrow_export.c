/*
 * arrow_export.c: moves a built batch out through the Arrow C Data Interface (struct ArrowArray
 * and struct ArrowSchema, arrow_abi.h) and wraps exported arrays into a struct ArrowArrayStream.
 *
 * Ownership follows the specification's "release callback semantics": every exported struct
 * carries a release callback that releases its children whose release is still set, frees its
 * private data (which owns the buffers) and sets release to NULL. Each child is independently
 * releasable, so a consumer may move children out of the parent. No exported buffer pointer is
 * NULL except a validity bitmap when null_count is 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "mssqlcdc/arrow.h"

/* ---------------------------------------------------------------- arrays */

typedef struct child_array_private {
  void *owned[3];
  size_t capacity[3];
  mc_arrow_pool *pool; /* where owned buffers go back to (a reference), or NULL */
  const void *buffers[3];
} child_array_private;

typedef struct parent_array_private {
  struct ArrowArray *storage;
  struct ArrowArray **children;
  const void *buffers[1];
} parent_array_private;

static void release_child_array(struct ArrowArray *array) {
  if (array == NULL || array->release == NULL) return;
  child_array_private *p = array->private_data;
  if (p != NULL) {
    for (int i = 0; i < 3; i++) mc_arrow_pool_give(p->pool, p->owned[i], p->capacity[i]);
    if (p->pool != NULL) mc_arrow_pool_unref(p->pool);
    free(p);
  }
  array->private_data = NULL;
  array->release = NULL;
}

static void release_parent_array(struct ArrowArray *array) {
  if (array == NULL || array->release == NULL) return;
  parent_array_private *p = array->private_data;
  if (p != NULL) {
    for (int64_t i = 0; i < array->n_children; i++) {
      struct ArrowArray *child = p->children[i];
      if (child != NULL && child->release != NULL) child->release(child);
    }
    free(p->storage);
    free(p->children);
    free(p);
  }
  array->private_data = NULL;
  array->release = NULL;
}

/* Per-column allocations made before anything moves, so that export is all-or-nothing. */
typedef struct export_prep {
  child_array_private *priv;
  void *fresh_offsets; /* the empty column's new offsets buffer (utf8/binary) */
} export_prep;

static bool type_is_var(mc_arrow_type t) { return t == MC_ARROW_UTF8 || t == MC_ARROW_BINARY; }

mc_status mc_arrow_batch_export(mc_arrow_batch *batch, struct ArrowArray *out, mc_error *err) {
  int64_t n = batch->n_columns;
  parent_array_private *pp = calloc(1, sizeof *pp);
  export_prep *prep = calloc((size_t)(n > 0 ? n : 1), sizeof *prep);
  if (pp != NULL && n > 0) {
    pp->storage = calloc((size_t)n, sizeof *pp->storage);
    pp->children = calloc((size_t)n, sizeof *pp->children);
  }
  bool ok = pp != NULL && prep != NULL && (n == 0 || (pp->storage != NULL && pp->children != NULL));
  for (int64_t i = 0; ok && i < n; i++) {
    mc_arrow_column *col = &batch->columns[i];
    prep[i].priv = calloc(1, sizeof *prep[i].priv);
    if (prep[i].priv == NULL) ok = false;
    /* No NULL data buffers: give an empty values buffer a small allocation. */
    if (ok && col->values.data == NULL && mc_arrow_buffer_reserve(&col->values, 1) != MC_OK) {
      ok = false;
    }
    if (ok && type_is_var(col->type)) {
      prep[i].fresh_offsets = calloc(1, 64);
      if (prep[i].fresh_offsets == NULL) ok = false;
    }
  }
  if (!ok) {
    for (int64_t i = 0; prep != NULL && i < n; i++) {
      free(prep[i].priv);
      free(prep[i].fresh_offsets);
    }
    free(prep);
    if (pp != NULL) {
      free(pp->storage);
      free(pp->children);
      free(pp);
    }
    return mc_error_set(err, MC_ENOMEM, "out of memory exporting a batch of %lld columns",
                        (long long)n);
  }

  /* Nothing can fail from here on. */
  for (int64_t i = 0; i < n; i++) {
    mc_arrow_column *col = &batch->columns[i];
    child_array_private *cp = prep[i].priv;
    struct ArrowArray *child = &pp->storage[i];
    pp->children[i] = child;
    int nb = 0;
    if (batch->pool != NULL) {
      mc_arrow_pool_ref(batch->pool);
      cp->pool = batch->pool;
    }
    if (col->null_count > 0) {
      cp->owned[nb] = col->validity.data;
      cp->capacity[nb] = col->validity.capacity;
      cp->buffers[nb++] = col->validity.data;
    } else {
      mc_arrow_pool_give(batch->pool, col->validity.data, col->validity.capacity);
      cp->buffers[nb++] = NULL;
    }
    if (type_is_var(col->type)) {
      cp->owned[nb] = col->offsets.data;
      cp->capacity[nb] = col->offsets.capacity;
      cp->buffers[nb++] = col->offsets.data;
    }
    cp->owned[nb] = col->values.data;
    cp->capacity[nb] = col->values.capacity;
    cp->buffers[nb++] = col->values.data;
    child->length = col->length;
    child->null_count = col->null_count;
    child->offset = 0;
    child->n_buffers = nb;
    child->n_children = 0;
    child->buffers = cp->buffers;
    child->children = NULL;
    child->dictionary = NULL;
    child->release = release_child_array;
    child->private_data = cp;

    col->validity = (mc_arrow_buffer){NULL, 0, 0};
    col->values = (mc_arrow_buffer){NULL, 0, 0};
    col->offsets = (mc_arrow_buffer){NULL, 0, 0};
    if (type_is_var(col->type)) {
      col->offsets = (mc_arrow_buffer){prep[i].fresh_offsets, sizeof(int32_t), 64};
    }
    col->length = 0;
    col->null_count = 0;
  }
  free(prep);
  pp->buffers[0] = NULL;
  out->length = batch->length;
  out->null_count = 0;
  out->offset = 0;
  out->n_buffers = 1;
  out->n_children = n;
  out->buffers = pp->buffers;
  out->children = pp->children;
  out->dictionary = NULL;
  out->release = release_parent_array;
  out->private_data = pp;
  batch->length = 0;
  return MC_OK;
}

/* ---------------------------------------------------------------- schemas */

typedef struct schema_private {
  char *format;
  char *name;
  struct ArrowSchema *storage;   /* children (struct schemas only) */
  struct ArrowSchema **children; /* pointers into storage */
} schema_private;

static void release_schema(struct ArrowSchema *schema) {
  if (schema == NULL || schema->release == NULL) return;
  schema_private *p = schema->private_data;
  if (p != NULL) {
    for (int64_t i = 0; i < schema->n_children; i++) {
      struct ArrowSchema *child = p->children[i];
      if (child != NULL && child->release != NULL) child->release(child);
    }
    free(p->storage);
    free(p->children);
    free(p->format);
    free(p->name);
    free(p);
  }
  schema->private_data = NULL;
  schema->release = NULL;
}

static char *dup_cstr(const char *s) {
  if (s == NULL) s = "";
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d != NULL) memcpy(d, s, n + 1);
  return d;
}

/* Fills *out as a schema with the given format, name, flags and n_children zeroed children
 * (their pointers in out->children). MC_ENOMEM leaves *out released-looking (release NULL). */
static mc_status schema_alloc(struct ArrowSchema *out, const char *format, const char *name,
                              int64_t flags, int64_t n_children) {
  memset(out, 0, sizeof *out);
  schema_private *p = calloc(1, sizeof *p);
  if (p == NULL) return MC_ENOMEM;
  p->format = dup_cstr(format);
  p->name = dup_cstr(name);
  if (n_children > 0) {
    p->storage = calloc((size_t)n_children, sizeof *p->storage);
    p->children = calloc((size_t)n_children, sizeof *p->children);
  }
  if (p->format == NULL || p->name == NULL ||
      (n_children > 0 && (p->storage == NULL || p->children == NULL))) {
    free(p->format);
    free(p->name);
    free(p->storage);
    free(p->children);
    free(p);
    return MC_ENOMEM;
  }
  for (int64_t i = 0; i < n_children; i++) p->children[i] = &p->storage[i];
  out->format = p->format;
  out->name = p->name;
  out->metadata = NULL;
  out->flags = flags;
  out->n_children = n_children;
  out->children = n_children > 0 ? p->children : NULL;
  out->dictionary = NULL;
  out->release = release_schema;
  out->private_data = p;
  return MC_OK;
}

mc_status mc_arrow_batch_export_schema(const mc_arrow_batch *batch, struct ArrowSchema *out,
                                       mc_error *err) {
  if (schema_alloc(out, "+s", "", 0, batch->n_columns) != MC_OK) {
    return mc_error_set(err, MC_ENOMEM, "out of memory exporting a schema");
  }
  for (int64_t i = 0; i < batch->n_columns; i++) {
    const mc_arrow_column *col = &batch->columns[i];
    char format[32];
    if (mc_arrow_type_format(col->type, col->precision, col->scale, format, sizeof format) !=
        MC_OK) {
      release_schema(out);
      return mc_error_set(err, MC_EINVAL, "column %lld has an unknown Arrow type %d", (long long)i,
                          (int)col->type);
    }
    if (schema_alloc(out->children[i], format, col->name, ARROW_FLAG_NULLABLE, 0) != MC_OK) {
      release_schema(out);
      return mc_error_set(err, MC_ENOMEM, "out of memory exporting a schema");
    }
  }
  return MC_OK;
}

/* Deep copy of a schema tree (format, name, flags, children; metadata and dictionaries are
 * not carried, this library never produces them). */
static mc_status schema_copy(const struct ArrowSchema *src, struct ArrowSchema *out) {
  MC_RETURN_NOT_OK(schema_alloc(out, src->format, src->name, src->flags, src->n_children));
  for (int64_t i = 0; i < src->n_children; i++) {
    if (schema_copy(src->children[i], out->children[i]) != MC_OK) {
      release_schema(out);
      return MC_ENOMEM;
    }
  }
  return MC_OK;
}

/* ---------------------------------------------------------------- streams */

typedef struct stream_private {
  struct ArrowSchema schema;
  struct ArrowArray *arrays;
  int64_t n_arrays;
  int64_t next;
  char last_error[128];
} stream_private;

static int stream_get_schema(struct ArrowArrayStream *stream, struct ArrowSchema *out) {
  stream_private *p = stream->private_data;
  if (schema_copy(&p->schema, out) != MC_OK) {
    snprintf(p->last_error, sizeof p->last_error, "out of memory copying the schema");
    return ENOMEM;
  }
  return 0;
}

static int stream_get_next(struct ArrowArrayStream *stream, struct ArrowArray *out) {
  stream_private *p = stream->private_data;
  if (p->next >= p->n_arrays) {
    memset(out, 0, sizeof *out); /* release == NULL marks the end of the stream */
    return 0;
  }
  *out = p->arrays[p->next];
  p->arrays[p->next].release = NULL;
  p->next++;
  return 0;
}

static const char *stream_get_last_error(struct ArrowArrayStream *stream) {
  stream_private *p = stream->private_data;
  return p->last_error[0] != '\0' ? p->last_error : NULL;
}

static void stream_release(struct ArrowArrayStream *stream) {
  if (stream == NULL || stream->release == NULL) return;
  stream_private *p = stream->private_data;
  if (p != NULL) {
    if (p->schema.release != NULL) p->schema.release(&p->schema);
    for (int64_t i = 0; i < p->n_arrays; i++) {
      if (p->arrays[i].release != NULL) p->arrays[i].release(&p->arrays[i]);
    }
    free(p->arrays);
    free(p);
  }
  stream->private_data = NULL;
  stream->release = NULL;
}

mc_status mc_arrow_stream_from_arrays(struct ArrowSchema *schema, struct ArrowArray *arrays,
                                      int64_t n_arrays, struct ArrowArrayStream *out) {
  stream_private *p = calloc(1, sizeof *p);
  if (p == NULL) return MC_ENOMEM;
  p->arrays = calloc((size_t)(n_arrays > 0 ? n_arrays : 1), sizeof *p->arrays);
  if (p->arrays == NULL) {
    free(p);
    return MC_ENOMEM;
  }
  p->schema = *schema;
  schema->release = NULL;
  for (int64_t i = 0; i < n_arrays; i++) {
    p->arrays[i] = arrays[i];
    arrays[i].release = NULL;
  }
  p->n_arrays = n_arrays;
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_get_last_error;
  out->release = stream_release;
  out->private_data = p;
  return MC_OK;
}
