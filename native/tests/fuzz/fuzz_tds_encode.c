/*
 * fuzz_tds_encode.c: libFuzzer target for the row encoder (tds_encode.h). The first bytes pick
 * a column kind, scale/size and width; the rest is one value: text for the string, GUID and
 * date/time kinds (the encoder parses it), raw fixed-width values for the numeric kinds. Any
 * input must either encode (a buffer that starts with a ROW token) or fail with a message and
 * leave the buffer's length as it was.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mssqlcdc/tds_encode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void no_release_schema(struct ArrowSchema *s) { s->release = NULL; }
static void no_release_array(struct ArrowArray *a) { a->release = NULL; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  static const uint8_t sizes[] = {1, 2, 4, 8};
  static const uint8_t dec_sizes[] = {5, 9, 13, 17};
  static const uint8_t dec_precisions[] = {9, 19, 28, 38};
  mc_enc_column col;
  memset(&col, 0, sizeof col);
  col.kind = (mc_enc_kind)(data[0] % MC_ENC_RAW + 1);
  col.nullable = (data[1] & 1) != 0;
  col.plp = (data[1] & 2) != 0;
  col.utf8 = (data[1] & 4) != 0;
  col.scale = (uint8_t)((data[1] >> 3) % 8);
  col.width = data[2] & 1 ? (uint32_t)(data[3] & 0x3E) : 0;
  const uint8_t *value = data + 4;
  size_t n = size - 4;

  const char *format = "u";
  int64_t rows = 2; /* the value, then a NULL */
  int32_t offsets[3] = {0, (int32_t)n, (int32_t)n};
  const void *buffers[3];
  uint8_t valid = 0x01;
  buffers[0] = &valid;
  buffers[1] = offsets;
  buffers[2] = value;
  int64_t n_buffers = 3;
  switch (col.kind) {
    case MC_ENC_INT:
    case MC_ENC_FLOAT:
    case MC_ENC_MONEY:
      col.size = col.kind == MC_ENC_INT ? sizes[data[3] % 4] : (data[3] & 1 ? 8 : 4);
      if (col.kind == MC_ENC_MONEY) col.scale = 4;
      format = col.kind == MC_ENC_INT ? "l" : (col.kind == MC_ENC_FLOAT ? "g" : "d:19,4");
      break;
    case MC_ENC_DECIMAL:
      col.size = dec_sizes[data[3] % 4];
      col.precision = dec_precisions[data[3] % 4];
      col.scale = (uint8_t)(col.scale % (col.precision + 1));
      format = col.scale == 0 ? "d:38,0" : "d:38,4";
      break;
    case MC_ENC_BIT: format = "b"; break;
    case MC_ENC_BINARY:
    case MC_ENC_ROWVERSION:
    case MC_ENC_RAW: format = "z"; break;
    default: break;
  }
  uint8_t fixed[16 * 2];
  if (format[0] != 'u' && format[0] != 'z') {
    size_t width = format[0] == 'd' ? 16 : (format[0] == 'b' ? 1 : 8);
    memset(fixed, 0, sizeof fixed);
    memcpy(fixed, value, n < width ? n : width);
    buffers[1] = fixed;
    buffers[2] = NULL;
    n_buffers = 2;
  }
  struct ArrowSchema child_s = {0}, parent_s = {0};
  struct ArrowArray child_a = {0}, parent_a = {0};
  struct ArrowSchema *cs[1] = {&child_s};
  struct ArrowArray *ca[1] = {&child_a};
  child_s.format = format;
  child_s.release = no_release_schema;
  parent_s.format = "+s";
  parent_s.n_children = 1;
  parent_s.children = cs;
  parent_s.release = no_release_schema;
  child_a.length = rows;
  child_a.null_count = 1;
  child_a.n_buffers = n_buffers;
  child_a.buffers = buffers;
  child_a.release = no_release_array;
  parent_a.length = rows;
  parent_a.n_children = 1;
  parent_a.children = ca;
  parent_a.release = no_release_array;

  mc_enc_buffer out = {0};
  mc_error err;
  err.message[0] = '\0';
  mc_status st = mc_tds_encode_rows(&col, 1, &parent_s, &parent_a, (data[2] & 2) != 0, &out, &err);
  if (st == MC_OK) {
    if (out.len < 2 || (out.data[0] != 0xD1 && out.data[0] != 0xD2)) abort();
  } else {
    if (err.message[0] == '\0' || out.len != 0) abort();
  }
  mc_enc_buffer_free(&out);
  return 0;
}
