#include "compiler/lowering.h"

#include <algorithm>

namespace tilec::compiler {

namespace {

// Every Place naming `buffer` now names `target` (offsets and strides add).
void retarget(Lir& lir, int buffer, const Place& target) {
  auto move = [&](Place& place) {
    if (place.buffer != buffer) return;
    place = Place{target.buffer, target.offset + place.offset, target.chunk_stride + place.chunk_stride,
                  target.iteration_stride + place.iteration_stride};
  };
  for (Place& place : lir.value_places) move(place);
  for (Transfer& transfer : lir.transfers) {
    move(transfer.source);
    move(transfer.destination);
  }
  for (Task& task : lir.tasks) {
    move(task.weights);
    move(task.activation);
    move(task.output);
    move(task.bias);
    for (Place& input : task.inputs) move(input);
  }
  Buffer& gone = lir.buffers[static_cast<std::size_t>(buffer)];
  Buffer& kept = lir.buffers[static_cast<std::size_t>(target.buffer)];
  if (!kept.lifetime.resident) {
    kept.lifetime.first = std::min(kept.lifetime.first, gone.lifetime.first);
    kept.lifetime.last = std::max(kept.lifetime.last, gone.lifetime.last);
  }
  gone.alias_of = target.buffer;
  gone.alias_offset = target.offset;
  gone.bytes = 0;
}

bool is_identity(const Lir& lir, const MidOp& op) {
  if (!op.epilogue.empty()) return false;
  const MidValue& output = lir.mid->values[static_cast<std::size_t>(op.output)];
  const MidValue& input = lir.mid->values[static_cast<std::size_t>(op.inputs[0])];
  if (input.storage != output.storage) return false;
  if (op.kind == MidOpKind::Map)
    return op.inputs.size() == 1 && lir.chain->steps[static_cast<std::size_t>(op.step)].table < 0;
  return op.kind == MidOpKind::Reduce && op.grid.k_parts == 1;
}

}  // namespace

void eliminate(Lir& lir) {
  const MidProgram& program = *lir.mid;
  for (std::size_t index = 0; index < program.ops.size(); ++index) {
    const MidOp& op = program.ops[index];
    if (op.kind != MidOpKind::Map && op.kind != MidOpKind::Reduce) continue;
    if (!is_identity(lir, op)) continue;
    Place input = lir.value_places[static_cast<std::size_t>(op.inputs[0])];
    Place output = lir.value_places[static_cast<std::size_t>(op.output)];
    if (input.buffer == output.buffer) continue;
    const Buffer& input_buffer = lir.buffers[static_cast<std::size_t>(input.buffer)];
    const Buffer& output_buffer = lir.buffers[static_cast<std::size_t>(output.buffer)];
    if (op.kind == MidOpKind::Reduce) {
      // The GEMM drains straight into the output's place.
      retarget(lir, input.buffer, output);
    } else {
      // A copy: the output is the input, unless the output must live in a
      // chunk record (a graph output) or feeds a loop (both stay real copies).
      if (output_buffer.kind == BufferKind::ChunkRecord || input_buffer.kind == BufferKind::ChunkRecord) continue;
      bool carried = false;
      for (const auto& [end, start] : program.loop_carried)
        if (start == op.output) carried = true;
      if (carried) continue;
      retarget(lir, output.buffer, input);
    }
    std::erase_if(lir.tasks, [&](const Task& task) { return task.op == static_cast<int>(index); });
  }
  std::erase_if(lir.tasks, [](const Task& task) {
    return (task.kind == TaskKind::Gemm && (task.column_blocks == 0 || task.k_steps == 0)) ||
           (task.kind == TaskKind::Combine && task.columns == 0);
  });
  std::erase_if(lir.transfers, [](const Transfer& transfer) { return transfer.bytes == 0; });
}

}  // namespace tilec::compiler
