# Writes OUTPUT: a C++ file defining `tilec::compiler::embedded_kernel_sources()`
# that maps each file name in FILES (a |-separated list) to its text.
set(body "")
string(REPLACE "|" ";" FILES "${FILES}")
foreach(path ${FILES})
  get_filename_component(name ${path} NAME)
  file(READ ${path} text)
  string(APPEND body "      {\"${name}\", R\"tilec_embedded(${text})tilec_embedded\"},\n")
endforeach()
file(WRITE ${OUTPUT}.tmp "// Generated from kernels/ at build time; do not edit.
#include <map>
#include <string>
#include <string_view>

namespace tilec::compiler {

const std::map<std::string, std::string_view>& embedded_kernel_sources() {
  static const std::map<std::string, std::string_view> sources{
${body}  };
  return sources;
}

}  // namespace tilec::compiler
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
