// The profile event stream of a simulated run: per tile, compact spans of
// what each context was doing, in simulated cycles, with their names kept
// once in a label table. The profile layer renders and queries these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tilec::sim {

enum class ProfileEventKind : std::uint8_t {
  WorkerKernel,        // a worker from `run` to its `exit`
  SupervisorExchange,  // the cycles a `send` keeps the supervisor busy
  SyncWait,            // the supervisor from its `sync` to the release
  Halt,                // the tile's `halt` (begin == end)
};

// Context numbers: workers 0..5, then the supervisor.
constexpr std::uint8_t kSupervisorContext = 6;

// Indices of the fixed labels in every Profile::labels.
constexpr std::uint32_t kExchangeLabel = 0;  // "exchange"
constexpr std::uint32_t kSyncLabel = 1;      // "sync"
constexpr std::uint32_t kHaltLabel = 2;      // "halt"
constexpr std::uint32_t kNoOpLabel = 3;      // "" (an event that serves no named op)

struct ProfileEvent {
  std::uint64_t begin = 0;  // cycle of the first issue
  std::uint64_t end = 0;    // cycle the span ends (exclusive; == begin for Halt)
  std::uint32_t label = 0;  // index into Profile::labels
  // WorkerKernel: entry address; SupervisorExchange: bytes sent;
  // SyncWait: which sync of the run (0, 1, ...); Halt: 0.
  std::uint32_t detail = 0;
  ProfileEventKind kind = ProfileEventKind::Halt;
  std::uint8_t context = kSupervisorContext;
  // The graph op or ops the span serves, an index into Profile::labels:
  // WorkerKernel, the op symbol around the worker's argument block;
  // SupervisorExchange, the op symbol around the send; kNoOpLabel
  // otherwise or without one.
  std::uint32_t op = kNoOpLabel;
  // WorkerKernel: the AMP instructions the worker issued and their MACs.
  std::uint32_t amp_instructions = 0;
  std::uint32_t amp_macs = 0;
  // SupervisorExchange: where the bytes go, as `send` names it: a tile, or
  // kMulticastPeer | an exchange group of the package; 0 otherwise.
  std::uint32_t peer = 0;

  bool operator==(const ProfileEvent&) const = default;
};

constexpr std::uint32_t kMulticastPeer = 0x80000000u;

struct Profile {
  // Kernel labels are the package symbol whose address is the worker's
  // entry, else "worker@0x..."; op labels the names of op symbols. The
  // fixed labels come first.
  std::vector<std::string> labels;
  // Per tile, in the order the events began (ties: context order).
  std::vector<std::vector<ProfileEvent>> tiles;
};

}  // namespace tilec::sim
