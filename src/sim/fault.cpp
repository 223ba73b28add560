#include "sim/fault.h"

#include "sim/profile_events.h"

#include <fmt/format.h>

namespace tilec::sim {

std::string context_name(int context) {
  return context == kSupervisorContext ? std::string("supervisor") : fmt::format("worker {}", context);
}

namespace {
std::string place(std::uint32_t tile, int context, std::uint32_t pc, const std::string& bundle) {
  std::string where = fmt::format("tile {}, {}, pc {:#x}", tile, context_name(context), pc);
  where += bundle.empty() ? std::string(" (no instruction could be read)") : " (" + bundle + ")";
  return where;
}
}  // namespace

Fault::Fault(std::uint32_t tile, int context, std::uint32_t pc, std::string bundle,
             std::string message)
    : Error(ErrorKind::Failure, place(tile, context, pc, bundle), std::move(message)),
      tile_(tile),
      context_(context),
      pc_(pc),
      bundle_(std::move(bundle)) {}

}  // namespace tilec::sim
