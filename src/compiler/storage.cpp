#include "compiler/storage.h"

#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace tilec::compiler {

namespace {

std::uint32_t align(std::uint32_t value, std::uint32_t unit) { return (value + unit - 1) / unit * unit; }

struct Placed {
  std::uint32_t begin;
  std::uint32_t end;
  const Lifetime* lifetime;
};

}  // namespace

MemoryMap place_storage(Lir& lir, std::uint32_t library_bytes, std::uint32_t code_bytes,
                        std::uint32_t argument_bytes, const MachineModel& machine) {
  MemoryMap map;
  map.library_address = machine.standard.begin;
  map.library_bytes = align(library_bytes, 16);
  map.code_address = map.library_address + map.library_bytes;
  map.code_bytes = align(code_bytes, 16);
  map.arguments_address = map.code_address + map.code_bytes;
  map.arguments_bytes = argument_bytes;
  // Alignment pads between regions; nothing pads the end of the last one.
  map.standard_end = argument_bytes ? map.arguments_address + argument_bytes : code_bytes ? map.code_address + code_bytes
                                                                                          : map.library_address + library_bytes;
  if (map.standard_end > machine.standard.end) {
    map.fits_classes = false;
    map.overflow = fmt::format("code and arguments need {} bytes of standard memory, which holds {}",
                               map.standard_end - machine.standard.begin, machine.standard.bytes());
  }

  // Staged weights: the iteration record fills standard memory above the
  // code and runs on into interleaved memory, one address range across the
  // boundary (only sends read it, and they may cross it).
  std::uint32_t data_begin = machine.interleaved.begin;
  if (lir.staged_record >= 0) {
    TILEC_CHECK(machine.standard.end == machine.interleaved.begin, "staged weights need adjacent memory classes");
    Buffer& record = lir.buffers[static_cast<std::size_t>(lir.staged_record)];
    const std::uint32_t code_end = align(map.standard_end, 16);
    const std::uint32_t below = code_end < machine.standard.end ? std::min(record.bytes, machine.standard.end - code_end) : 0;
    record.address = machine.standard.end - below;
    data_begin += record.bytes - below;
    if (below > 0) map.standard_end = machine.standard.end;  // the highest byte used
  }
  // Largest first (resident ones before all), each at the lowest address
  // free of every placed buffer whose lifetime it overlaps.
  std::vector<int> order;
  for (std::size_t i = 0; i < lir.buffers.size(); ++i)
    if (lir.buffers[i].alias_of < 0 && lir.buffers[i].bytes > 0 && static_cast<int>(i) != lir.staged_record)
      order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Buffer& x = lir.buffers[static_cast<std::size_t>(a)];
    const Buffer& y = lir.buffers[static_cast<std::size_t>(b)];
    if (x.lifetime.resident != y.lifetime.resident) return x.lifetime.resident;
    return x.bytes > y.bytes;
  });
  std::vector<Placed> placed;
  std::uint32_t data_end = data_begin;
  for (int index : order) {
    Buffer& buffer = lir.buffers[static_cast<std::size_t>(index)];
    std::vector<std::pair<std::uint32_t, std::uint32_t>> busy;
    for (const Placed& other : placed)
      if (other.lifetime->overlaps(buffer.lifetime)) busy.emplace_back(other.begin, other.end);
    std::sort(busy.begin(), busy.end());
    std::uint32_t address = data_begin;
    for (const auto& [begin, end] : busy) {
      if (address + buffer.bytes <= begin) break;
      address = std::max(address, end);
    }
    buffer.address = address;
    placed.push_back(Placed{address, address + buffer.bytes, &buffer.lifetime});
    data_end = std::max(data_end, address + buffer.bytes);
  }
  for (Buffer& buffer : lir.buffers)
    if (buffer.alias_of >= 0) {
      int target = buffer.alias_of;
      std::uint32_t offset = buffer.alias_offset;
      while (lir.buffers[static_cast<std::size_t>(target)].alias_of >= 0) {
        offset += lir.buffers[static_cast<std::size_t>(target)].alias_offset;
        target = lir.buffers[static_cast<std::size_t>(target)].alias_of;
      }
      buffer.address = lir.buffers[static_cast<std::size_t>(target)].address + offset;
    }
  map.data_end = data_end;
  if (data_end > machine.interleaved.end && map.fits_classes) {
    map.fits_classes = false;
    map.overflow = fmt::format("data needs {} bytes of interleaved memory, which holds {}",
                               data_end - machine.interleaved.begin, machine.interleaved.bytes());
  }
  return map;
}

std::string memory_contributors(const Lir& lir, const MemoryMap& map, int count) {
  // The superstep whose live buffers take most bytes, and its largest ones:
  // what a smaller plan must shrink.
  const auto live_in = [&](const Buffer& buffer, int phase) {
    return buffer.alias_of < 0 && buffer.bytes > 0 &&
           (buffer.lifetime.resident || (buffer.lifetime.first <= phase && phase <= buffer.lifetime.last));
  };
  int busiest = 0;
  std::uint64_t most = 0;
  for (int phase = 0; phase < std::max(lir.phases, 1); ++phase) {
    std::uint64_t bytes = 0;
    for (const Buffer& buffer : lir.buffers)
      if (live_in(buffer, phase)) bytes += buffer.bytes;
    if (bytes > most) most = bytes, busiest = phase;
  }
  std::vector<std::pair<std::uint32_t, std::string>> items;
  items.emplace_back(map.library_bytes + map.code_bytes, "code");
  items.emplace_back(map.arguments_bytes, "kernel arguments");
  for (const Buffer& buffer : lir.buffers)
    if (live_in(buffer, busiest)) items.emplace_back(buffer.bytes, buffer.name);
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text = fmt::format("at superstep {}:", busiest);
  for (int i = 0; i < count && i < static_cast<int>(items.size()); ++i)
    text += fmt::format("{} {} {:.1f} KiB", i ? "," : "", items[static_cast<std::size_t>(i)].second,
                        items[static_cast<std::size_t>(i)].first / 1024.0);
  return text;
}

}  // namespace tilec::compiler
