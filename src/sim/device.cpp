// Loading a package into the device, and a run: supersteps of an exchange
// phase on every tile, exchange resolution, a compute phase, and the global
// sync. Tiles are simulated in parallel between these points, each touching
// only its own state, so a run is the same on any number of threads.
#include "sim/device.h"

#include "numerics/fp8.h"
#include "sim/device_state.h"
#include "sim/exchange.h"
#include "support/error.h"
#include "support/parallel.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace tilec::sim {

std::uint64_t RunResult::total_bundles() const {
  std::uint64_t total = 0;
  for (const TileStats& tile : tiles) total += tile.bundles;
  return total;
}

std::uint64_t RunResult::total_amp_macs() const {
  std::uint64_t total = 0;
  for (const TileStats& tile : tiles) total += tile.total_amp_macs();
  return total;
}

DeviceState::DeviceState(const package::Package& package, const MachineModel& machine)
    : machine_(machine), groups_(package.exchange_groups), bindings_(package.bindings) {
  TILEC_CHECK(machine.worker_contexts == kWorkers && machine.issue_slots == kSlots,
              "the simulator models {} workers in {} issue slots", kWorkers, kSlots);
  if (package.tiles.size() != machine.tiles)
    throw_bad_input("package", "has {} tile images but target '{}' has {} tiles",
                    package.tiles.size(), machine.name, machine.tiles);
  if (groups_.size() > 0x10000)
    throw_bad_input("package", "has {} exchange groups (at most 65536)", groups_.size());
  for (std::size_t group = 0; group < groups_.size(); ++group)
    for (std::uint32_t tile : groups_[group])
      if (tile >= machine.tiles)
        throw_bad_input("package", "exchange group {} names tile {}, outside 0..{}", group, tile,
                        machine.tiles - 1);

  config_.tiles = machine.tiles;
  config_.memory_begin = machine.memory_begin;
  config_.memory_bytes = machine.memory_bytes();
  config_.interleaved_begin = machine.interleaved.begin;
  config_.interleaved_bytes = machine.interleaved.bytes();
  config_.standard_begin = machine.standard.begin;
  config_.standard_bytes = machine.standard.bytes();
  config_.exchange_bytes_per_cycle = machine.exchange_bytes_per_cycle;
  config_.amp_fp8 = machine.amp_fp8;
  config_.exchange_groups = static_cast<std::uint32_t>(groups_.size());
  config_.fp8_tables[0] = fp8_table(ElementType::F143).data();
  config_.fp8_tables[1] = fp8_table(ElementType::F152).data();

  for (const char* fixed : {"exchange", "sync", "halt", ""}) intern_label(fixed);

  // Zeroed pages come from the system lazily: untouched memory costs nothing.
  std::size_t bytes = std::size_t{machine.tiles} * config_.memory_bytes;
  memory_.reset(static_cast<std::uint8_t*>(std::calloc(bytes, 1)));
  if (!memory_) throw_failure("simulator", "cannot allocate {} bytes of tile memory", bytes);

  tiles_.resize(machine.tiles);
  std::unordered_map<const void*, std::shared_ptr<DecodedCode>> decoded;
  for (std::uint32_t index = 0; index < machine.tiles; ++index)
    load_tile(index, package.tiles[index], decoded);

  for (std::size_t i = 0; i < bindings_.size(); ++i) {
    check_binding(bindings_[i]);
    const bool output = bindings_[i].role == package::BindingRole::Output;
    for (std::size_t j = 0; j < i; ++j)
      if (bindings_[j].name == bindings_[i].name && (bindings_[j].role == package::BindingRole::Output) == output)
        throw_bad_input("package", "two {} are named '{}'", output ? "outputs" : "inputs or parameters",
                        bindings_[i].name);
  }
}

void DeviceState::load_tile(std::uint32_t index, const package::TileImage& image,
                            std::unordered_map<const void*, std::shared_ptr<DecodedCode>>& decoded) {
  TileState& tile = tiles_[index];
  tile.index = index;
  tile.config = &config_;
  tile.memory = memory_.get() + std::size_t{index} * config_.memory_bytes;
  tile.entry = image.entry;
  std::string where = fmt::format("package: tile {}", index);

  std::vector<const package::Segment*> segments;
  for (const package::Segment& segment : image.segments) segments.push_back(&segment);
  std::sort(segments.begin(), segments.end(),
            [](const auto* a, const auto* b) { return a->address < b->address; });
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const package::Segment& segment = *segments[i];
    if (segment.size() == 0) continue;
    if (segment.address < machine_.memory_begin ||
        std::uint64_t{segment.address} + segment.size() > machine_.memory_end)
      throw_bad_input(where, "segment '{}' ({:#x}..{:#x}) lies outside the tile's memory",
                      segment.name, segment.address, std::uint64_t{segment.address} + segment.size());
    if (i + 1 < segments.size() && segments[i + 1]->size() > 0 &&
        segments[i + 1]->address < segment.address + segment.size())
      throw_bad_input(where, "segments '{}' and '{}' overlap", segment.name, segments[i + 1]->name);
    std::memcpy(tile.at(segment.address), segment.bytes->data(), segment.size());
    tile.touch(segment.address, segment.size());
    if (!segment.executable) continue;
    if (!machine_.standard.contains(segment.address, segment.size()) ||
        segment.address % isa::kBundleBytes || segment.size() % isa::kBundleBytes)
      throw_bad_input(where,
                      "code segment '{}' ({:#x}..{:#x}) must be whole 8-byte bundles in standard "
                      "memory",
                      segment.name, segment.address, segment.address + segment.size());
    std::shared_ptr<DecodedCode>& code = decoded[segment.bytes.get()];
    if (!code) code = decode_code(segment.bytes->data(), segment.size());
    tile.code.add_region(segment.address, code);
  }

  tile.idle = image.entry == 0 &&
              std::none_of(segments.begin(), segments.end(), [](const auto* s) { return s->executable; });
  for (const package::Symbol& symbol : image.symbols)
    if (symbol.kind == package::SymbolKind::Op)
      tile.op_labels.push_back(OpLabel{symbol.address, symbol.address + symbol.size, intern_label(symbol.name)});
    else if (symbol.kind != package::SymbolKind::Data)
      tile.kernel_labels.push_back(EntryLabel{symbol.address, intern_label(symbol.name)});
  std::sort(tile.op_labels.begin(), tile.op_labels.end(),
            [](const OpLabel& a, const OpLabel& b) { return a.begin < b.begin; });
  std::stable_sort(tile.kernel_labels.begin(), tile.kernel_labels.end(),
                   [](const EntryLabel& a, const EntryLabel& b) { return a.address < b.address; });
}

std::uint32_t DeviceState::intern_label(const std::string& label) {
  auto [it, added] = label_index_.emplace(label, static_cast<std::uint32_t>(labels_.size()));
  if (added) labels_.push_back(label);
  return it->second;
}

void DeviceState::run_tiles(const std::vector<std::uint32_t>& indices) {
  parallel_for(0, indices.size(), [&](std::size_t i) { run_tile(tiles_[indices[i]]); });
}

// The fault that happened first (lowest cycle, then lowest tile).
void DeviceState::throw_first_fault(const std::vector<std::uint32_t>& indices) const {
  const TileState* first = nullptr;
  for (std::uint32_t index : indices) {
    const TileState& tile = tiles_[index];
    if (tile.stop == Stop::Fault && (!first || tile.fault_cycle < first->fault_cycle)) first = &tile;
  }
  if (!first) return;
  Fault fault = *first->fault;
  fault.set_cycle(first->fault_cycle);
  throw fault;
}

// Per memory class, from its start to one past the highest byte touched.
std::uint32_t DeviceState::memory_bytes(const TileState& tile) const {
  return (tile.standard_high ? tile.standard_high - machine_.standard.begin : 0) +
         (tile.interleaved_high ? tile.interleaved_high - machine_.interleaved.begin : 0);
}

// What the tiles did up to `fault`: their statistics, halts, and the
// profile events recorded so far.
std::shared_ptr<const RunResult> DeviceState::run_up_to(const Fault& fault, std::uint64_t syncs) {
  auto result = std::make_shared<RunResult>();
  result->syncs = syncs;
  result->cycles = fault.cycle() + 1;
  result->tiles.resize(tiles_.size());
  for (TileState& tile : tiles_) {
    const bool halted = tile.stop == Stop::Halt;
    tile.stats.halt_cycle = halted ? tile.stop_cycle : 0;
    tile.stats.memory_bytes = memory_bytes(tile);
    if (halted && tile.tracing)
      tile.events.push_back(ProfileEvent{tile.stop_cycle, tile.stop_cycle, kHaltLabel, 0, ProfileEventKind::Halt,
                                         kSupervisorContext});
    for (const ProfileEvent& event : tile.events) result->cycles = std::max(result->cycles, event.end);
    result->cycles = std::max(result->cycles, tile.stats.halt_cycle);
    result->tiles[tile.index] = tile.stats;
  }
  if (tiles_.front().tracing) result->profile = collect_profile();
  return result;
}

// Exchange and compute phases, then a sync, until every tile has halted.
void DeviceState::run_supersteps(const SimOptions& options, std::uint64_t watchdog, RunResult& result) {
  std::vector<std::uint32_t> live;
  for (const TileState& tile : tiles_)
    if (!tile.idle) live.push_back(tile.index);

  while (!live.empty()) {
    // Exchange phase: every tile up to its xdone, sync or halt.
    run_tiles(live);
    throw_first_fault(live);
    resolve_exchange(tiles_, machine_, groups_);
    std::vector<std::uint32_t> computing;
    for (std::uint32_t index : live) {
      TileState& tile = tiles_[index];
      if (tile.stop == Stop::Xdone) {
        Context& supervisor = tile.contexts[kSupervisor];
        supervisor.next_issue = std::max(supervisor.next_issue, tile.landed);
        tile.phase = Phase::Compute;
        computing.push_back(index);
      } else if (tile.stop == Stop::Sync) {
        tile.arrival = std::max(tile.stop_cycle, tile.landed);
      } else if (tile.stop == Stop::Halt) {
        // A halt also ends the exchange phase: the tile ends once its data is in.
        tile.stop_cycle = std::max(tile.stop_cycle, tile.landed);
      }
      tile.sends.clear();
      tile.recvs.clear();
      tile.payload.clear();
    }
    // Compute phase: up to the sync or halt.
    run_tiles(computing);
    throw_first_fault(computing);

    std::vector<std::uint32_t> at_sync;
    std::uint64_t last_arrival = 0;
    for (std::uint32_t index : live)
      if (tiles_[index].stop == Stop::Sync) {
        at_sync.push_back(index);
        last_arrival = std::max(last_arrival, tiles_[index].arrival);
      }
    if (at_sync.empty()) break;
    for (const TileState& tile : tiles_)
      if (tile.stop == Stop::Halt) {
        Fault fault(tile.index, kSupervisor, tile.stop_pc, tile.stop_bundle,
                    fmt::format("halt while tile {} waits at a sync (arrived in cycle {})", at_sync.front(),
                                tiles_[at_sync.front()].arrival));
        fault.set_cycle(tile.stop_cycle);
        throw fault;
      }

    std::uint64_t release = last_arrival + machine_.sync_cycles;
    for (std::uint32_t index : at_sync) {
      TileState& tile = tiles_[index];
      tile.stats.sync_wait_cycles += release - tile.stop_cycle;
      if (tile.tracing)
        tile.events.push_back(ProfileEvent{tile.stop_cycle, release, kSyncLabel,
                                           static_cast<std::uint32_t>(result.syncs),
                                           ProfileEventKind::SyncWait, kSupervisorContext});
      tile.release = release;
      tile.deadline = std::min(release + std::min(watchdog, std::numeric_limits<std::uint64_t>::max() - release),
                               options.max_cycles - 1);
      tile.phase = Phase::Exchange;
      tile.contexts[kSupervisor].next_issue = release;
      tile.cycle = release;
      tile.stop = Stop::None;
    }
    ++result.syncs;
    if (options.record_profile && options.on_events) hand_over_events(options);
    if (options.on_progress) options.on_progress(release);
    live = std::move(at_sync);
  }
}

RunResult DeviceState::run(const SimOptions& options) {
  std::uint64_t watchdog = options.watchdog_cycles ? options.watchdog_cycles : machine_.watchdog_cycles;
  if (options.max_cycles == 0) throw_bad_input("--max-cycles 0", "a run needs at least one cycle");
  for (TileState& tile : tiles_) {
    reset_tile(tile, watchdog, options.max_cycles);
    tile.tracing = options.record_profile;
  }
  RunResult result;
  try {
    run_supersteps(options, watchdog, result);
  } catch (Fault& fault) {
    fault.set_partial_run(run_up_to(fault, result.syncs));
    throw;
  }

  result.tiles.resize(tiles_.size());
  for (TileState& tile : tiles_) {
    tile.stats.halt_cycle = tile.stop_cycle;
    tile.stats.memory_bytes = memory_bytes(tile);
    if (tile.tracing && !tile.idle)
      tile.events.push_back(ProfileEvent{tile.stop_cycle, tile.stop_cycle, kHaltLabel, 0,
                                         ProfileEventKind::Halt, kSupervisorContext});
    result.tiles[tile.index] = tile.stats;
    result.cycles = std::max(result.cycles, tile.stop_cycle);
  }
  if (options.record_profile && options.on_events) {
    hand_over_events(options);
    result.profile.labels = labels_;
  } else if (options.record_profile) {
    result.profile = collect_profile();
  }
  if (options.on_progress) options.on_progress(result.cycles);
  return result;
}

void DeviceState::order_events(TileState& tile) {
  for (ProfileEvent& event : tile.events)
    if (event.label == kUnnamedKernel) event.label = intern_label(fmt::format("worker@{:#x}", event.detail));
  std::stable_sort(tile.events.begin(), tile.events.end(), [](const ProfileEvent& a, const ProfileEvent& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.context < b.context;
  });
}

Profile DeviceState::collect_profile() {
  Profile profile;
  profile.tiles.resize(tiles_.size());
  for (TileState& tile : tiles_) {
    order_events(tile);
    profile.tiles[tile.index] = std::move(tile.events);
    tile.events.clear();
  }
  profile.labels = labels_;
  return profile;
}

// No event straddles a sync's release (every context waits at it), so the
// batches of a tile are its whole profile's events in order.
void DeviceState::hand_over_events(const SimOptions& options) {
  for (TileState& tile : tiles_) {
    if (tile.events.empty()) continue;
    order_events(tile);
    options.on_events(tile.index, tile.events);
    tile.events.clear();
  }
}

Device::Device(const package::Package& package, const MachineModel& machine)
    : state_(std::make_unique<DeviceState>(package, machine)) {}
Device::~Device() = default;
Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;

void Device::write(const std::string& binding, const graph::Tensor& data) { state_->write(binding, data); }
graph::Tensor Device::read(const std::string& binding) const { return state_->read(binding); }
std::uint32_t Device::read_word(std::uint32_t tile, std::uint32_t address) const {
  return state_->read_word(tile, address);
}
RunResult Device::run(const SimOptions& options) { return state_->run(options); }
const MachineModel& Device::machine() const { return state_->machine(); }

}  // namespace tilec::sim
