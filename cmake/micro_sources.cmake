# The microbenchmarks in bench/micro/ are compiled into the bench layer, so
# `tilec bench --micro` runs without the source tree. Included after the
# bench layer is defined.
file(GLOB micro_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/bench/micro/*.s)
string(REPLACE ";" "|" micro_file_list "${micro_files}")
set(micro_embedded ${CMAKE_BINARY_DIR}/generated/micro_sources.cpp)
add_custom_command(
  OUTPUT ${micro_embedded}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${micro_embedded} -DFILES=${micro_file_list} -DORIGIN=bench/micro
          -DNAMESPACE=tilec::bench -DFUNCTION=embedded_micro_sources -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
  DEPENDS ${micro_files} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
  COMMENT "Embedding the microbenchmarks"
  VERBATIM)
target_sources(tilec_bench PRIVATE ${micro_embedded})
