#include "bench/case_key.h"

#include "graph/json_format.h"
#include "support/version.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <memory>

namespace tilec::bench {

namespace {

std::string digest_of(XXH64_state_t* state) { return fmt::format("xxh64:{:016x}", XXH64_digest(state)); }

using State = std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)>;

State new_state() {
  State state(XXH64_createState(), &XXH64_freeState);
  XXH64_reset(state.get(), 0);
  return state;
}

// Each part with its length, so that no two sequences of parts collide by
// shifting bytes between neighbours.
void add_part(XXH64_state_t* state, const void* bytes, std::size_t size) {
  const std::uint64_t length = size;
  XXH64_update(state, &length, sizeof length);
  XXH64_update(state, bytes, size);
}

}  // namespace

std::string bytes_digest(const void* bytes, std::size_t size) {
  State state = new_state();
  add_part(state.get(), bytes, size);
  return digest_of(state.get());
}

std::string tensors_digest(const graph::TensorMap& tensors) {
  State state = new_state();
  for (const auto& [name, tensor] : tensors) {
    const std::string type = graph::type_text(tensor.type);
    add_part(state.get(), name.data(), name.size());
    add_part(state.get(), type.data(), type.size());
    add_part(state.get(), tensor.bytes.data(), tensor.bytes.size());
  }
  return digest_of(state.get());
}

CaseKey case_key(const graph::Graph& graph, const graph::TensorMap& data, const std::string& options) {
  const std::string text = graph::write_graph_json(graph);
  CaseKey key;
  key.graph = bytes_digest(text.data(), text.size());
  key.data = tensors_digest(data);
  key.options = options;
  key.tilec = kVersion;
  return key;
}

nlohmann::ordered_json key_json(const CaseKey& key) {
  return {{"graph", key.graph},   {"data", key.data},       {"options", key.options},
          {"tilec", key.tilec},   {"package", key.package}};
}

std::optional<CaseKey> key_from_json(const nlohmann::ordered_json& json) {
  if (!json.is_object()) return std::nullopt;
  CaseKey key;
  for (auto [field, name] : {std::pair{&key.graph, "graph"}, {&key.data, "data"}, {&key.options, "options"},
                             {&key.tilec, "tilec"}, {&key.package, "package"}}) {
    const auto found = json.find(name);
    if (found == json.end() || !found->is_string()) return std::nullopt;
    *field = found->get<std::string>();
  }
  return key;
}

}  // namespace tilec::bench
