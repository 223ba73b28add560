// Text dumps of the compiler's IRs, for --dump-after and tests.
#include "compiler/dump.h"

#include "isa/disasm.h"
#include "isa/isa.h"

#include <fmt/format.h>

#include <cstring>

namespace tilec::compiler {

namespace {

std::string storage_text(StorageType storage) {
  if (!is_fp8(storage.element)) return std::string(element_type_name(storage.element));
  return fmt::format("{}(s={})", element_type_name(storage.element), storage.scale);
}

std::string tiles_text(std::span<const int> tiles) {
  std::string text;
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    if (i == 4 && tiles.size() > 5) {
      text += fmt::format("..+{}", tiles.size() - 4);
      break;
    }
    text += fmt::format("{}{}", i ? "," : "", tiles[i]);
  }
  return text;
}

// Blocks as [columns)@tiles, each preceded by its rows when rows are split.
std::string layout_text(const Layout& layout) {
  const bool split_rows = layout.row_parts() > 1;
  std::string text = split_rows ? fmt::format("{} row parts of {} panels:", layout.row_parts(), layout.piece_panels) : "";
  for (int block = 0; block < layout.blocks(); ++block) {
    if (block == 8 && layout.blocks() > 10) {
      text += fmt::format(" ... ({} blocks)", layout.blocks());
      break;
    }
    const Range cols = layout.block_cols(block);
    const Range rows = layout.block_rows(block);
    if (block || split_rows) text += " ";
    if (split_rows) text += fmt::format("[{},{})x", rows.begin, rows.end);
    text += fmt::format("[{},{})@{}", cols.begin, cols.end, tiles_text(layout.block_tiles(block)));
  }
  return text;
}

const char* op_kind_text(MidOpKind kind) {
  switch (kind) {
    case MidOpKind::Rearrange: return "rearrange";
    case MidOpKind::Gemm: return "gemm";
    case MidOpKind::Reduce: return "reduce";
    case MidOpKind::Map: return "map";
    case MidOpKind::LayerNorm: return "layernorm";
    case MidOpKind::Softmax: return "softmax";
    case MidOpKind::RowStatistics: return "row-statistics";
    case MidOpKind::RowApply: return "row-apply";
    case MidOpKind::Attention: return "attention";
    case MidOpKind::AttentionMerge: return "attention-merge";
  }
  return "?";
}

const char* buffer_kind_text(BufferKind kind) {
  switch (kind) {
    case BufferKind::Value: return "value";
    case BufferKind::Partial: return "partial";
    case BufferKind::ReceiveSlots: return "receive";
    case BufferKind::Weight: return "weight";
    case BufferKind::GatheredWeight: return "gathered-weight";
    case BufferKind::Bias: return "bias";
    case BufferKind::ChunkRecord: return "chunk-record";
    case BufferKind::IterationRecord: return "iteration-record";
    case BufferKind::Scratch: return "scratch";
    case BufferKind::Statistics: return "statistics";
    case BufferKind::Constant: return "constant";
  }
  return "?";
}

std::string place_text(const Lir& lir, const Place& place) {
  if (place.buffer < 0) return "-";
  std::string text = fmt::format("{}+{}", lir.buffers[static_cast<std::size_t>(place.buffer)].name, place.offset);
  if (place.chunk_stride) text += fmt::format("+c*{}", place.chunk_stride);
  if (place.iteration_stride) text += fmt::format("+i*{}", place.iteration_stride);
  return text;
}

// " [64/256]" for 64-byte runs every 256 bytes; nothing when contiguous.
std::string pattern_text(const BytePattern& pattern) {
  return pattern.contiguous() ? "" : fmt::format(" [{}/{}]", pattern.run, pattern.stride);
}

}  // namespace

std::string dump_chain(const Chain& chain) {
  std::string text = fmt::format("chain: {} rows\n", chain.rows);
  for (std::size_t i = 0; i < chain.activations.size(); ++i)
    text += fmt::format("  a{} {} cols {} {}\n", i, chain.activations[i].name, chain.activations[i].cols,
                        storage_text(chain.activations[i].storage));
  for (std::size_t i = 0; i < chain.steps.size(); ++i) {
    const Step& step = chain.steps[i];
    text += fmt::format("  step {} {} a{} -> a{} result {}", i, step.name, step.input, step.output,
                        storage_text(step.result));
    if (step.weight >= 0) text += fmt::format(" weight {}", chain.weights[static_cast<std::size_t>(step.weight)].parameter);
    for (const EpilogueOp& op : step.epilogue) text += fmt::format(" | {} {}", op.op_name, storage_text(op.result));
    text += "\n";
  }
  if (chain.repeat)
    text += fmt::format("  repeat {} x{}: steps {}..{}\n", chain.repeat->name, chain.repeat->count,
                        chain.repeat->first_step, chain.repeat->last_step);
  return text;
}

std::string dump_mid(const MidProgram& program) {
  const GroupPlan& groups = program.groups;
  std::string text = fmt::format("mid: {} groups of {} tiles, {} chunks of {} panels\n", groups.groups,
                                 groups.group_size, groups.chunks, groups.chunk_panels);
  for (std::size_t i = 0; i < program.values.size(); ++i) {
    const MidValue& v = program.values[i];
    text += fmt::format("  v{} {} {}{}: {}\n", i, v.name, storage_text(v.storage), v.partial ? " partial" : "",
                        layout_text(v.layout));
  }
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const MidOp& op = program.ops[i];
    text += fmt::format("  op {} {} {}", i, op_kind_text(op.kind), op.name);
    for (int input : op.inputs) text += fmt::format(" v{}", input);
    text += fmt::format(" -> v{}", op.output);
    if (op.kind == MidOpKind::Gemm || op.kind == MidOpKind::Reduce)
      text += op.grid.row_parts > 1
                  ? fmt::format(" grid {}x{}x{}", op.grid.row_parts, op.grid.column_parts, op.grid.k_parts)
                  : fmt::format(" grid {}x{}", op.grid.column_parts, op.grid.k_parts);
    if (static_cast<int>(i) == program.repeat_first_op) text += fmt::format("  [repeat x{} from here", program.repeat_count);
    if (static_cast<int>(i) == program.repeat_last_op) text += "  to here]";
    text += "\n";
  }
  for (const auto& [end, start] : program.loop_carried) text += fmt::format("  carried v{} -> v{}\n", end, start);
  return text;
}

std::string dump_lir(const Lir& lir) {
  std::string text = fmt::format("lir: {} phases", lir.phases);
  if (lir.repeat_first_phase >= 0)
    text += fmt::format(", repeat over phases {}..{}", lir.repeat_first_phase, lir.repeat_last_phase);
  text += "\n";
  for (const Buffer& buffer : lir.buffers) {
    text += fmt::format("  buffer {} {} {} bytes", buffer.name, buffer_kind_text(buffer.kind), buffer.bytes);
    if (buffer.lifetime.resident) text += " resident";
    else text += fmt::format(" phases {}..{}", buffer.lifetime.first, buffer.lifetime.last);
    if (buffer.alias_of >= 0)
      text += fmt::format(" = {}+{}", lir.buffers[static_cast<std::size_t>(buffer.alias_of)].name, buffer.alias_offset);
    else if (buffer.address) text += fmt::format(" at {:#x}", buffer.address);
    text += "\n";
  }
  for (const Transfer& transfer : lir.transfers) {
    text += fmt::format("  phase {} send {} {} bytes {}{} -> ", transfer.phase, transfer.source_tile, transfer.bytes,
                        place_text(lir, transfer.source), pattern_text(transfer.source_pattern));
    for (std::size_t i = 0; i < transfer.destination_tiles.size(); ++i)
      text += fmt::format("{}{}", i ? "," : "", transfer.destination_tiles[i]);
    text += fmt::format(" at {}{}  ({})\n", place_text(lir, transfer.destination),
                        pattern_text(transfer.destination_pattern), transfer.what);
  }
  for (const Task& task : lir.tasks) {
    const char* kind = task.kind == TaskKind::Gemm            ? "gemm"
                       : task.kind == TaskKind::Combine       ? "combine"
                       : task.kind == TaskKind::Attention     ? "attention"
                       : task.kind == TaskKind::RowStatistics ? "row-statistics"
                       : task.kind == TaskKind::RowMerge      ? "row-merge"
                       : task.kind == TaskKind::RowApply      ? "row-apply"
                                                              : "row";
    text += fmt::format("  phase {} tile {} {} {}", task.superstep, task.tile, kind,
                        lir.mid->ops[static_cast<std::size_t>(task.op)].name);
    if (task.kind == TaskKind::Gemm)
      text += fmt::format(" weights {} activation {} -> {} ({} blocks x {} k)", place_text(lir, task.weights),
                          place_text(lir, task.activation), place_text(lir, task.output), task.column_blocks,
                          task.k_steps);
    else {
      for (const Place& input : task.inputs) text += fmt::format(" {}", place_text(lir, input));
      text += fmt::format(" -> {} ({} columns){}", place_text(lir, task.output), task.columns,
                          task.partial_sum ? " partial sum" : "");
    }
    if (!task.kernel.empty()) text += " kernel " + task.kernel;
    if (task.cycles > 0) text += fmt::format(", {:.0f} cycles", task.cycles);
    text += "\n";
  }
  return text;
}

std::string dump_program_estimate(const ProgramEstimate& estimate) {
  std::string text = fmt::format("estimated {:.0f} cycles\n", estimate.cycles);
  for (std::size_t phase = 0; phase < estimate.phases.size(); ++phase) {
    const PhaseEstimate& p = estimate.phases[phase];
    text += fmt::format("  phase {} (runs {:.0f} times): {:.0f} cycles, tile {}: exchange {:.0f}, compute {:.0f}\n",
                        phase, p.runs, p.cycles, p.slowest_tile, p.exchange, p.compute);
  }
  return text;
}

std::string dump_exchanges(const Lir& lir, const ExchangePlan& plan, int tile) {
  std::string text = fmt::format("exchange actions of tile {} ({} exchange groups)\n", tile, plan.groups.size());
  for (std::size_t phase = 0; phase < plan.actions.size(); ++phase) {
    text += fmt::format("  phase {} ({} cycles on the busiest tile)\n", phase, plan.phase_cycles[phase]);
    for (const ExchangeAction& action : plan.actions[phase][static_cast<std::size_t>(tile)]) {
      const Transfer& transfer = lir.transfers[static_cast<std::size_t>(action.transfer)];
      if (action.kind == ExchangeAction::Kind::Receive)
        text += fmt::format("    receive {} bytes{} from tile {}: {}\n", transfer.bytes,
                            pattern_text(transfer.destination_pattern), action.peer, transfer.what);
      else if (action.peer & kMulticast)
        text += fmt::format("    send {} bytes{} to group {} at cycle {}: {}\n", transfer.bytes,
                            pattern_text(transfer.source_pattern), action.peer & 0xffffu, action.start, transfer.what);
      else
        text += fmt::format("    send {} bytes{} to tile {} at cycle {}: {}\n", transfer.bytes,
                            pattern_text(transfer.source_pattern), action.peer, action.start, transfer.what);
    }
  }
  return text;
}

std::string dump_exchange_code(const ExchangeCode& code, int tile) {
  std::string text = fmt::format("exchange code of tile {}\n", tile);
  for (std::size_t phase = 0; phase < code.size(); ++phase) {
    text += fmt::format("  phase {}\n", phase);
    for (const isa::Instruction& instruction : code[phase][static_cast<std::size_t>(tile)])
      text += "    " + isa::instruction_text(instruction) + "\n";
  }
  return text;
}

std::string dump_arguments(const std::vector<std::uint8_t>& bytes, std::uint32_t address) {
  std::string text = "argument blocks of tile 0\n";
  for (std::size_t offset = 0; offset + 4 <= bytes.size(); offset += 16) {
    text += fmt::format("  {:#07x}", address + offset);
    for (std::size_t word = offset; word < offset + 16 && word + 4 <= bytes.size(); word += 4) {
      std::uint32_t value;
      std::memcpy(&value, bytes.data() + word, 4);
      text += fmt::format(" {:08x}", value);
    }
    text += "\n";
  }
  return text;
}

std::string dump_program(const std::vector<std::uint8_t>& code, std::uint32_t address) {
  std::string text = "supervisor program of tile 0\n";
  for (std::size_t offset = 0; offset + 8 <= code.size(); offset += 8) {
    std::uint64_t bits;
    std::memcpy(&bits, code.data() + offset, 8);
    auto bundle = isa::decode_bundle(bits);
    text += fmt::format("  {:#07x}  {}\n", address + offset, bundle ? isa::bundle_text(*bundle) : "(undecodable)");
  }
  return text;
}

std::string object_summary(const isa::Object& object) {
  std::string text = fmt::format("object {}: {} sections, {} symbols\n", object.name, object.sections.size(),
                                 object.symbols.size());
  for (const isa::Section& section : object.sections)
    text += fmt::format("  section {} {} bytes\n", section.name, section.bytes.size());
  for (const isa::Symbol& symbol : object.symbols)
    if (symbol.global) text += fmt::format("  symbol {}\n", symbol.name);
  return text;
}

std::string image_summary(const isa::Image& image) {
  std::string text = "kernel library image\n";
  for (const isa::Segment& segment : image.segments)
    text += fmt::format("  segment {} at {:#x}, {} bytes\n", segment.name, segment.address, segment.size());
  for (const isa::LinkedSymbol& symbol : image.symbols)
    if (symbol.global) text += fmt::format("  {} at {:#x}, {} bytes\n", symbol.name, symbol.address, symbol.size);
  return text;
}

std::string package_summary(const package::Package& package) {
  std::string text = fmt::format("package for {}: {} tiles, {} exchange groups, {} bindings\n", package.target,
                                 package.tiles.size(), package.exchange_groups.size(), package.bindings.size());
  for (const package::Binding& binding : package.bindings)
    text += fmt::format("  binding {} ({} pieces)\n", binding.name, binding.pieces.size());
  return text;
}

}  // namespace tilec::compiler
