// The barrel issue loop of one tile (docs/isa.md, "Issue: barrel
// scheduling"): cycle c belongs to slot c mod 6; worker k issues in every
// cycle of slot k while it runs; the supervisor issues in a cycle whose slot
// no running worker owns, at most once every 6 cycles, and not while it
// waits. Cycles in which nothing can issue are skipped in one step.
#include "sim/semantics.h"
#include "sim/tile_state.h"

#include <algorithm>
#include <limits>

namespace tilec::sim {

namespace {

const char* access_name(Access access) { return access == Access::Load ? "load" : "store"; }

}  // namespace

void memory_fault(const TileState& tile, int context, std::uint32_t pc, const DecodedBundle& bundle,
                  Access access, std::uint32_t bytes, std::uint32_t address) {
  const SimConfig& config = *tile.config;
  std::string text = bundle_text(bundle);
  const char* preposition = access == Access::Load ? "from" : "to";
  std::uint32_t bits = bytes * 8;
  if (address - config.memory_begin > config.memory_bytes - bytes)
    throw Fault(tile.index, context, pc, text,
                fmt::format("{}-bit {} {} {:#x}, outside the tile's memory ({:#x}-{:#x})", bits,
                            access_name(access), preposition, address, config.memory_begin,
                            config.memory_begin + config.memory_bytes));
  if (address & (bytes - 1))
    throw Fault(tile.index, context, pc, text,
                fmt::format("misaligned {}-bit {} {} {:#x}", bits, access_name(access), preposition,
                            address));
  throw Fault(tile.index, context, pc, text,
              fmt::format("{}-bit {} {} {:#x} in standard memory (128-bit accesses reach only "
                          "interleaved memory)",
                          bits, access_name(access), preposition, address));
}

namespace {

// The semantics of `opcode`, which must be an instruction of slot kSlot.
// Generated from the table: every instruction needs a semantics function.
template <isa::Slot kSlot, typename X>
[[gnu::always_inline]] inline void execute(X& x, isa::Opcode opcode) {
  switch (opcode) {
#define INSTRUCTION(id, mnemonic, slot, format, code, flags, doc) \
  case isa::Opcode::id:                                           \
    if constexpr (isa::Slot::slot == kSlot) semantics::id(x);     \
    return;
#include "isa/instructions.def"
#undef INSTRUCTION
    case isa::Opcode::Invalid: return;
  }
}

[[noreturn]] void fetch_fault(TileState& tile, int context, const char* what,
                              std::uint32_t pc) {
  throw Fault(tile.index, context, pc, bundle_text_at(tile, pc), fmt::format(fmt::runtime(what), pc));
}

// A bundle from memory outside the decoded code: checked and decoded now.
const DecodedBundle& fetch_from_memory(TileState& tile, int context) {
  const SimConfig& config = *tile.config;
  std::uint32_t pc = tile.contexts[context].pc;
  if (pc & 7u) fetch_fault(tile, context, "misaligned pc {:#x} (bundles are 8-byte aligned)", pc);
  if (pc - config.interleaved_begin < config.interleaved_bytes)
    fetch_fault(tile, context, "fetch from interleaved memory at {:#x} (code runs from standard memory)", pc);
  if (pc - config.standard_begin > config.standard_bytes - isa::kBundleBytes)
    fetch_fault(tile, context, "fetch from {:#x}, outside the tile's memory", pc);
  std::uint64_t bits;
  std::memcpy(&bits, tile.at(pc), sizeof bits);
  tile.fetched = decode_bundle_bits(bits);
  return tile.fetched;
}

// The checks a bundle with a flagged main-slot instruction (or none that
// decodes) must pass before it executes.
template <bool kSupervisor>
void check_issue(const TileState& tile, int context, const DecodedBundle& bundle) {
  const Context& ctx = tile.contexts[context];
  auto fail = [&](std::string message) {
    throw Fault(tile.index, context, ctx.pc, bundle_text(bundle), std::move(message));
  };
  if (!bundle.valid) {
    auto main_word = static_cast<std::uint32_t>(bundle.bits);
    auto float_word = static_cast<std::uint32_t>(bundle.bits >> 32);
    if (!isa::decode(main_word, isa::Slot::Main))
      fail(fmt::format("undecodable bundle: main-slot word {:#010x} is not a main-slot instruction", main_word));
    fail(fmt::format("undecodable bundle: float-slot word {:#010x} is not a float-slot instruction", float_word));
  }
  const char* mnemonic = isa::spec_of(bundle.main.opcode).mnemonic;
  if (!kSupervisor && (bundle.main_flags & isa::flag::Supervisor))
    fail(fmt::format("{} is a supervisor-only instruction", mnemonic));
  if (kSupervisor && (bundle.main_flags & isa::flag::Worker))
    fail(fmt::format("{} on the supervisor (only workers may use it)", mnemonic));
  if ((bundle.main_flags & isa::flag::Control) && ctx.loop_remaining)
    fail(fmt::format("control instruction {} in a rpt body ({:#x}..{:#x})", mnemonic, ctx.loop_begin,
                     ctx.loop_end));
}

// Past the deadline: the run's cycle limit, or the watchdog since the last sync.
[[noreturn]] void deadline_fault(TileState& tile, int context, std::uint64_t cycle) {
  const std::uint32_t pc = tile.contexts[context].pc;
  if (cycle >= tile.cycle_limit)
    throw Fault(tile.index, context, pc, bundle_text_at(tile, pc),
                fmt::format("cycle limit: the run reached cycle {} without halting (the limit is {} cycles, "
                            "--max-cycles)",
                            cycle, tile.cycle_limit));
  throw Fault(tile.index, context, pc, bundle_text_at(tile, pc),
              fmt::format("watchdog: cycle {} is more than {} cycles after the last sync released "
                          "the tile (cycle {}) without a sync or halt",
                          cycle, tile.deadline - tile.release, tile.release));
}

template <bool kTrace, bool kSupervisor>
[[gnu::always_inline]] inline void issue(TileState& tile, int context, std::uint64_t cycle) {
  Context& ctx = tile.contexts[context];
  if (cycle > tile.deadline) [[unlikely]]
    deadline_fault(tile, context, cycle);
  const DecodedBundle* bundle = tile.code.find(ctx.pc);
  if (!bundle) [[unlikely]]
    bundle = &fetch_from_memory(tile, context);
  if (bundle->main_flags || !bundle->valid) [[unlikely]]
    check_issue<kSupervisor>(tile, context, *bundle);

  Exec<kTrace> x(tile, ctx, *bundle, context, cycle);
  execute<isa::Slot::Main>(x, bundle->main.opcode);
  x.ins = &bundle->flt;
  execute<isa::Slot::Float>(x, bundle->flt.opcode);
  // Fixed-size copies: the compiler inlines them.
  switch (x.pending_count) {
    case 1: std::memcpy(&ctx.a[x.pending_register], x.pending_words, 4); break;
    case 2: std::memcpy(&ctx.a[x.pending_register], x.pending_words, 8); break;
    case 4: std::memcpy(&ctx.a[x.pending_register], x.pending_words, 16); break;
    default: break;
  }
  ctx.m[isa::kMZero] = 0;

  std::uint32_t next = x.next_pc;
  if (ctx.loop_remaining && next == ctx.loop_end && --ctx.loop_remaining) next = ctx.loop_begin;
  ctx.pc = next;
  if constexpr (kSupervisor) ctx.next_issue = std::max(cycle + kSlots, x.stall_until);
  ++tile.stats.bundles;
}

// The first cycle after `cycle` in which some context can issue.
std::uint64_t next_issue_cycle(const TileState& tile, std::uint64_t cycle) {
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  const auto slot = static_cast<std::uint32_t>(cycle % kSlots);
  for (std::uint32_t worker = 0; worker < kWorkers; ++worker)
    if (tile.running_workers >> worker & 1u)
      best = std::min(best, cycle + (worker + kSlots - 1 - slot) % kSlots + 1);
  if (tile.wait == SupervisorWait::None && tile.running_workers != kAllWorkers) {
    std::uint64_t next = std::max(cycle + 1, tile.contexts[kSupervisor].next_issue);
    while (tile.running_workers >> (next % kSlots) & 1u) ++next;
    best = std::min(best, next);
  }
  TILEC_CHECK(best != std::numeric_limits<std::uint64_t>::max(), "tile {} has no context to issue",
              tile.index);
  return best;
}

template <bool kTrace>
void run_loop(TileState& tile) {
  std::uint64_t cycle = tile.cycle;
  auto slot = static_cast<std::uint32_t>(cycle % kSlots);
  const Context& supervisor = tile.contexts[kSupervisor];
  try {
    for (;;) {
      if (tile.running_workers >> slot & 1u) {
        issue<kTrace, false>(tile, static_cast<int>(slot), cycle);
      } else if (tile.wait == SupervisorWait::None && cycle >= supervisor.next_issue) {
        issue<kTrace, true>(tile, kSupervisor, cycle);
      } else {
        cycle = next_issue_cycle(tile, cycle);
        slot = static_cast<std::uint32_t>(cycle % kSlots);
        continue;
      }
      ++cycle;
      slot = slot == kSlots - 1 ? 0 : slot + 1;
      if (tile.stop != Stop::None) [[unlikely]]
        break;
    }
  } catch (const Fault& fault) {
    tile.fault = fault;
    tile.fault_cycle = cycle;
    tile.stop = Stop::Fault;
  }
  tile.cycle = cycle;
}

}  // namespace

void run_tile(TileState& tile) {
  tile.stop = Stop::None;
  if (tile.tracing) run_loop<true>(tile);
  else run_loop<false>(tile);
}

std::string bundle_text_at(TileState& tile, std::uint32_t pc) {
  if (const DecodedBundle* bundle = tile.code.find(pc)) return bundle_text(*bundle);
  const SimConfig& config = *tile.config;
  if ((pc & 7u) || pc - config.memory_begin > config.memory_bytes - isa::kBundleBytes) return "";
  std::uint64_t bits;
  std::memcpy(&bits, tile.memory + (pc - config.memory_begin), sizeof bits);
  return bundle_text(decode_bundle_bits(bits));
}

void reset_tile(TileState& tile, std::uint64_t watchdog_cycles, std::uint64_t cycle_limit) {
  for (Context& context : tile.contexts) context = Context{};
  tile.contexts[kSupervisor].pc = tile.entry;
  tile.running_workers = 0;
  tile.wait = SupervisorWait::None;
  tile.phase = Phase::Exchange;
  tile.cycle = 0;
  tile.release = 0;
  tile.cycle_limit = cycle_limit;
  tile.deadline = std::min(watchdog_cycles, cycle_limit - 1);
  tile.stop = Stop::None;
  tile.stop_cycle = 0;
  tile.stop_pc = 0;
  tile.arrival = 0;
  tile.pattern = ExchangePattern{};
  tile.sends.clear();
  tile.recvs.clear();
  tile.payload.clear();
  tile.landed = 0;
  tile.stats = TileStats{};
  tile.events.clear();
  tile.fault.reset();
}

}  // namespace tilec::sim
