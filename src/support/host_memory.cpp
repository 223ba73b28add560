#include "support/host_memory.h"

#include <fstream>
#include <string>

namespace tilec {

namespace {

// The value of line `key` ("VmHWM:", "MemAvailable:") of a /proc file that
// gives sizes in kB, in bytes.
std::optional<std::uint64_t> proc_bytes(const char* path, const std::string& key) {
  std::ifstream file(path);
  std::string word;
  while (file >> word) {
    if (word == key) {
      std::uint64_t kib = 0;
      if (file >> kib) return kib * 1024;
      return std::nullopt;
    }
    file.ignore(4096, '\n');
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> peak_resident_bytes() { return proc_bytes("/proc/self/status", "VmHWM:"); }

bool restart_peak_resident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // 5: reset the peak resident size (Linux 4.0 and later)
  clear.flush();
  return static_cast<bool>(clear);
}

std::optional<std::uint64_t> available_memory_bytes() { return proc_bytes("/proc/meminfo", "MemAvailable:"); }

}  // namespace tilec
