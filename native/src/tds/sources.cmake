# TDS token stream decoder: tokens, column metadata, rows, PLP and value types (tds.h), and
# the row encoder from Arrow (tds_encode.h).
list(APPEND MSSQLCDC_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/decoder.c
  ${CMAKE_CURRENT_LIST_DIR}/token.c
  ${CMAKE_CURRENT_LIST_DIR}/colmetadata.c
  ${CMAKE_CURRENT_LIST_DIR}/collation.c
  ${CMAKE_CURRENT_LIST_DIR}/row.c
  ${CMAKE_CURRENT_LIST_DIR}/plp.c
  ${CMAKE_CURRENT_LIST_DIR}/types_int.c
  ${CMAKE_CURRENT_LIST_DIR}/types_decimal.c
  ${CMAKE_CURRENT_LIST_DIR}/types_datetime.c
  ${CMAKE_CURRENT_LIST_DIR}/types_guid.c
  ${CMAKE_CURRENT_LIST_DIR}/types_string.c
  ${CMAKE_CURRENT_LIST_DIR}/types_codepage.c
  ${CMAKE_CURRENT_LIST_DIR}/types_variant.c
  ${CMAKE_CURRENT_LIST_DIR}/encode_row.c
  ${CMAKE_CURRENT_LIST_DIR}/encode_temporal.c
)
