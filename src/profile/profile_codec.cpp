#include "profile/profile_codec.h"

#include "package/inspect.h"
#include "package/validate.h"
#include "support/error.h"
#include "target/machine.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <exception>
#include <iterator>
#include <limits>
#include <string_view>

namespace tilec::profile {

namespace {

using nlohmann::json;

constexpr std::array<package::RegionKind, 5> kRegionKinds{
    package::RegionKind::Code, package::RegionKind::Arguments, package::RegionKind::Tensor,
    package::RegionKind::ExchangeBuffer, package::RegionKind::Scratch};

// Fields of one event in the flat per-tile arrays, in this order.
constexpr std::size_t kEventFields = 10;

// "where: " or nothing, in front of a message about the body's top level.
std::string lead(const std::string& where) { return where.empty() ? "" : where + ": "; }

const json& member(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) throw_bad_input("", "{}expected an object, got {}", lead(where), object.type_name());
  auto found = object.find(key);
  if (found == object.end()) throw_bad_input("", "{}missing key '{}'", lead(where), key);
  return *found;
}

std::string place(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

std::uint64_t unsigned_value(const json& value, const std::string& where,
                             std::uint64_t limit = std::numeric_limits<std::uint64_t>::max()) {
  if (!value.is_number_unsigned())
    throw_bad_input("", "{}: expected a non-negative integer, got {}", where,
                    value.is_number_integer() ? value.dump() : value.type_name());
  auto number = value.get<std::uint64_t>();
  if (number > limit) throw_bad_input("", "{}: {} is larger than {}", where, number, limit);
  return number;
}

std::uint64_t unsigned_member(const json& object, const char* key, const std::string& where,
                              std::uint64_t limit = std::numeric_limits<std::uint64_t>::max()) {
  return unsigned_value(member(object, key, where), place(where, key), limit);
}

std::uint32_t u32_member(const json& object, const char* key, const std::string& where) {
  return static_cast<std::uint32_t>(
      unsigned_member(object, key, where, std::numeric_limits<std::uint32_t>::max()));
}

double real_member(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  if (!value.is_number()) throw_bad_input("", "{}: expected a number, got {}", place(where, key), value.type_name());
  double number = value.get<double>();
  if (!std::isfinite(number) || number < 0)
    throw_bad_input("", "{}: expected a finite non-negative number, got {}", place(where, key), number);
  return number;
}

std::string string_value(const json& value, const std::string& where) {
  if (!value.is_string()) throw_bad_input("", "{}: expected a string, got {}", where, value.type_name());
  return value.get<std::string>();
}

const json& array_member(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  if (!value.is_array()) throw_bad_input("", "{}: expected an array, got {}", place(where, key), value.type_name());
  return value;
}

// A superstep index, or -1 (resident).
std::int32_t superstep_member(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  if (!value.is_number_integer() || value.get<std::int64_t>() < -1 || value.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
    throw_bad_input("", "{}: expected a superstep (an integer, -1 for resident), got {}", place(where, key), value.dump());
  return static_cast<std::int32_t>(value.get<std::int64_t>());
}

package::RegionKind region_kind_named(const std::string& name, const std::string& where) {
  for (package::RegionKind kind : kRegionKinds)
    if (name == region_kind_name(kind)) return kind;
  throw_bad_input("", "{}: unknown region kind '{}'", where, name);
}

json encode_stats(const sim::TileStats& stats) {
  return {{"halt_cycle", stats.halt_cycle},         {"bundles", stats.bundles},
          {"amp_macs", stats.amp_macs},             {"bytes_loaded", stats.bytes_loaded},
          {"bytes_stored", stats.bytes_stored},     {"bytes_sent", stats.bytes_sent},
          {"bytes_received", stats.bytes_received}, {"sync_wait_cycles", stats.sync_wait_cycles},
          {"memory_bytes", stats.memory_bytes}};
}

sim::TileStats decode_stats(const json& object, const std::string& where) {
  sim::TileStats stats;
  stats.halt_cycle = unsigned_member(object, "halt_cycle", where);
  stats.bundles = unsigned_member(object, "bundles", where);
  const json& macs = array_member(object, "amp_macs", where);
  if (macs.size() != stats.amp_macs.size())
    throw_bad_input("", "{}.amp_macs: expected {} counts (fp8, fp16, fp32), got {}", where,
                    stats.amp_macs.size(), macs.size());
  for (std::size_t i = 0; i < macs.size(); ++i)
    stats.amp_macs[i] = unsigned_value(macs[i], fmt::format("{}.amp_macs[{}]", where, i));
  stats.bytes_loaded = unsigned_member(object, "bytes_loaded", where);
  stats.bytes_stored = unsigned_member(object, "bytes_stored", where);
  stats.bytes_sent = unsigned_member(object, "bytes_sent", where);
  stats.bytes_received = unsigned_member(object, "bytes_received", where);
  stats.sync_wait_cycles = unsigned_member(object, "sync_wait_cycles", where);
  stats.memory_bytes = u32_member(object, "memory_bytes", where);
  return stats;
}

std::array<std::uint64_t, kEventFields> event_fields(const sim::ProfileEvent& event) {
  return {static_cast<std::uint64_t>(event.kind), event.context, event.begin, event.end, event.label,
          event.detail, event.op, event.amp_instructions, event.amp_macs, event.peer};
}

json encode_events(const std::vector<sim::ProfileEvent>& events) {
  json flat = json::array();
  flat.get_ref<json::array_t&>().reserve(events.size() * kEventFields);
  for (const sim::ProfileEvent& event : events)
    for (std::uint64_t field : event_fields(event)) flat.push_back(field);
  return flat;
}

std::vector<sim::ProfileEvent> decode_events(const json& flat, const std::string& where) {
  if (!flat.is_array()) throw_bad_input("", "{}: expected an array, got {}", where, flat.type_name());
  if (flat.size() % kEventFields != 0)
    throw_bad_input("", "{}: {} numbers is not a whole number of events ({} numbers each)", where,
                    flat.size(), kEventFields);
  std::vector<sim::ProfileEvent> events(flat.size() / kEventFields);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::string event_where = fmt::format("{} event {}", where, i);
    const json* fields = &flat[i * kEventFields];
    sim::ProfileEvent& event = events[i];
    event.kind = static_cast<sim::ProfileEventKind>(
        unsigned_value(fields[0], event_where + " kind", static_cast<unsigned>(sim::ProfileEventKind::Halt)));
    event.context = static_cast<std::uint8_t>(unsigned_value(fields[1], event_where + " context", sim::kSupervisorContext));
    event.begin = unsigned_value(fields[2], event_where + " begin");
    event.end = unsigned_value(fields[3], event_where + " end");
    event.label = static_cast<std::uint32_t>(
        unsigned_value(fields[4], event_where + " label", std::numeric_limits<std::uint32_t>::max()));
    auto u32_field = [&](std::size_t field, const char* name) {
      return static_cast<std::uint32_t>(
          unsigned_value(fields[field], event_where + " " + name, std::numeric_limits<std::uint32_t>::max()));
    };
    event.detail = u32_field(5, "detail");
    event.op = u32_field(6, "op");
    event.amp_instructions = u32_field(7, "amp_instructions");
    event.amp_macs = u32_field(8, "amp_macs");
    event.peer = u32_field(9, "peer");
  }
  return events;
}

void validate_events(const ProfileData& profile, std::size_t tile) {
  const std::vector<sim::ProfileEvent>& events = profile.events.tiles[tile];
  std::uint32_t syncs = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const sim::ProfileEvent& event = events[i];
    auto fail = [&](std::string message) {
      throw_bad_input("", "tile {} event {}: {}", tile, i, message);
    };
    if (static_cast<unsigned>(event.kind) > static_cast<unsigned>(sim::ProfileEventKind::Halt))
      fail(fmt::format("unknown kind {}", static_cast<unsigned>(event.kind)));
    const bool worker = event.kind == sim::ProfileEventKind::WorkerKernel;
    if (worker ? event.context >= sim::kSupervisorContext : event.context != sim::kSupervisorContext)
      fail(fmt::format("a {} event cannot run in context {}", event_kind_name(event.kind), event.context));
    if (event.label >= profile.events.labels.size())
      fail(fmt::format("label {} is out of range ({} labels)", event.label, profile.events.labels.size()));
    if (event.op >= profile.events.labels.size())
      fail(fmt::format("op {} is out of range ({} labels)", event.op, profile.events.labels.size()));
    if (!worker && event.kind != sim::ProfileEventKind::SupervisorExchange && event.op != sim::kNoOpLabel)
      fail(fmt::format("a {} event names an op", event_kind_name(event.kind)));
    if (!worker && (event.amp_instructions != 0 || event.amp_macs != 0))
      fail(fmt::format("a {} event carries AMP work", event_kind_name(event.kind)));
    if (event.kind == sim::ProfileEventKind::SupervisorExchange) {
      if (event.peer & sim::kMulticastPeer) {
        if ((event.peer & ~sim::kMulticastPeer) >= profile.exchange_groups.size())
          fail(fmt::format("sends to exchange group {} of {}", event.peer & ~sim::kMulticastPeer,
                           profile.exchange_groups.size()));
      } else if (event.peer >= profile.tiles) {
        fail(fmt::format("sends to tile {} of {}", event.peer, profile.tiles));
      }
    } else if (event.peer != 0) {
      fail(fmt::format("a {} event names a peer", event_kind_name(event.kind)));
    }
    if (event.kind == sim::ProfileEventKind::SyncWait && event.detail != syncs++)
      fail(fmt::format("waits at sync {} where sync {} comes next", event.detail, syncs - 1));
    if (event.begin > event.end) fail(fmt::format("begins in cycle {} after it ends ({})", event.begin, event.end));
    if (event.kind == sim::ProfileEventKind::Halt && event.begin != event.end)
      fail(fmt::format("a halt spans cycles {} to {}", event.begin, event.end));
    if (event.end > profile.cycles)
      fail(fmt::format("ends in cycle {}, after the run's {} cycles", event.end, profile.cycles));
    if (i > 0 && event.begin < events[i - 1].begin)
      fail(fmt::format("begins in cycle {}, before the event before it ({})", event.begin, events[i - 1].begin));
  }
}

// The schedule's fields as package::schedule_json writes them; null: unknown.
package::Schedule decode_schedule(const json& value) {
  package::Schedule schedule;
  if (value.is_null()) return schedule;
  schedule.supersteps = u32_member(value, "supersteps", "schedule");
  schedule.chunks = u32_member(value, "chunks", "schedule");
  schedule.groups = u32_member(value, "groups", "schedule");
  schedule.group_size = u32_member(value, "group_size", "schedule");
  if (value.contains("repeat")) {
    const json& repeat = value["repeat"];
    schedule.repeat = string_value(member(repeat, "name", "schedule.repeat"), "schedule.repeat.name");
    schedule.repeat_first = superstep_member(repeat, "first_superstep", "schedule.repeat");
    schedule.repeat_last = superstep_member(repeat, "last_superstep", "schedule.repeat");
    schedule.repeat_count = u32_member(repeat, "count", "schedule.repeat");
  }
  if (!schedule.known()) throw_bad_input("", "schedule: has no supersteps (null when not known)");
  return schedule;
}

}  // namespace

const char* region_kind_name(package::RegionKind kind) {
  switch (kind) {
    case package::RegionKind::Code: return "code";
    case package::RegionKind::Arguments: return "arguments";
    case package::RegionKind::Tensor: return "tensor";
    case package::RegionKind::ExchangeBuffer: return "exchange-buffer";
    case package::RegionKind::Scratch: return "scratch";
  }
  return "unknown";
}

const char* event_kind_name(sim::ProfileEventKind kind) {
  switch (kind) {
    case sim::ProfileEventKind::WorkerKernel: return "kernel";
    case sim::ProfileEventKind::SupervisorExchange: return "exchange";
    case sim::ProfileEventKind::SyncWait: return "sync";
    case sim::ProfileEventKind::Halt: return "halt";
  }
  return "unknown";
}

json regions_json(const std::vector<package::Region>& regions) {
  json list = json::array();
  for (const package::Region& region : regions)
    list.push_back({{"name", region.name},
                    {"address", region.address},
                    {"size", region.size},
                    {"kind", region_kind_name(region.kind)},
                    {"first_superstep", region.first_superstep},
                    {"last_superstep", region.last_superstep},
                    {"op", region.op}});
  return list;
}

json fault_json(const std::optional<FaultMark>& fault) {
  if (!fault) return nullptr;
  return {{"tile", fault->tile},   {"context", fault->context}, {"pc", fault->pc},
          {"cycle", fault->cycle}, {"bundle", fault->bundle},   {"message", fault->message}};
}

namespace {

// Every member of the body but the events.
json encode_body_without_events(const ProfileData& profile) {
  json regions = regions_json(profile.regions);
  json stats = json::array();
  for (const sim::TileStats& tile : profile.tile_stats) stats.push_back(encode_stats(tile));
  return {{"name", profile.name},
          {"target", profile.target},
          {"tiles", profile.tiles},
          {"clock_ghz", profile.clock_ghz},
          {"cycles", profile.cycles},
          {"graph_macs", profile.graph_macs},
          {"peak_macs_per_cycle", profile.peak_macs_per_cycle},
          {"peak_tile_bytes", profile.peak_tile_bytes},
          {"labels", profile.events.labels},
          {"regions", std::move(regions)},
          {"exchange_groups", profile.exchange_groups},
          {"schedule", package::schedule_json(profile.schedule)},
          {"fault", fault_json(profile.fault)},
          {"tile_stats", std::move(stats)}};
}

}  // namespace

json encode_profile_json(const ProfileData& profile) {
  json body = encode_body_without_events(profile);
  json events = json::array();
  for (const std::vector<sim::ProfileEvent>& tile : profile.events.tiles) events.push_back(encode_events(tile));
  body["events"] = std::move(events);
  return body;
}

void write_profile_json(const ProfileData& profile, const std::function<void(std::string_view)>& write) {
  // The other members' text with the events appended: "{...,"events":[[...],...]}".
  std::string text = encode_body_without_events(profile).dump();
  TILEC_CHECK(text.size() > 2 && text.back() == '}', "the body's other members are a non-empty JSON object");
  text.back() = ',';
  text += "\"events\":[";
  constexpr std::size_t kPiece = 1 << 20;  // bytes handed on at a time
  for (std::size_t tile = 0; tile < profile.events.tiles.size(); ++tile) {
    text += tile == 0 ? "[" : ",[";
    bool first = true;
    for (const sim::ProfileEvent& event : profile.events.tiles[tile])
      for (std::uint64_t field : event_fields(event)) {
        if (!first) text += ',';
        first = false;
        fmt::format_to(std::back_inserter(text), "{}", field);
      }
    text += ']';
    if (text.size() >= kPiece) {
      write(text);
      text.clear();
    }
  }
  text += "]}";
  write(text);
}

namespace {

// The tiles' events as the parse decoded them and left them out of the
// body, and the first error in them, reported in the place of the
// members' checks where the events come.
struct ParsedEvents {
  std::vector<std::vector<sim::ProfileEvent>> tiles;
  std::exception_ptr error;
};

ProfileData decode_profile_json(const json& body, ParsedEvents events) {
  if (!body.is_object()) throw_bad_input("", "the body is {}, not a JSON object", body.type_name());
  ProfileData profile;
  profile.name = string_value(member(body, "name", ""), "name");
  profile.target = string_value(member(body, "target", ""), "target");
  profile.tiles = u32_member(body, "tiles", "");
  profile.clock_ghz = real_member(body, "clock_ghz", "");
  profile.cycles = unsigned_member(body, "cycles", "");
  profile.graph_macs = real_member(body, "graph_macs", "");
  profile.peak_macs_per_cycle = u32_member(body, "peak_macs_per_cycle", "");
  profile.peak_tile_bytes = u32_member(body, "peak_tile_bytes", "");

  const json& labels = array_member(body, "labels", "");
  for (std::size_t i = 0; i < labels.size(); ++i)
    profile.events.labels.push_back(string_value(labels[i], fmt::format("labels[{}]", i)));

  const json& regions = array_member(body, "regions", "");
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const std::string where = fmt::format("regions[{}]", i);
    package::Region region;
    region.name = string_value(member(regions[i], "name", where), where + ".name");
    region.address = u32_member(regions[i], "address", where);
    region.size = u32_member(regions[i], "size", where);
    region.kind = region_kind_named(string_value(member(regions[i], "kind", where), where + ".kind"), where + ".kind");
    region.first_superstep = superstep_member(regions[i], "first_superstep", where);
    region.last_superstep = superstep_member(regions[i], "last_superstep", where);
    region.op = string_value(member(regions[i], "op", where), where + ".op");
    if (region.resident() != (region.last_superstep < 0) || region.last_superstep < region.first_superstep)
      throw_bad_input("", "{}: lives in supersteps {} to {} (resident is -1 to -1)", where, region.first_superstep,
                      region.last_superstep);
    profile.regions.push_back(std::move(region));
  }

  const json& groups = array_member(body, "exchange_groups", "");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::string where = fmt::format("exchange_groups[{}]", g);
    if (!groups[g].is_array()) throw_bad_input("", "{}: expected an array, got {}", where, groups[g].type_name());
    std::vector<std::uint32_t> members;
    for (std::size_t i = 0; i < groups[g].size(); ++i)
      members.push_back(static_cast<std::uint32_t>(unsigned_value(groups[g][i], fmt::format("{}[{}]", where, i),
                                                                  std::numeric_limits<std::uint32_t>::max())));
    profile.exchange_groups.push_back(std::move(members));
  }

  profile.schedule = decode_schedule(member(body, "schedule", ""));

  const json& fault = member(body, "fault", "");
  if (!fault.is_null()) {
    FaultMark mark;
    mark.tile = u32_member(fault, "tile", "fault");
    mark.context = u32_member(fault, "context", "fault");
    mark.pc = u32_member(fault, "pc", "fault");
    mark.cycle = unsigned_member(fault, "cycle", "fault");
    mark.bundle = string_value(member(fault, "bundle", "fault"), "fault.bundle");
    mark.message = string_value(member(fault, "message", "fault"), "fault.message");
    profile.fault = std::move(mark);
  }

  const json& stats = array_member(body, "tile_stats", "");
  array_member(body, "events", "");
  // Counts first, so a huge `tiles` costs nothing before it is refused.
  if (stats.size() != profile.tiles)
    throw_bad_input("", "tile_stats has {} entries for {} tiles", stats.size(), profile.tiles);
  if (events.tiles.size() != profile.tiles)
    throw_bad_input("", "events has {} entries for {} tiles", events.tiles.size(), profile.tiles);
  for (std::size_t tile = 0; tile < stats.size(); ++tile)
    profile.tile_stats.push_back(decode_stats(stats[tile], fmt::format("tile_stats[{}]", tile)));
  if (events.error) std::rethrow_exception(events.error);
  profile.events.tiles = std::move(events.tiles);
  validate_profile(profile);
  return profile;
}

}  // namespace

ProfileData decode_profile_text(std::string_view text) {
  // Each of the top-level "events" array's elements is decoded as soon as
  // it is parsed, then dropped from the document.
  ParsedEvents events;
  std::string member_key;
  json body;
  try {
    body = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
      if (depth == 1 && event == json::parse_event_t::key) member_key = parsed.get<std::string>();
      const bool element_parsed = event == json::parse_event_t::array_end ||
                                  event == json::parse_event_t::object_end || event == json::parse_event_t::value;
      if (depth != 2 || member_key != "events" || !element_parsed) return true;
      const std::string where = fmt::format("tile {}", events.tiles.size());
      events.tiles.emplace_back();
      try {
        if (!events.error) events.tiles.back() = decode_events(parsed, where);
      } catch (const Error&) {
        events.error = std::current_exception();
      }
      return false;
    });
  } catch (const json::exception& error) {
    throw_bad_input("", "the body is not valid JSON: {}", error.what());
  }
  return decode_profile_json(body, std::move(events));
}

void validate_profile(const ProfileData& profile) {
  MachineModel machine = machine_by_name(profile.target);
  if (profile.tiles != machine.tiles)
    throw_bad_input("", "{} tiles, but target {} has {}", profile.tiles, machine.name, machine.tiles);
  if (profile.tile_stats.size() != profile.tiles)
    throw_bad_input("", "{} tile stats for {} tiles", profile.tile_stats.size(), profile.tiles);
  if (profile.events.tiles.size() != profile.tiles)
    throw_bad_input("", "{} event lists for {} tiles", profile.events.tiles.size(), profile.tiles);
  if (!(profile.clock_ghz > 0)) throw_bad_input("", "clock_ghz must be positive, got {}", profile.clock_ghz);
  package::check_schedule(profile.schedule, machine);
  for (std::size_t tile = 0; tile < profile.tiles; ++tile) {
    if (profile.tile_stats[tile].halt_cycle > profile.cycles)
      throw_bad_input("", "tile {} halts in cycle {}, after the run's {} cycles", tile,
                      profile.tile_stats[tile].halt_cycle, profile.cycles);
    validate_events(profile, tile);
  }
  if (profile.fault) {
    if (profile.fault->tile >= profile.tiles)
      throw_bad_input("", "the fault is on tile {} of {}", profile.fault->tile, profile.tiles);
    if (profile.fault->context > sim::kSupervisorContext)
      throw_bad_input("", "the fault is in context {} (0-{})", profile.fault->context, sim::kSupervisorContext);
    if (profile.fault->cycle > profile.cycles)
      throw_bad_input("", "the fault is in cycle {}, after the run's {} cycles", profile.fault->cycle, profile.cycles);
  }
  for (std::size_t g = 0; g < profile.exchange_groups.size(); ++g)
    for (std::uint32_t member : profile.exchange_groups[g])
      if (member >= profile.tiles)
        throw_bad_input("", "exchange group {} lists tile {} of {}", g, member, profile.tiles);
  for (std::size_t i = 0; i < profile.regions.size(); ++i) {
    const package::Region& region = profile.regions[i];
    if (region.address < machine.memory_begin || region.address > machine.memory_end ||
        region.size > machine.memory_end - region.address)
      throw_bad_input("", "region {} '{}' ({:#x}, {} bytes) lies outside tile memory ({:#x}-{:#x})", i,
                      region.name, region.address, region.size, machine.memory_begin, machine.memory_end);
  }
}

}  // namespace tilec::profile
