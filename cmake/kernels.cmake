# The kernel sources in kernels/ are compiled into the compiler layer, so
# tilec never reads the source tree at run time. Included after the
# compiler layer is defined.
file(GLOB kernel_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/*.S ${PROJECT_SOURCE_DIR}/kernels/*.inc)
string(REPLACE ";" "|" kernel_file_list "${kernel_files}")
set(embedded ${CMAKE_BINARY_DIR}/generated/kernel_sources.cpp)
add_custom_command(
  OUTPUT ${embedded}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${embedded} -DFILES=${kernel_file_list} -DORIGIN=kernels
          -DNAMESPACE=tilec::compiler -DFUNCTION=embedded_kernel_sources -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
  DEPENDS ${kernel_files} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
  COMMENT "Embedding kernel sources"
  VERBATIM)
target_sources(tilec_compiler PRIVATE ${embedded})
