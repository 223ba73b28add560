// What produced a case's figures, and digests to recognise them again: a
// sweep resumes a finished case only when the key it would run under now is
// the stored one, and the stored outputs and record are as they were
// written (docs/bench.md, "Resuming").
#pragma once

#include "graph/graph.h"
#include "graph/tensor.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilec::bench {

struct CaseKey {
  std::string graph;    // digest of the graph in the file format
  std::string data;     // digest of its inputs and parameters
  std::string options;  // target, budget, cycle limit, pass rule
  std::string tilec;    // tilec's version
  std::string package;  // digest of the package file's bytes; "" when none was built

  bool operator==(const CaseKey&) const = default;
};

// "xxh64:0123456789abcdef".
std::string bytes_digest(const void* bytes, std::size_t size);
// Over every tensor's name, type and bytes, in name order.
std::string tensors_digest(const graph::TensorMap& tensors);

// The key without the package (`package` left "").
CaseKey case_key(const graph::Graph& graph, const graph::TensorMap& data, const std::string& options);

nlohmann::ordered_json key_json(const CaseKey& key);
// nullopt for a missing or malformed key.
std::optional<CaseKey> key_from_json(const nlohmann::ordered_json& json);

}  // namespace tilec::bench
