// Stages place_provisional_storage and place_storage: addresses.
//
// Needs: the LIR's buffers (sizes, lifetimes) and the sizes of the code
// and argument regions (a provisional estimate first, then the exact sizes
// once size_tile_code has emitted every tile's program).
// Does: lays out standard memory as [kernel library][supervisor code]
// [argument blocks] from its start, and interleaved memory as the data
// buffers, packed by lifetime: a buffer may reuse the bytes of any buffer
// whose lifetime it does not overlap (first fit, largest first). Every
// tile uses the same addresses, so a buffer's size is the largest any tile
// needs.
// Produces: every buffer's address and the memory map, with the peak per
// tile (code included); fails when the data does not fit interleaved
// memory or the code does not fit standard memory.
#pragma once

#include "compiler/lir.h"
#include "target/machine.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilec::compiler {

struct MemoryMap {
  std::uint32_t library_address = 0;
  std::uint32_t library_bytes = 0;
  std::uint32_t code_address = 0;   // supervisor programs
  std::uint32_t code_bytes = 0;
  std::uint32_t arguments_address = 0;
  std::uint32_t arguments_bytes = 0;
  std::uint32_t standard_end = 0;   // one past the last standard byte used
  std::uint32_t data_end = 0;       // one past the last interleaved byte used
  bool fits_classes = true;         // data in interleaved, code in standard
  std::string overflow;             // why not, when it does not

  std::uint32_t peak_bytes(const MachineModel& machine) const {
    return (standard_end - machine.standard.begin) + (data_end - machine.interleaved.begin);
  }
};

MemoryMap place_storage(Lir& lir, std::uint32_t library_bytes, std::uint32_t code_bytes,
                        std::uint32_t argument_bytes, const MachineModel& machine);

// The largest contributors to a tile's memory, for diagnostics:
// "W1 310.0 KiB, x.rearrange 18.0 KiB, code 12.1 KiB".
std::string memory_contributors(const Lir& lir, const MemoryMap& map, int count);

}  // namespace tilec::compiler
