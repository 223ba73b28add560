// The device behind sim::Device: the machine, every tile's state and
// memory, the package's exchange groups and bindings, and the label table
// of the profile.
#pragma once

#include "package/package.h"
#include "sim/tile_state.h"
#include "target/machine.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tilec::sim {

struct FreeMemory {
  void operator()(std::uint8_t* memory) const { std::free(memory); }
};

class DeviceState {
 public:
  DeviceState(const package::Package& package, const MachineModel& machine);

  void write(const std::string& name, const graph::Tensor& data);
  graph::Tensor read(const std::string& name) const;
  std::uint32_t read_word(std::uint32_t tile, std::uint32_t address) const;
  RunResult run(const SimOptions& options);

  const MachineModel& machine() const { return machine_; }

 private:
  void load_tile(std::uint32_t index, const package::TileImage& image,
                 std::unordered_map<const void*, std::shared_ptr<DecodedCode>>& decoded);
  void check_binding(const package::Binding& binding) const;
  // The input or parameter of that name; with `output`, the output of that
  // name, or else any binding of it (reading back an input or parameter).
  const package::Binding& binding(const std::string& name, bool output) const;
  std::uint32_t intern_label(const std::string& label);
  // Phases of a run.
  void run_tiles(const std::vector<std::uint32_t>& indices);
  void throw_first_fault(const std::vector<std::uint32_t>& indices) const;
  // A tile's events in the order of Profile::tiles, unnamed kernels labelled.
  void order_events(TileState& tile);
  Profile collect_profile();
  // Each tile's events so far to SimOptions::on_events, then forgotten.
  void hand_over_events(const SimOptions& options);
  void run_supersteps(const SimOptions& options, std::uint64_t watchdog, RunResult& result);
  std::shared_ptr<const RunResult> run_up_to(const Fault& fault, std::uint64_t syncs);
  std::uint32_t memory_bytes(const TileState& tile) const;

  MachineModel machine_;
  SimConfig config_;
  std::vector<std::vector<std::uint32_t>> groups_;
  std::vector<package::Binding> bindings_;
  std::vector<std::string> labels_;
  std::unordered_map<std::string, std::uint32_t> label_index_;
  // Every tile's memory, one block: tile i's is at i * memory_bytes.
  std::unique_ptr<std::uint8_t, FreeMemory> memory_;
  std::vector<TileState> tiles_;
};

}  // namespace tilec::sim
