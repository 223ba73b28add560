# One static library per layer under src/NAME; every .cpp in the folder belongs
# to it, so adding a file never means editing a CMake list.
function(tilec_layer name)
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(sources)
    add_library(tilec_${name} STATIC ${sources})
    target_include_directories(tilec_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(tilec_${name} PUBLIC ${ARGN})
  else()
    # A layer with headers only (or none yet) still takes its place in the chain.
    add_library(tilec_${name} INTERFACE)
    target_include_directories(tilec_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(tilec_${name} INTERFACE ${ARGN})
  endif()
  if(EXISTS ${PROJECT_SOURCE_DIR}/src/${name}/CMakeLists.txt)
    add_subdirectory(${PROJECT_SOURCE_DIR}/src/${name} ${CMAKE_BINARY_DIR}/src/${name})
  endif()
endfunction()

# Tests write their files under the build tree, so checkouts testing at
# once on one machine never share a file.
set(TILEC_TEST_TMPDIR ${CMAKE_BINARY_DIR}/test-tmp)
file(MAKE_DIRECTORY ${TILEC_TEST_TMPDIR})

# One GoogleTest binary per layer: tests/NAME/*_test.cpp.
function(tilec_layer_tests name)
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*_test.cpp)
  if(NOT sources)
    return()
  endif()
  add_executable(${name}_tests ${sources})
  target_link_libraries(${name}_tests PRIVATE tilec_${name} GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name}_tests PRIVATE
    TILEC_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    TILEC_BINARY="$<TARGET_FILE:tilec>")
  add_dependencies(${name}_tests tilec)
  gtest_discover_tests(${name}_tests
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS ${name} ENVIRONMENT "TILEC_SOURCE_DIR=${PROJECT_SOURCE_DIR};TEST_TMPDIR=${TILEC_TEST_TMPDIR}")
endfunction()
