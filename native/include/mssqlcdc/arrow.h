/*
 * arrow.h: Arrow column builders and their export through the Arrow C Data Interface.
 *
 * A batch (mc_arrow_batch) is a set of column builders (mc_arrow_column) that grow row by row.
 * Each column owns up to three buffers laid out as the Arrow columnar format wants them:
 * a validity bitmap (allocated lazily at the first NULL and back-filled with 1s), an offsets
 * buffer (int32, utf8/binary only) and a values buffer (fixed-width values, bit-packed booleans,
 * or the bytes of utf8/binary values). The hot path reserves capacity once and then appends
 * with the ...Unsafe helpers below, which never allocate. mc_arrow_batch_export moves the
 * buffers into a struct ArrowArray (a struct array, one child per column) and leaves the
 * builders empty and ready for the next batch.
 */
#ifndef MSSQLCDC_ARROW_H
#define MSSQLCDC_ARROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mssqlcdc/arrow_abi.h"
#include "mssqlcdc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The Arrow types the decoder produces. */
typedef enum mc_arrow_type {
  MC_ARROW_BOOL = 1,      /* "b", bit-packed */
  MC_ARROW_INT8,          /* "c" */
  MC_ARROW_UINT8,         /* "C" */
  MC_ARROW_INT16,         /* "s" */
  MC_ARROW_INT32,         /* "i" */
  MC_ARROW_INT64,         /* "l" */
  MC_ARROW_FLOAT32,       /* "f" */
  MC_ARROW_FLOAT64,       /* "g" */
  MC_ARROW_DECIMAL128,    /* "d:p,s", 16 bytes little-endian two's complement */
  MC_ARROW_TIMESTAMP_US,  /* "tsu:", int64 microseconds since 1970-01-01, no zone */
  MC_ARROW_TIMESTAMP_UTC, /* "tsu:UTC", int64 microseconds since the epoch, UTC */
  MC_ARROW_DATE32,        /* "tdD", int32 days since 1970-01-01 */
  MC_ARROW_UTF8,          /* "u", int32 offsets + UTF-8 bytes */
  MC_ARROW_BINARY         /* "z", int32 offsets + bytes */
} mc_arrow_type;

/* A growable byte buffer. data is NULL until the first reserve. */
typedef struct mc_arrow_buffer {
  uint8_t *data;
  size_t size;     /* bytes in use */
  size_t capacity; /* bytes allocated */
} mc_arrow_buffer;

/* One column builder. Fields are public so that decoders can append without calls; use the
 * functions below to change them. */
typedef struct mc_arrow_column {
  mc_arrow_type type;
  uint32_t width;    /* mc_arrow_type_width(type), cached for the hot path */
  int32_t precision; /* decimal128 only */
  int32_t scale;     /* decimal128 only */
  char *name;        /* UTF-8, owned */
  int64_t length;    /* values appended */
  int64_t null_count;
  mc_arrow_buffer validity; /* empty until the first NULL */
  mc_arrow_buffer offsets;  /* utf8/binary: length + 1 int32 offsets */
  mc_arrow_buffer values;   /* fixed-width values, bits (bool) or data bytes (utf8/binary) */
} mc_arrow_column;

/* Buffers that consumers released, kept for the next batches (arrow_pool.c). Thread-safe:
 * consumers may release on any thread. */
typedef struct mc_arrow_pool mc_arrow_pool;

/* A pool that keeps at most max_bytes of released buffers. NULL when out of memory. */
mc_arrow_pool *mc_arrow_pool_new(size_t max_bytes);

/* The owner is done: frees the cached buffers and drops the owner's reference. Buffers
 * released later are freed. The pool itself goes when the last exported array is released.
 * NULL is ignored. */
void mc_arrow_pool_close(mc_arrow_pool *pool);

/* Frees the cached buffers (e.g. between results, so an idle owner holds no memory). */
void mc_arrow_pool_trim(mc_arrow_pool *pool);

/* Reference counting for exported arrays (arrow_export.c). */
void mc_arrow_pool_ref(mc_arrow_pool *pool);
void mc_arrow_pool_unref(mc_arrow_pool *pool);

/* A cached buffer of at least `need` bytes (its size in *capacity), or NULL. pool may be NULL. */
void *mc_arrow_pool_take(mc_arrow_pool *pool, size_t need, size_t *capacity);

/* Keeps data (capacity bytes) for a later take, or frees it when the pool is closed or full.
 * pool may be NULL (data is freed). */
void mc_arrow_pool_give(mc_arrow_pool *pool, void *data, size_t capacity);

/* A set of columns of equal length. */
typedef struct mc_arrow_batch {
  mc_arrow_column *columns;
  int64_t n_columns;
  int64_t length;
  mc_arrow_pool *pool; /* not owned; NULL: export hands buffers to free() */
} mc_arrow_batch;

/* Byte width of one value of a fixed-width type; 0 for bool, utf8 and binary. */
size_t mc_arrow_type_width(mc_arrow_type type);

/* Writes the Arrow C Data Interface format string of the type ("i", "d:38,0", "tsu:UTC", ...)
 * into out (size bytes, 32 is always enough). Returns MC_EINVAL for an unknown type. */
mc_status mc_arrow_type_format(mc_arrow_type type, int32_t precision, int32_t scale, char *out,
                               size_t size);

/* Makes sure buf can hold size + additional bytes. MC_ENOMEM (and buf unchanged) on failure or
 * overflow. Growth is geometric, so appending n values costs O(log n) allocations. */
MC_NODISCARD mc_status mc_arrow_buffer_reserve(mc_arrow_buffer *buf, size_t additional);

/* Frees the buffer's memory and empties it. */
void mc_arrow_buffer_free(mc_arrow_buffer *buf);

/* Initializes col as an empty column of the given type. name (UTF-8, name_len bytes) is copied.
 * precision/scale are used only for decimal128. MC_ENOMEM if the name cannot be copied. */
MC_NODISCARD mc_status mc_arrow_column_init(mc_arrow_column *col, mc_arrow_type type,
                                            const char *name, size_t name_len, int32_t precision,
                                            int32_t scale);

/* Frees everything col owns; col may be passed to mc_arrow_column_init again. */
void mc_arrow_column_free(mc_arrow_column *col);

/* Reserves room for n more values (fixed-width slots, bits, offsets and validity bits if the
 * bitmap exists) and data_bytes more bytes of utf8/binary data. After MC_OK, the next n
 * appends of at most data_bytes data in total need no allocation. */
MC_NODISCARD mc_status mc_arrow_column_reserve(mc_arrow_column *col, int64_t n, size_t data_bytes);

/* The hot-path form of mc_arrow_column_reserve(col, 1, data_bytes): an inline capacity check
 * that calls the general function only when a buffer must grow. */
static inline mc_status mc_arrow_column_reserve_one(mc_arrow_column *col, size_t data_bytes) {
  size_t bits_bytes = (size_t)((col->length + 8) >> 3);
  if (col->validity.data == NULL || bits_bytes <= col->validity.capacity) {
    if (col->width != 0) {
      if (col->values.capacity - col->values.size >= col->width) return MC_OK;
    } else if (col->type == MC_ARROW_BOOL) {
      if (bits_bytes <= col->values.capacity) return MC_OK;
    } else if (col->offsets.capacity - col->offsets.size >= sizeof(int32_t) &&
               col->values.capacity - col->values.size >= data_bytes) {
      return MC_OK;
    }
  }
  return mc_arrow_column_reserve(col, 1, data_bytes);
}

/* Makes col hold `rows` values in all (fixed-width slots, offsets, bits, validity bits if the
 * bitmap exists) and data_bytes utf8/binary bytes in all, without growing. An empty buffer is
 * taken from pool (may be NULL) when it has one large enough, else allocated at the exact
 * size; a buffer in use grows as mc_arrow_column_reserve does. */
MC_NODISCARD mc_status mc_arrow_column_reserve_rows(mc_arrow_column *col, int64_t rows,
                                                    size_t data_bytes, mc_arrow_pool *pool);

/* Appends a NULL. Allocates and back-fills the validity bitmap at the first NULL, so it can fail
 * with MC_ENOMEM; it never fails once mc_arrow_column_reserve covered the slot and a bitmap
 * exists. */
MC_NODISCARD mc_status mc_arrow_column_append_null(mc_arrow_column *col);

/* Rolls the column back to `length` values and `null_count` NULLs (both no greater than now).
 * Used to drop a half-decoded row; buffers keep their capacity. */
void mc_arrow_column_truncate(mc_arrow_column *col, int64_t length, int64_t null_count);

/* Appends an utf8/binary value (copying n bytes). Reserves as needed. */
MC_NODISCARD mc_status mc_arrow_column_append_bytes(mc_arrow_column *col, const void *bytes,
                                                    size_t n);

/* Appends one fixed-width value of mc_arrow_type_width bytes (little-endian). Reserves. */
MC_NODISCARD mc_status mc_arrow_column_append_fixed(mc_arrow_column *col, const void *value);

/* Appends a boolean. Reserves. */
MC_NODISCARD mc_status mc_arrow_column_append_bool(mc_arrow_column *col, bool value);

/* --- Unsafe appends: the caller reserved room first (mc_arrow_column_reserve). --- */

/* Marks the next slot valid in the bitmap, if one exists, and counts the value. */
static inline void mc_arrow_column_finish_valid_unsafe(mc_arrow_column *col) {
  if (col->validity.data != NULL) {
    int64_t i = col->length;
    col->validity.data[i >> 3] = (uint8_t)(col->validity.data[i >> 3] | (1u << (i & 7)));
    col->validity.size = (size_t)((i + 1 + 7) >> 3);
  }
  col->length++;
}

/* Appends width bytes of a fixed-width value. */
static inline void mc_arrow_column_append_fixed_unsafe(mc_arrow_column *col, const void *value,
                                                       size_t width) {
  memcpy(col->values.data + col->values.size, value, width);
  col->values.size += width;
  mc_arrow_column_finish_valid_unsafe(col);
}

/* Appends a boolean bit. */
static inline void mc_arrow_column_append_bool_unsafe(mc_arrow_column *col, bool value) {
  int64_t i = col->length;
  uint8_t mask = (uint8_t)(1u << (i & 7));
  if (value) {
    col->values.data[i >> 3] = (uint8_t)(col->values.data[i >> 3] | mask);
  } else {
    col->values.data[i >> 3] = (uint8_t)(col->values.data[i >> 3] & (uint8_t)~mask);
  }
  col->values.size = (size_t)((i + 1 + 7) >> 3);
  mc_arrow_column_finish_valid_unsafe(col);
}

/* Pointer where the next utf8/binary value's bytes go (data_bytes reserved before). */
static inline uint8_t *mc_arrow_column_data_tail(mc_arrow_column *col) {
  return col->values.data + col->values.size;
}

/* Ends an utf8/binary value whose n bytes were written at mc_arrow_column_data_tail. The
 * caller checked that the data stays below 2^31 bytes (int32 offsets). */
static inline void mc_arrow_column_commit_bytes_unsafe(mc_arrow_column *col, size_t n) {
  col->values.size += n;
  int32_t end = (int32_t)col->values.size;
  memcpy(col->offsets.data + col->offsets.size, &end, sizeof end);
  col->offsets.size += sizeof end;
  mc_arrow_column_finish_valid_unsafe(col);
}

/* Largest utf8/binary data one batch column can hold (int32 offsets). */
#define MC_ARROW_MAX_DATA_BYTES ((size_t)INT32_MAX)

/* --- Batches --- */

/* Initializes an empty batch with n_columns columns, all uninitialized-but-zeroed; the caller
 * then calls mc_arrow_column_init on each. MC_ENOMEM on failure. */
MC_NODISCARD mc_status mc_arrow_batch_init(mc_arrow_batch *batch, int64_t n_columns);

/* Frees the batch and its columns. */
void mc_arrow_batch_free(mc_arrow_batch *batch);

/* Sum of the bytes held by the columns' buffers (a batch-size measure). */
size_t mc_arrow_batch_bytes(const mc_arrow_batch *batch);

/* Exports the batch's schema as a struct ("+s") schema with one nullable child per column.
 * On MC_OK the caller owns *out and must call out->release. */
MC_NODISCARD mc_status mc_arrow_batch_export_schema(const mc_arrow_batch *batch,
                                                    struct ArrowSchema *out, mc_error *err);

/* Moves the batch's rows into a struct array *out (one child per column) and leaves the
 * columns empty with the same types, ready for new rows. On MC_OK the caller owns *out and
 * must call out->release; on failure the batch is unchanged. */
MC_NODISCARD mc_status mc_arrow_batch_export(mc_arrow_batch *batch, struct ArrowArray *out,
                                             mc_error *err);

/* Makes *out a stream over a schema and a list of arrays, taking ownership of all of them
 * (their release callbacks are cleared in the sources). Used for tests and for results that
 * are already in memory. MC_ENOMEM on failure (ownership is then not taken). */
MC_NODISCARD mc_status mc_arrow_stream_from_arrays(struct ArrowSchema *schema,
                                                   struct ArrowArray *arrays, int64_t n_arrays,
                                                   struct ArrowArrayStream *out);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_ARROW_H */
