# Writes OUTPUT: a C++ file defining `NAMESPACE::FUNCTION()` that maps each
# file name in FILES (a |-separated list, from the folder ORIGIN) to its text.
set(body "")
string(REPLACE "|" ";" FILES "${FILES}")
foreach(path ${FILES})
  get_filename_component(name ${path} NAME)
  file(READ ${path} text)
  string(APPEND body "      {\"${name}\", R\"tilec_embedded(${text})tilec_embedded\"},\n")
endforeach()
file(WRITE ${OUTPUT}.tmp "// Generated from ${ORIGIN}/ at build time; do not edit.
#include <map>
#include <string>
#include <string_view>

namespace ${NAMESPACE} {

const std::map<std::string, std::string_view>& ${FUNCTION}() {
  static const std::map<std::string, std::string_view> sources{
${body}  };
  return sources;
}

}  // namespace ${NAMESPACE}
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
