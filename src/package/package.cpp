#include "package/package.h"

namespace tilec::package {

Package make_empty_package(const MachineModel& model) {
  Package package;
  package.target = model.name;
  package.tiles.resize(model.tiles);
  return package;
}

std::uint64_t Schedule::run_supersteps() const {
  const std::uint64_t body = repeat.empty() ? 0 : static_cast<std::uint64_t>(repeat_last - repeat_first + 1);
  return static_cast<std::uint64_t>(chunks) * (supersteps + body * (repeat_count - 1));
}

std::string_view binding_role_name(BindingRole role) {
  switch (role) {
    case BindingRole::Input: return "input";
    case BindingRole::Parameter: return "parameter";
    case BindingRole::Output: return "output";
  }
  return "?";
}

}  // namespace tilec::package
