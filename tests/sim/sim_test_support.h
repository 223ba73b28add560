// Building small tile programs and packages for the simulator's tests and
// benchmarks, straight from the ISA table's encoder (no assembler needed):
//
//   Code code;
//   code.set(1, 0x80000);                          // setzi + sethi
//   code.main(Opcode::Ld128, {0, 1, 0});           // ld128 $a0:3, $m1, 0
//   code.both(ins(Opcode::Ld128pi, {4, 2, 16}), ins(Opcode::Ampf8, {0, 4, 0, 0, 0}));
//   code.main(Opcode::Halt);
#pragma once

#include "isa/isa.h"
#include "package/package.h"
#include "sim/device.h"
#include "target/machine.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace tilec::sim::testing {

using isa::Opcode;

constexpr std::uint32_t kCodeBase = 0x4C000;
constexpr std::uint32_t kStandardData = 0x60000;
constexpr std::uint32_t kInterleavedData = 0x80000;
constexpr std::int32_t kZero = isa::kMZero;

inline isa::Instruction ins(Opcode opcode, std::initializer_list<std::int32_t> operands = {}) {
  isa::Instruction instruction{opcode, {}};
  int i = 0;
  for (std::int32_t operand : operands) instruction.operands[i++] = operand;
  return instruction;
}

class Code {
 public:
  explicit Code(std::uint32_t base = kCodeBase) : base_(base) {}

  // Each returns the address of the bundle it emitted.
  std::uint32_t both(isa::Instruction main, isa::Instruction flt) {
    bundles_.push_back(isa::Bundle{main, flt});
    return here() - isa::kBundleBytes;
  }
  std::uint32_t main(Opcode opcode, std::initializer_list<std::int32_t> operands = {}) {
    return both(ins(opcode, operands), isa::fnop());
  }
  std::uint32_t flt(Opcode opcode, std::initializer_list<std::int32_t> operands = {}) {
    return both(isa::nop(), ins(opcode, operands));
  }
  // $mR = value, in two bundles.
  void set(std::int32_t reg, std::uint32_t value) {
    main(Opcode::Setzi, {reg, static_cast<std::int32_t>(value & 0xfffffu)});
    main(Opcode::Sethi, {reg, static_cast<std::int32_t>(value >> 16)});
  }

  // Labels: a branch names one; its offset is filled in by bytes().
  int label() {
    labels_.push_back(-1);
    return static_cast<int>(labels_.size()) - 1;
  }
  void bind(int label) { labels_[label] = static_cast<std::int64_t>(bundles_.size()); }
  // `instruction`'s operand `operand` becomes the offset to `label`.
  std::uint32_t branch(isa::Instruction instruction, int operand, int label) {
    fixups_.push_back(Fixup{bundles_.size(), operand, label, false});
    return both(instruction, isa::fnop());
  }
  // setzi $mR, <address of label> (code addresses fit in 20 bits).
  std::uint32_t set_address(std::int32_t reg, int label) {
    fixups_.push_back(Fixup{bundles_.size(), 1, label, true});
    return main(Opcode::Setzi, {reg, 0});
  }

  std::uint32_t base() const { return base_; }
  std::uint32_t here() const { return base_ + static_cast<std::uint32_t>(bundles_.size()) * isa::kBundleBytes; }
  std::size_t size() const { return bundles_.size(); }
  isa::Bundle& at(std::size_t index) { return bundles_[index]; }

  std::vector<std::uint8_t> bytes() const {
    std::vector<isa::Bundle> bundles = bundles_;
    for (const Fixup& fixup : fixups_)
      bundles[fixup.bundle].main.operands[fixup.operand] = static_cast<std::int32_t>(
          fixup.absolute ? base_ + labels_[fixup.label] * isa::kBundleBytes
                         : labels_[fixup.label] - static_cast<std::int64_t>(fixup.bundle));
    std::vector<std::uint8_t> out(bundles.size() * isa::kBundleBytes);
    for (std::size_t i = 0; i < bundles.size(); ++i) {
      std::uint64_t bits = isa::encode_bundle(bundles[i]);
      std::memcpy(out.data() + i * isa::kBundleBytes, &bits, sizeof bits);
    }
    return out;
  }

  package::Segment segment(std::string name = ".text") const {
    return package::Segment{std::move(name), base_,
                            std::make_shared<std::vector<std::uint8_t>>(bytes()), true};
  }

 private:
  struct Fixup {
    std::size_t bundle;
    int operand;
    int label;
    bool absolute;  // the label's address, else its offset in bundles
  };
  std::uint32_t base_;
  std::vector<isa::Bundle> bundles_;
  std::vector<std::int64_t> labels_;
  std::vector<Fixup> fixups_;
};

inline package::Segment data_segment(std::string name, std::uint32_t address,
                                     std::vector<std::uint8_t> bytes) {
  return package::Segment{std::move(name), address,
                          std::make_shared<std::vector<std::uint8_t>>(std::move(bytes)), false};
}

template <typename T>
std::vector<std::uint8_t> as_bytes(const std::vector<T>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

inline package::TileImage image(const Code& code, std::vector<package::Segment> data = {}) {
  package::TileImage tile;
  tile.entry = code.base();
  tile.segments.push_back(code.segment());
  for (package::Segment& segment : data) tile.segments.push_back(std::move(segment));
  return tile;
}

// A package of `tiles` tiles, every one running `tile_image`.
inline package::Package package_of(std::uint32_t tiles, const package::TileImage& tile_image) {
  package::Package package;
  package.target = ipu21_cut(tiles).name;
  package.tiles.assign(tiles, tile_image);
  return package;
}

// A binding of one dense row-major piece at `address` on `tile`.
inline package::Binding dense_binding(std::string name, package::BindingRole role,
                                      graph::TensorType type, std::uint32_t tile,
                                      std::uint32_t address) {
  package::Piece piece;
  piece.tile = tile;
  piece.address = address;
  const std::size_t rank = type.shape.size();
  piece.start.assign(rank, 0);
  piece.size = type.shape;
  piece.strides.assign(rank, 1);
  for (std::size_t k = rank; k-- > 1;) piece.strides[k - 1] = piece.strides[k] * type.shape[k];
  return package::Binding{std::move(name), role, std::move(type), {std::move(piece)}};
}

inline graph::TensorType f32_type(graph::Shape shape) { return {std::move(shape), {ElementType::F32, 0}}; }

// Runs a one-tile program and returns the `words` 32-bit words it left at
// kStandardData, with the run's result.
struct WordsRun {
  std::vector<std::uint32_t> words;
  RunResult result;
};
inline WordsRun run_for_words(const Code& code, std::size_t words,
                              std::vector<package::Segment> data = {}, SimOptions options = {}) {
  package::Package package = package_of(1, image(code, std::move(data)));
  package.bindings.push_back(dense_binding("out", package::BindingRole::Output,
                                           f32_type({static_cast<std::int64_t>(words)}), 0, kStandardData));
  Device device(package, ipu21_cut(1));
  WordsRun run;
  run.result = device.run(options);
  graph::Tensor out = device.read("out");
  run.words.resize(words);
  std::memcpy(run.words.data(), out.bytes.data(), words * 4);
  return run;
}

}  // namespace tilec::sim::testing
