/*
 * arrow_abi.h: the Arrow C Data Interface and C Stream Interface structs (ArrowSchema,
 * ArrowArray, ArrowArrayStream), written from the public ABI specification
 * (https://arrow.apache.org/docs/format/CDataInterface.html and CStreamInterface.html).
 *
 * The layouts are a stable ABI shared with every Arrow implementation (pyarrow, arrow-rs, ...),
 * so the guard macros are the ones the specification names: a translation unit that already
 * saw another copy of these declarations does not see them twice.
 */
#ifndef MSSQLCDC_ARROW_ABI_H
#define MSSQLCDC_ARROW_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

/* The type of an array: a format string, a name, flags and children (for nested types). */
struct ArrowSchema {
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;
  void (*release)(struct ArrowSchema *);
  void *private_data;
};

/* The data of an array: length, null count, offset, buffers and children. */
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;
  void (*release)(struct ArrowArray *);
  void *private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

/* A pull stream of arrays sharing one schema. Callbacks return 0 or an errno value. */
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
  int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
  const char *(*get_last_error)(struct ArrowArrayStream *);
  void (*release)(struct ArrowArrayStream *);
  void *private_data;
};

#endif /* ARROW_C_STREAM_INTERFACE */

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_ARROW_ABI_H */
