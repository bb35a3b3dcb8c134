# Arrow builders and their export through the Arrow C Data Interface (arrow.h).
list(APPEND MSSQLCDC_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/arrow_buffer.c
  ${CMAKE_CURRENT_LIST_DIR}/arrow_builder.c
  ${CMAKE_CURRENT_LIST_DIR}/arrow_export.c
  ${CMAKE_CURRENT_LIST_DIR}/arrow_pool.c
)
