#include "compiler/tile_code.h"

#include "compiler/kernel_plan.h"
#include "isa/code_builder.h"
#include "support/error.h"
#include "support/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace tilec::compiler {

namespace {

using isa::Instruction;
using isa::Opcode;

constexpr int kScratchAddress = 1, kScratchLength = 2, kScratchPeer = 3;
constexpr int kEntry = 5, kBlock = 6, kPatternRun = 7, kPatternStride = 8;
constexpr int kIteration = 11, kChunk = 12, kIterationsLeft = 13, kChunksLeft = 14;
// Once a phase's exchange is issued its registers are free: while the
// phase's tasks start, they hold the moving addresses the argument blocks
// are patched with.
constexpr std::array<int, 7> kHeldAddresses{2, 3, 4, 7, 8, 9, 10};
constexpr std::int64_t kMostAddiStep = 32767;

Instruction make(Opcode opcode, std::initializer_list<std::int32_t> operands) {
  Instruction instruction{opcode, {}};
  int i = 0;
  for (std::int32_t operand : operands) instruction.operands[static_cast<std::size_t>(i++)] = operand;
  return instruction;
}

class SupervisorEmitter {
 public:
  SupervisorEmitter(const TileCodeContext& context, int tile, const ExchangeCode& exchange,
                    TileArguments& arguments)
      : context_(context), lir_(context.lir), tile_(tile), code_(fmt::format("tile {}", tile)),
        exchange_(exchange), arguments_(arguments) {
    const GroupPlan& groups = lir_.mid->groups;
    group_tile_ = tile % groups.group_size;
    in_group_ = tile / groups.group_size < groups.groups;
    code_.section(".text", {.executable = true, .memory = isa::MemoryWish::Standard});
  }

  TileCode emit() {
    const GroupPlan& groups = lir_.mid->groups;
    const bool chunk_loop = groups.chunks > 1;
    if (chunk_loop) {
      set(kChunk, 0);
      set(kChunksLeft, static_cast<std::uint32_t>(groups.chunks));
    }
    if (lir_.repeat_first_phase == 0) start_iterations();
    if (chunk_loop) code_.label("chunk");
    for (int phase = 0; phase < lir_.phases; ++phase) {
      if (phase == lir_.repeat_first_phase) code_.label("iteration");
      emit_phase(phase);
      if (phase == lir_.repeat_last_phase)
        step_loop(kIterationsLeft, kIteration, lir_.iteration_record_bytes, "iteration", "iterations_done");
      if (phase + 1 < lir_.phases) {
        if (phase + 1 == lir_.repeat_first_phase) start_iterations();
        instruction(make(Opcode::Sync, {}));
      }
    }
    if (chunk_loop) {
      if (lir_.repeat_first_phase == 0) {
        // The next chunk's first phase opens the repeat again.
        instruction(make(Opcode::Addi, {kChunksLeft, kChunksLeft, -1}));
        code_.instruction(isa::Operation(make(Opcode::Brz, {kChunksLeft, 0}), isa::SymbolRef{"chunks_done"}));
        set(kScratchAddress, lir_.chunk_record_bytes);
        instruction(make(Opcode::Add, {kChunk, kChunk, kScratchAddress}));
        start_iterations();
        instruction(make(Opcode::Sync, {}));
        code_.instruction(isa::Operation(make(Opcode::Br, {0}), isa::SymbolRef{"chunk"}));
        code_.label("chunks_done");
      } else {
        step_loop(kChunksLeft, kChunk, lir_.chunk_record_bytes, "chunk", "chunks_done");
      }
    }
    instruction(make(Opcode::Halt, {}));
    isa::Object object = code_.finish();
    TileCode result;
    result.code = std::move(object.sections.at(0).bytes);
    result.arguments = std::move(arguments_.bytes);
    result.sends = std::move(sends_);
    return result;
  }

 private:
  void start_iterations() {
    set(kIteration, 0);
    set(kIterationsLeft, static_cast<std::uint32_t>(lir_.mid->repeat_count));
  }

  // Loop back edge: count down; while more remain, advance the offset
  // register by `stride`, sync and branch back (one bundle after the sync,
  // within the phase prologue the exchange schedule allows).
  void step_loop(int left, int offset, std::uint32_t stride, const char* head, const char* done) {
    instruction(make(Opcode::Addi, {left, left, -1}));
    code_.instruction(isa::Operation(make(Opcode::Brz, {left, 0}), isa::SymbolRef{done}));
    set(kScratchAddress, stride);
    instruction(make(Opcode::Add, {offset, offset, kScratchAddress}));
    instruction(make(Opcode::Sync, {}));
    code_.instruction(isa::Operation(make(Opcode::Br, {0}), isa::SymbolRef{head}));
    code_.label(done);
  }

  void instruction(const Instruction& instruction) { code_.instruction(isa::Operation(instruction)); }

  // Loads a 32-bit constant: setzi, and sethi when it needs more than 20 bits.
  void set(int reg, std::uint32_t value) {
    instruction(make(Opcode::Setzi, {reg, static_cast<std::int32_t>(value & 0xfffffu)}));
    if (value >= (1u << 20)) instruction(make(Opcode::Sethi, {reg, static_cast<std::int32_t>(value >> 16)}));
  }

  std::uint32_t base_address(const Place& place) const {
    if (!context_.map) return 0;
    return lir_.buffers[static_cast<std::size_t>(place.buffer)].address + place.offset;
  }

  // reg = address of `place` in the current chunk and iteration.
  void address(int reg, const Place& place) {
    set(reg, base_address(place));
    if (place.chunk_stride) instruction(make(Opcode::Add, {reg, reg, kChunk}));
    if (place.iteration_stride) instruction(make(Opcode::Add, {reg, reg, kIteration}));
  }

  void set_cached(int reg, std::uint32_t value, std::int64_t& cache) {
    if (cache == value) return;
    set(reg, value);
    cache = value;
  }

  void emit_phase(int phase) {
    const auto& exchange = exchange_[static_cast<std::size_t>(phase)][static_cast<std::size_t>(tile_)];
    // The k-th send or sendn is the k-th send action's (lower_exchanges).
    std::vector<int> send_ops;
    for (const ExchangeAction& action : context_.exchanges.actions[static_cast<std::size_t>(phase)][static_cast<std::size_t>(tile_)])
      if (action.kind == ExchangeAction::Kind::Send)
        send_ops.push_back(lir_.transfers[static_cast<std::size_t>(action.transfer)].op);
    std::size_t sends = 0;
    for (const Instruction& instruction : exchange) {
      if (instruction.opcode == Opcode::Send || instruction.opcode == Opcode::Sendn)
        sends_.push_back(SendSite{code_.offset(), send_ops.at(sends++)});
      this->instruction(instruction);
    }
    const auto tasks = tasks_in(phase);
    if (!exchange.empty() || !tasks.empty()) instruction(make(Opcode::Xdone, {}));
    std::int64_t entry = -1;
    for (const auto& [index, position] : tasks) {
      const Task& task = lir_.tasks[static_cast<std::size_t>(index)];
      const isa::LinkedSymbol* symbol = context_.library.find(task.kernel);
      TILEC_CHECK(symbol, "kernel '{}' is not in the library", task.kernel);
      set_cached(kEntry, symbol->address, entry);
      const auto& blocks = arguments_.block_addresses.at(position);
      HeldAddresses held;
      for (std::size_t worker = 0; worker < task.worker_arguments.size(); ++worker) {
        const auto& words = task.worker_arguments[worker];
        set(kBlock, blocks[worker]);
        for (std::size_t word = 0; word < words.size(); ++word) {
          if (!words[word].is_address() || !words[word].place.varies()) continue;
          const int reg = moving_address(words[word].place, held);
          instruction(make(Opcode::Stw, {reg, kBlock, static_cast<std::int32_t>(word * 4)}));
        }
        instruction(make(Opcode::Run, {kEntry, kBlock}));
      }
      instruction(make(Opcode::Wsync, {}));
    }
  }

  // The moving places a task's patches have put in registers: the first
  // place of each buffer and stride, by the held register.
  struct HeldAddress {
    Place place;
    int reg;
  };
  using HeldAddresses = std::vector<HeldAddress>;

  // A register holding `place`'s address now: one already holding it, or
  // a step from one holding the same buffer's (addi), or a new one loaded
  // (kScratchAddress once every held register is taken). Keyed by place,
  // not address, so sizing (every address 0) emits as many bundles.
  int moving_address(const Place& place, HeldAddresses& held) {
    for (const HeldAddress& h : held) {
      if (h.place.buffer != place.buffer || h.place.chunk_stride != place.chunk_stride ||
          h.place.iteration_stride != place.iteration_stride)
        continue;
      const std::int64_t step = static_cast<std::int64_t>(place.offset) - h.place.offset;
      if (step == 0) return h.reg;
      if (step < -kMostAddiStep || step > kMostAddiStep) continue;
      instruction(make(Opcode::Addi, {kScratchAddress, h.reg, static_cast<std::int32_t>(step)}));
      return kScratchAddress;
    }
    const int reg = held.size() < kHeldAddresses.size() ? kHeldAddresses[held.size()] : kScratchAddress;
    address(reg, place);
    if (reg != kScratchAddress) held.push_back({place, reg});
    return reg;
  }

  // The tile's tasks of a phase: (task, its position among the tile's).
  std::vector<std::pair<int, std::size_t>> tasks_in(int phase) const {
    std::vector<std::pair<int, std::size_t>> result;
    if (!in_group_ || lir_.tasks_of_tile.empty()) return result;  // a plan of transfers alone
    const std::vector<int>& own = lir_.tasks_of_tile[static_cast<std::size_t>(group_tile_)];
    for (std::size_t position = 0; position < own.size(); ++position)
      if (lir_.tasks[static_cast<std::size_t>(own[position])].superstep == phase) result.emplace_back(own[position], position);
    return result;
  }

  const TileCodeContext& context_;
  const Lir& lir_;
  int tile_;
  int group_tile_ = 0;
  bool in_group_ = true;
  isa::CodeBuilder code_;
  const ExchangeCode& exchange_;
  TileArguments& arguments_;
  std::vector<SendSite> sends_;
};

std::uint32_t place_address(const TileCodeContext& context, const Place& place) {
  if (!context.map) return 0;
  return context.lir.buffers[static_cast<std::size_t>(place.buffer)].address + place.offset;
}

// One tile's exchange instructions for one phase: what the scheduler
// counted in exchange_action_code, in the same order.
std::vector<Instruction> exchange_instructions(const TileCodeContext& context, int phase, int tile) {
  std::vector<Instruction> code;
  auto set = [&](int reg, std::uint32_t value) {
    code.push_back(make(Opcode::Setzi, {reg, static_cast<std::int32_t>(value & 0xfffffu)}));
    if (value >= (1u << 20)) code.push_back(make(Opcode::Sethi, {reg, static_cast<std::int32_t>(value >> 16)}));
  };
  ExchangeRegisters registers;
  const Lir& lir = context.lir;
  std::size_t previous = 0;  // the last send or recv
  std::vector<ActionCode> receive_codes;
  std::vector<std::size_t> receive_at;  // each receive's recv in `code`
  for (const ExchangeAction& action : context.exchanges.actions[static_cast<std::size_t>(phase)][static_cast<std::size_t>(tile)]) {
    const Transfer& transfer = lir.transfers[static_cast<std::size_t>(action.transfer)];
    const bool send = action.kind == ExchangeAction::Kind::Send;
    const Place& place = send ? transfer.source : transfer.destination;
    const BytePattern& pattern = send ? transfer.source_pattern : transfer.destination_pattern;
    const ActionCode plan = exchange_action_code(action, transfer, registers);
    if (plan.step_previous) {
      Instruction& stepping = code[previous];
      stepping.opcode = stepping.opcode == Opcode::Send ? Opcode::Sendn : Opcode::Recvn;
      stepping.operands[3] = plan.peer_step;
    }
    if (plan.set_address) {
      set(kScratchAddress, place_address(context, place));
      if (place.chunk_stride) code.push_back(make(Opcode::Add, {kScratchAddress, kScratchAddress, kChunk}));
      if (place.iteration_stride) code.push_back(make(Opcode::Add, {kScratchAddress, kScratchAddress, kIteration}));
    }
    if (plan.set_length) set(kScratchLength, transfer.bytes);
    if (plan.set_peer) set(kScratchPeer, action.peer);
    // Before the xwait: the send still issues at its planned cycle.
    if (plan.set_run) set(kPatternRun, pattern.run);
    if (plan.set_stride) set(kPatternStride, pattern.stride);
    if (plan.pattern) code.push_back(make(Opcode::Xpat, {kPatternRun, kPatternStride}));
    if (send) {
      if (action.start >= (1u << 20))
        throw_failure(fmt::format("tile {}", tile), "exchange phase {} is longer than xwait can count", phase);
      code.push_back(make(Opcode::Xwait, {static_cast<std::int32_t>(action.start)}));
      code.push_back(make(Opcode::Send, {kScratchAddress, kScratchLength, kScratchPeer}));
    } else {
      code.push_back(make(Opcode::Recv, {kScratchAddress, kScratchLength, kScratchPeer}));
      receive_codes.push_back(plan);
      receive_at.push_back(code.size() - 1);
    }
    previous = code.size() - 1;
  }
  // Runs of identical recvn become one in a hardware loop (last run first,
  // so earlier positions hold).
  const std::vector<ReceiveLoop> loops =
      context.exchanges.loop_receives ? receive_loops(receive_codes) : std::vector<ReceiveLoop>{};
  for (auto loop = loops.rbegin(); loop != loops.rend(); ++loop) {
    const std::size_t begin = receive_at[loop->first];
    const std::size_t end = begin + static_cast<std::size_t>(loop->count);
    TILEC_CHECK(receive_at[loop->first + static_cast<std::size_t>(loop->count) - 1] == end - 1 &&
                    std::all_of(code.begin() + static_cast<std::ptrdiff_t>(begin), code.begin() + static_cast<std::ptrdiff_t>(end),
                                [&](const Instruction& i) { return i.opcode == Opcode::Recvn && i == code[begin]; }),
                "tile {} phase {}: a receive loop over unlike instructions", tile, phase);
    code.erase(code.begin() + static_cast<std::ptrdiff_t>(begin) + 1, code.begin() + static_cast<std::ptrdiff_t>(end));
    code.insert(code.begin() + static_cast<std::ptrdiff_t>(begin), make(Opcode::Rpti, {loop->count, 1}));
  }
  return code;
}

}  // namespace

ExchangeCode lower_exchanges(const TileCodeContext& context) {
  ExchangeCode code(static_cast<std::size_t>(context.lir.phases),
                    std::vector<std::vector<Instruction>>(context.machine.tiles));
  parallel_for(0, context.machine.tiles, [&](std::size_t tile) {
    for (int phase = 0; phase < context.lir.phases; ++phase)
      code[static_cast<std::size_t>(phase)][tile] = exchange_instructions(context, phase, static_cast<int>(tile));
  });
  return code;
}

std::vector<TileArguments> prepare_tile_code(const TileCodeContext& context) {
  const Lir& lir = context.lir;
  const GroupPlan& groups = lir.mid->groups;
  std::vector<TileArguments> result(context.machine.tiles);
  const std::uint32_t base = context.map ? context.map->arguments_address : 0;
  parallel_for(0, result.size(), [&](std::size_t tile) {
    TileArguments& arguments = result[tile];
    if (static_cast<int>(tile) / groups.group_size >= groups.groups || lir.tasks_of_tile.empty()) return;
    const std::vector<int>& own = lir.tasks_of_tile[static_cast<std::size_t>(static_cast<int>(tile) % groups.group_size)];
    arguments.block_addresses.assign(own.size(), {});
    for (std::size_t position = 0; position < own.size(); ++position) {
      const Task& task = lir.tasks[static_cast<std::size_t>(own[position])];
      for (const auto& words : task.worker_arguments) {
        arguments.block_addresses[position].push_back(base + static_cast<std::uint32_t>(arguments.bytes.size()));
        for (const ArgumentWord& word : words) {
          std::uint32_t value = word.is_address() ? place_address(context, word.place) : word.constant;
          std::uint8_t bytes[4];
          std::memcpy(bytes, &value, 4);
          arguments.bytes.insert(arguments.bytes.end(), bytes, bytes + 4);
        }
      }
    }
  });
  return result;
}

std::uint32_t argument_bytes(const Lir& lir) {
  std::uint32_t largest = 0;
  for (const std::vector<int>& own : lir.tasks_of_tile) {
    std::uint32_t bytes = 0;
    for (int index : own)
      for (const auto& words : lir.tasks[static_cast<std::size_t>(index)].worker_arguments)
        bytes += 4 * static_cast<std::uint32_t>(words.size());
    largest = std::max(largest, bytes);
  }
  return largest;
}

std::vector<TileCode> emit_tile_code(const TileCodeContext& context, const ExchangeCode& exchange,
                                     std::vector<TileArguments>& arguments) {
  std::vector<TileCode> programs(context.machine.tiles);
  parallel_for(0, programs.size(), [&](std::size_t tile) {
    programs[tile] = SupervisorEmitter(context, static_cast<int>(tile), exchange, arguments[tile]).emit();
  });
  return programs;
}

CodeSizes size_tile_code(const TileCodeContext& context) {
  ExchangeCode exchange = lower_exchanges(context);
  std::vector<TileArguments> arguments = prepare_tile_code(context);
  CodeSizes sizes;
  for (const TileCode& program : emit_tile_code(context, exchange, arguments)) {
    sizes.code = std::max(sizes.code, static_cast<std::uint32_t>(program.code.size()));
    sizes.arguments = std::max(sizes.arguments, static_cast<std::uint32_t>(program.arguments.size()));
  }
  return sizes;
}

}  // namespace tilec::compiler
