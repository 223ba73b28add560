// check_bindings_match(): a package's bindings against the graph it is run
// with, so that a package cannot relabel, retype or replicate a host tensor.
#include "package/validate.h"

#include "support/error.h"

#include <map>

namespace tilec::package {

namespace {

struct Expected {
  BindingRole role;
  graph::TensorType type;
};

}  // namespace

void check_bindings_match(const Package& package, const graph::Graph& graph) {
  std::map<std::string, Expected, std::less<>> expected;
  for (const graph::Op* op : graph.inputs())
    expected.emplace(op->name, Expected{BindingRole::Input, graph.type(op->results.at(0))});
  for (const graph::Op* op : graph.parameters())
    expected.emplace(op->name, Expected{BindingRole::Parameter, graph.type(op->results.at(0))});
  for (const auto& [name, value] : graph.outputs) expected.emplace(name, Expected{BindingRole::Output, graph.type(value)});

  std::map<std::string, int, std::less<>> seen;
  for (const Binding& binding : package.bindings) {
    const std::string where = fmt::format("binding '{}'", binding.name);
    const auto found = expected.find(binding.name);
    if (found == expected.end())
      throw_bad_input(where, "the graph has no input, parameter or output of that name");
    if (++seen[binding.name] > 1) throw_bad_input(where, "is bound twice (a host tensor has one binding)");
    const Expected& want = found->second;
    if (binding.role != want.role)
      throw_bad_input(where, "is bound as {}, but it is the graph's {}", binding_role_name(binding.role),
                      binding_role_name(want.role));
    if (!(binding.type == want.type))
      throw_bad_input(where, "is {}, but the graph's {} is {}", graph::type_text(binding.type),
                      binding_role_name(want.role), graph::type_text(want.type));
  }
  for (const auto& [name, want] : expected)
    if (seen.find(name) == seen.end())
      throw_bad_input(fmt::format("{} '{}'", binding_role_name(want.role), name), "the package has no binding for it");
}

}  // namespace tilec::package
