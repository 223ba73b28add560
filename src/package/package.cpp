#include "package/package.h"

namespace tilec::package {

Package make_empty_package(const MachineModel& model) {
  Package package;
  package.target = model.name;
  package.tiles.resize(model.tiles);
  return package;
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
