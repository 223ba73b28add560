// check_bindings_match(): a package's bindings against the graph it is run
// with, so that a package cannot relabel, retype or replicate a host tensor.
#include "package/validate.h"

#include "support/error.h"

#include <map>
#include <set>

namespace tilec::package {

namespace {

struct Expected {
  BindingRole role;
  graph::TensorType type;
};

}  // namespace

void check_bindings_match(const Package& package, const graph::Graph& graph) {
  // A tensor nothing reads (CastLike's `like` gives only a type) needs no
  // binding; if a package binds it anyway, it is checked like the rest.
  std::set<graph::ValueId> read;
  for (const graph::Op& op : graph.ops) read.insert(op.operands.begin(), op.operands.end());
  for (const auto& [name, value] : graph.outputs) read.insert(value);
  std::map<std::string, Expected, std::less<>> expected;
  std::set<std::string, std::less<>> optional;
  const auto expect = [&](const graph::Op* op, BindingRole role) {
    expected.emplace(op->name, Expected{role, graph.type(op->results.at(0))});
    if (!read.contains(op->results.at(0))) optional.insert(op->name);
  };
  for (const graph::Op* op : graph.inputs()) expect(op, BindingRole::Input);
  for (const graph::Op* op : graph.parameters()) expect(op, BindingRole::Parameter);
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
    if (!seen.contains(name) && !optional.contains(name))
      throw_bad_input(fmt::format("{} '{}'", binding_role_name(want.role), name), "the package has no binding for it");
}

}  // namespace tilec::package
