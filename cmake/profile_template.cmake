# The HTML report template (src/profile/report_template.html) is compiled
# into the profile layer, so `tilec profile render` never reads the source
# tree at run time. Included right after the profile layer is defined; run
# in script mode (-P) it writes the generated source itself.
if(CMAKE_SCRIPT_MODE_FILE)
  # Writes OUTPUT: a C++ file defining `tilec::profile::report_template()`
  # as the text of TEMPLATE, in raw-string pieces small enough for any
  # compiler's literal limits.
  file(READ ${TEMPLATE} text)
  string(FIND "${text}" ")tilec_template\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${TEMPLATE} contains the raw-string delimiter )tilec_template\"")
  endif()
  string(LENGTH "${text}" length)
  set(pieces "")
  set(offset 0)
  while(offset LESS length)
    string(SUBSTRING "${text}" ${offset} 8000 piece)
    string(APPEND pieces "    R\"tilec_template(${piece})tilec_template\"\n")
    math(EXPR offset "${offset} + 8000")
  endwhile()
  file(WRITE ${OUTPUT}.tmp "// Generated from src/profile/report_template.html at build time; do not edit.
#include \"profile/report_template.h\"

namespace tilec::profile {

std::string_view report_template() {
  static constexpr char text[] =
${pieces}    \"\";
  return {text, sizeof text - 1};
}

}  // namespace tilec::profile
")
  file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
  return()
endif()

set(profile_template ${PROJECT_SOURCE_DIR}/src/profile/report_template.html)
set(profile_template_source ${CMAKE_BINARY_DIR}/generated/report_template.cpp)
add_custom_command(
  OUTPUT ${profile_template_source}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${profile_template_source} -DTEMPLATE=${profile_template}
          -P ${PROJECT_SOURCE_DIR}/cmake/profile_template.cmake
  DEPENDS ${profile_template} ${PROJECT_SOURCE_DIR}/cmake/profile_template.cmake
  COMMENT "Embedding the profile report template"
  VERBATIM)
target_sources(tilec_profile PRIVATE ${profile_template_source})
