#include "package/package.h"

namespace tilec::package {

Package make_empty_package(const MachineModel& model) {
  Package package;
  package.target = model.name;
  package.tiles.resize(model.tiles);
  return package;
}

}  // namespace tilec::package
