// The host's memory: the process's resident memory, for the reports' peak
// RSS, and what the host has available, for the sweep's default jobs.
#pragma once

#include <cstdint>
#include <optional>

namespace tilec {

// The process's resident-memory high-water mark (VmHWM in /proc/self/status)
// in bytes; nullopt where the host does not say.
std::optional<std::uint64_t> peak_resident_bytes();

// Restarts that mark at the present resident size (/proc/self/clear_refs),
// so the next reading covers only what runs from now; false when the host
// refuses.
bool restart_peak_resident();

// The memory the host could give without swapping (MemAvailable in
// /proc/meminfo) in bytes; nullopt where the host does not say.
std::optional<std::uint64_t> available_memory_bytes();

}  // namespace tilec
