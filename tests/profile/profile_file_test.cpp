// The profile file: round trips, determinism, and a one-line BadInput naming
// the file for every way a file can be wrong.
#include "profile/profile_codec.h"
#include "profile/profile_file.h"
#include "profile_test_support.h"
#include "support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include <filesystem>
#include <random>

namespace tilec::profile {
namespace {

using testing::blank_profile;
using testing::mlp_profile;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Named after the running test: ctest runs tests as parallel processes.
std::string temp_path(const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/tilec_profile_" + test->test_suite_name() + "_" + test->name() + "_" + name;
}

void expect_same_profile(const ProfileData& a, const ProfileData& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.tiles, b.tiles);
  EXPECT_EQ(a.clock_ghz, b.clock_ghz);
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_EQ(a.graph_macs, b.graph_macs);
  EXPECT_EQ(a.peak_macs_per_cycle, b.peak_macs_per_cycle);
  EXPECT_EQ(a.peak_tile_bytes, b.peak_tile_bytes);
  EXPECT_EQ(a.events.labels, b.events.labels);
  EXPECT_EQ(a.exchange_groups, b.exchange_groups);
  EXPECT_EQ(a.schedule, b.schedule);
  ASSERT_EQ(a.fault.has_value(), b.fault.has_value());
  if (a.fault) {
    EXPECT_EQ(a.fault->tile, b.fault->tile);
    EXPECT_EQ(a.fault->context, b.fault->context);
    EXPECT_EQ(a.fault->pc, b.fault->pc);
    EXPECT_EQ(a.fault->cycle, b.fault->cycle);
    EXPECT_EQ(a.fault->bundle, b.fault->bundle);
    EXPECT_EQ(a.fault->message, b.fault->message);
  }
  ASSERT_EQ(a.regions.size(), b.regions.size());
  for (std::size_t i = 0; i < a.regions.size(); ++i) {
    EXPECT_EQ(a.regions[i].name, b.regions[i].name);
    EXPECT_EQ(a.regions[i].address, b.regions[i].address);
    EXPECT_EQ(a.regions[i].size, b.regions[i].size);
    EXPECT_EQ(a.regions[i].kind, b.regions[i].kind);
    EXPECT_EQ(a.regions[i].first_superstep, b.regions[i].first_superstep);
    EXPECT_EQ(a.regions[i].last_superstep, b.regions[i].last_superstep);
    EXPECT_EQ(a.regions[i].op, b.regions[i].op);
  }
  ASSERT_EQ(a.tile_stats.size(), b.tile_stats.size());
  for (std::size_t t = 0; t < a.tile_stats.size(); ++t) {
    const sim::TileStats &x = a.tile_stats[t], &y = b.tile_stats[t];
    EXPECT_EQ(x.halt_cycle, y.halt_cycle);
    EXPECT_EQ(x.bundles, y.bundles);
    EXPECT_EQ(x.amp_macs, y.amp_macs);
    EXPECT_EQ(x.bytes_loaded, y.bytes_loaded);
    EXPECT_EQ(x.bytes_stored, y.bytes_stored);
    EXPECT_EQ(x.bytes_sent, y.bytes_sent);
    EXPECT_EQ(x.bytes_received, y.bytes_received);
    EXPECT_EQ(x.sync_wait_cycles, y.sync_wait_cycles);
    EXPECT_EQ(x.memory_bytes, y.memory_bytes);
  }
  ASSERT_EQ(a.events.tiles.size(), b.events.tiles.size());
  for (std::size_t t = 0; t < a.events.tiles.size(); ++t) {
    ASSERT_EQ(a.events.tiles[t].size(), b.events.tiles[t].size()) << "tile " << t;
    for (std::size_t i = 0; i < a.events.tiles[t].size(); ++i) {
      const sim::ProfileEvent &x = a.events.tiles[t][i], &y = b.events.tiles[t][i];
      EXPECT_EQ(x.begin, y.begin);
      EXPECT_EQ(x.end, y.end);
      EXPECT_EQ(x.label, y.label);
      EXPECT_EQ(x.detail, y.detail);
      EXPECT_EQ(x.kind, y.kind);
      EXPECT_EQ(x.context, y.context);
      EXPECT_EQ(x.op, y.op);
      EXPECT_EQ(x.amp_instructions, y.amp_instructions);
      EXPECT_EQ(x.amp_macs, y.amp_macs);
      EXPECT_EQ(x.peer, y.peer);
    }
  }
}

TEST(ProfileFile, RoundTripsARealRun) {
  const ProfileData& profile = mlp_profile();
  ASSERT_GT(profile.cycles, 0u);
  const std::string path = temp_path("round_trip.tprof");
  write_profile(path, profile);
  expect_same_profile(profile, read_profile(path));
}

TEST(ProfileFile, RoundTripsEveryFieldOfAHandMadeProfile) {
  ProfileData profile = blank_profile(2, 1000);
  profile.name = "odd \"name\" </script> \xc2\xb5";
  profile.clock_ghz = 1.33;
  profile.graph_macs = 7229067264.0;
  profile.peak_tile_bytes = 12345;
  profile.tile_stats[1] = sim::TileStats{999, 17, {1, 2, 3}, 4, 5, 6, 7, 8};
  sim::ProfileEvent gemm = testing::kernel(5, 0, 10, 4, 6);
  gemm.amp_instructions = 3;
  gemm.amp_macs = 384;
  sim::ProfileEvent multicast = testing::send(20, 30);
  multicast.peer = sim::kMulticastPeer | 1;
  profile.exchange_groups = {{0}, {0, 1}};
  profile.schedule = package::Schedule{4, 2, 1, 2, "layers", 1, 2, 3};
  profile.fault = FaultMark{1, 3, 0x4e010, 950, "ld128 $a0:3, $m2, 0", "tile 1, worker 3, pc 0x4e010: misaligned"};
  profile.events.tiles[1] = {gemm, multicast, testing::sync_wait(30, 900, 0), testing::halt(999)};
  profile.tile_stats[1].memory_bytes = 77;
  profile.regions = {{"w1", 0x80000, 4096, package::RegionKind::Tensor, 2, 5, "layers/fc1"},
                     {"code", 0x4c000, 100, package::RegionKind::Code},
                     {"args", 0x4d000, 8, package::RegionKind::Arguments},
                     {"slots", 0x90000, 64, package::RegionKind::ExchangeBuffer},
                     {"partials", 0xe7000, 0x1000, package::RegionKind::Scratch}};
  const std::string path = temp_path("hand_made.tprof");
  write_profile(path, profile);
  expect_same_profile(profile, read_profile(path));
}

TEST(ProfileFile, SameProfileGivesTheSameBytes) {
  EXPECT_EQ(encode_profile_file(mlp_profile()), encode_profile_file(mlp_profile()));
}

// The body is written as text in pieces, never as one document: the
// pieces together are the document's JSON.
TEST(ProfileFile, TheWrittenBodyIsTheDocumentInPieces) {
  ProfileData profile = blank_profile(3, 100'000'000);
  // Enough events for several pieces of about a megabyte; tile 1 has none.
  for (std::uint32_t tile : {0u, 2u}) {
    for (std::uint64_t i = 0; i < 40'000; ++i)
      profile.events.tiles[tile].push_back(testing::kernel(static_cast<std::uint8_t>(i % 6), 1000 * i, 1000 * i + 999));
    profile.events.tiles[tile].push_back(testing::halt(40'000'000 + tile));
  }
  std::vector<std::size_t> pieces;
  std::string text;
  write_profile_json(profile, [&](std::string_view piece) {
    pieces.push_back(piece.size());
    text += piece;
  });
  EXPECT_GT(pieces.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(text), encode_profile_json(profile));
  std::string small;
  write_profile_json(mlp_profile(), [&](std::string_view piece) { small += piece; });
  EXPECT_EQ(nlohmann::json::parse(small), encode_profile_json(mlp_profile()));

  const std::string path = temp_path("pieces.tprof");
  write_profile(path, profile);
  expect_same_profile(profile, read_profile(path));
}

// ---- errors -----------------------------------------------------------------

void expect_bad_file(const std::vector<std::uint8_t>& bytes, const std::string& expected) {
  const std::string path = temp_path("bad.tprof");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  try {
    read_profile(path);
    ADD_FAILURE() << "read a bad file; expected: " << expected;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    EXPECT_THAT(std::string(error.what()), StartsWith(path + ": "));
    EXPECT_THAT(std::string(error.what()), HasSubstr(expected));
    EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos);
  }
}

std::vector<std::uint8_t> good_file() { return encode_profile_file(mlp_profile()); }

// A file around any body text, framed correctly (right lengths, checksum).
std::vector<std::uint8_t> framed(const std::string& body, std::uint32_t version = kFormatVersion,
                                 std::uint32_t flags = 0, std::int64_t claimed_extra = 0) {
  std::vector<std::uint8_t> stored(ZSTD_compressBound(body.size()));
  stored.resize(ZSTD_compress(stored.data(), stored.size(), body.data(), body.size(), 1));
  std::vector<std::uint8_t> file(std::begin(kMagic), std::end(kMagic));
  auto put = [&](std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) file.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
  };
  put(version, 4);
  put(flags, 4);
  put(stored.size(), 8);
  put(static_cast<std::uint64_t>(static_cast<std::int64_t>(body.size()) + claimed_extra), 8);
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  XXH64_update(state, file.data(), file.size());
  XXH64_update(state, stored.data(), stored.size());
  put(XXH64_digest(state), 8);
  XXH64_freeState(state);
  file.insert(file.end(), stored.begin(), stored.end());
  return file;
}

nlohmann::json good_body() { return encode_profile_json(mlp_profile()); }

TEST(ProfileFileErrors, MissingFileAndDirectory) {
  for (const std::string& path : {temp_path("missing.tprof"), ::testing::TempDir()}) {
    try {
      read_profile(path);
      ADD_FAILURE() << "read " << path;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::BadInput);
      EXPECT_THAT(std::string(error.what()), StartsWith(path + ": cannot"));
    }
  }
}

TEST(ProfileFileErrors, Header) {
  std::vector<std::uint8_t> file = good_file();
  expect_bad_file({}, "truncated header: 0 of 40 bytes");
  expect_bad_file({file.begin(), file.begin() + 20}, "truncated header: 20 of 40 bytes");
  std::vector<std::uint8_t> magic = file;
  magic[7] = 'G';
  expect_bad_file(magic, "not a tilec profile (bad magic)");
  expect_bad_file(framed(good_body().dump(), 3), "profile format version 3 is not supported (this tilec reads version 5)");
  expect_bad_file(framed(good_body().dump(), kFormatVersion, 4), "unknown header flags 0x4");
}

TEST(ProfileFileErrors, BodyFraming) {
  std::vector<std::uint8_t> file = good_file();
  expect_bad_file({file.begin(), file.end() - 3}, "truncated body");
  std::vector<std::uint8_t> trailing = file;
  trailing.push_back(0);
  expect_bad_file(trailing, "1 bytes of trailing data after the body");
  std::vector<std::uint8_t> flipped = file;
  flipped[kHeaderBytes + flipped.size() / 2 - kHeaderBytes / 2] ^= 0x10;
  expect_bad_file(flipped, "checksum mismatch");
  expect_bad_file(framed(good_body().dump(), kFormatVersion, 0, 5), "bytes but the header says");
  expect_bad_file(framed(good_body().dump(), kFormatVersion, 0, -5), "more than the");
}

TEST(ProfileFileErrors, StoredBodyIsNotZstd) {
  std::vector<std::uint8_t> file = framed("{}");
  // Replace the stored frame by bytes that are no zstd frame, then re-frame
  // the header around them by hand so that only the frame is wrong.
  std::vector<std::uint8_t> junk(file.begin(), file.begin() + kHeaderBytes);
  const std::vector<std::uint8_t> stored = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int i = 0; i < 8; ++i) junk[16 + i] = static_cast<std::uint8_t>(stored.size() >> (8 * i));
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  XXH64_update(state, junk.data(), kChecksumOffset);
  XXH64_update(state, stored.data(), stored.size());
  const std::uint64_t sum = XXH64_digest(state);
  XXH64_freeState(state);
  for (int i = 0; i < 8; ++i) junk[32 + i] = static_cast<std::uint8_t>(sum >> (8 * i));
  junk.insert(junk.end(), stored.begin(), stored.end());
  expect_bad_file(junk, "body does not decompress");
}

TEST(ProfileFileErrors, BodyIsNotAProfileObject) {
  expect_bad_file(framed("{\"name\": "), "the body is not valid JSON");
  expect_bad_file(framed("[1, 2]"), "the body is array, not a JSON object");
  // Deep nesting is no risk to the reader's stack.
  expect_bad_file(framed(std::string(200000, '[') + std::string(200000, ']')), "the body is array");
  expect_bad_file(framed("{\"events\": " + std::string(200000, '[') + std::string(200000, ']') + "}"), "missing key");
}

// Sets field `field` (of the 10 a flat event has) of tile 0's first event
// of `kind`.
void set_first_event_field(nlohmann::json& body, sim::ProfileEventKind kind, std::size_t field, std::uint64_t value) {
  constexpr std::size_t kFields = 10;
  nlohmann::json& events = body["events"][0];
  for (std::size_t i = 0; i < events.size(); i += kFields)
    if (events[i] == static_cast<unsigned>(kind)) {
      events[i + field] = value;
      return;
    }
  ADD_FAILURE() << "tile 0 has no event of kind " << static_cast<unsigned>(kind);
}

// One field of the body changed; the error names the field.
struct BodyCase {
  const char* what;
  void (*edit)(nlohmann::json&);
  const char* expected;
};

const BodyCase kBodyCases[] = {
    {"missing key", [](nlohmann::json& b) { b.erase("cycles"); }, "missing key 'cycles'"},
    {"string for a count", [](nlohmann::json& b) { b["tiles"] = "16"; }, "tiles: expected a non-negative integer, got string"},
    {"negative cycles", [](nlohmann::json& b) { b["cycles"] = -1; }, "cycles: expected a non-negative integer, got -1"},
    {"fraction for a count", [](nlohmann::json& b) { b["peak_macs_per_cycle"] = 1.5; }, "peak_macs_per_cycle: expected a non-negative integer"},
    {"count too large", [](nlohmann::json& b) { b["peak_tile_bytes"] = 1ull << 40; }, "peak_tile_bytes: 1099511627776 is larger than 4294967295"},
    {"negative clock", [](nlohmann::json& b) { b["clock_ghz"] = -1.5; }, "clock_ghz: expected a finite non-negative number"},
    {"zero clock", [](nlohmann::json& b) { b["clock_ghz"] = 0; }, "clock_ghz must be positive"},
    {"name not a string", [](nlohmann::json& b) { b["name"] = 3; }, "name: expected a string, got number"},
    {"unknown target", [](nlohmann::json& b) { b["target"] = "ipu99"; }, "ipu99"},
    {"tiles disagree with target", [](nlohmann::json& b) { b["target"] = "ipu21:8"; }, "16 tiles, but target ipu21:8 has 8"},
    {"too few stats", [](nlohmann::json& b) { b["tile_stats"].erase(0); }, "tile_stats has 15 entries for 16 tiles"},
    {"too few event lists", [](nlohmann::json& b) { b["events"].erase(0); }, "events has 15 entries for 16 tiles"},
    {"label not a string", [](nlohmann::json& b) { b["labels"][1] = 1; }, "labels[1]: expected a string"},
    {"stat missing", [](nlohmann::json& b) { b["tile_stats"][2].erase("bundles"); }, "tile_stats[2]: missing key 'bundles'"},
    {"two MAC counts", [](nlohmann::json& b) { b["tile_stats"][2]["amp_macs"].erase(0); }, "tile_stats[2].amp_macs: expected 3 counts"},
    {"halt after the run", [](nlohmann::json& b) { b["tile_stats"][3]["halt_cycle"] = b["cycles"].get<std::uint64_t>() + 1; }, "tile 3 halts in cycle"},
    {"partial event", [](nlohmann::json& b) { b["events"][0].push_back(1); }, "tile 0: "},
    {"event field not a number", [](nlohmann::json& b) { b["events"][0][2] = "x"; }, "tile 0 event 0 begin: expected a non-negative integer"},
    // Each tile's events are decoded as they are parsed: the error still
    // names the tile, the first one wins, and the other members come first.
    {"a later tile's events", [](nlohmann::json& b) {
       b["events"][5][2] = "x";
       b["events"][7][2] = "y";
     }, "tile 5 event 0 begin: expected a non-negative integer, got string"},
    {"events and stats both wrong", [](nlohmann::json& b) {
       b["events"][0][2] = "x";
       b["tile_stats"].erase(0);
     }, "tile_stats has 15 entries for 16 tiles"},
    {"a tile's events not a list", [](nlohmann::json& b) { b["events"][3] = {{"begin", 1}}; }, "tile 3: expected an array, got object"},
    {"events not a list", [](nlohmann::json& b) { b["events"] = 5; }, "events: expected an array, got number"},
    {"unknown event kind", [](nlohmann::json& b) { b["events"][0][0] = 4; }, "tile 0 event 0 kind: 4 is larger than 3"},
    {"bad context", [](nlohmann::json& b) { b["events"][0][1] = 7; }, "tile 0 event 0 context: 7 is larger than 6"},
    {"label out of range", [](nlohmann::json& b) { b["events"][0][4] = 999; }, "tile 0 event 0: label 999 is out of range"},
    {"sync out of order", [](nlohmann::json& b) { set_first_event_field(b, sim::ProfileEventKind::SyncWait, 5, 7); }, "waits at sync 7 where sync 0 comes next"},
    {"peer out of range", [](nlohmann::json& b) { set_first_event_field(b, sim::ProfileEventKind::SupervisorExchange, 9, 99); }, "sends to tile 99 of 16"},
    {"group out of range", [](nlohmann::json& b) { set_first_event_field(b, sim::ProfileEventKind::SupervisorExchange, 9, sim::kMulticastPeer + 999); }, "sends to exchange group 999 of"},
    {"group member out of range", [](nlohmann::json& b) { b["exchange_groups"][0][0] = 99; }, "exchange group 0 lists tile 99 of 16"},
    {"peer on a sync", [](nlohmann::json& b) { set_first_event_field(b, sim::ProfileEventKind::SyncWait, 9, 1); }, "a sync event names a peer"},
    {"fault on a missing tile", [](nlohmann::json& b) {
       b["fault"] = {{"tile", 99}, {"context", 6}, {"pc", 0}, {"cycle", 1}, {"bundle", ""}, {"message", "x"}};
     }, "the fault is on tile 99 of 16"},
    {"fault after the run", [](nlohmann::json& b) {
       b["fault"] = {{"tile", 1}, {"context", 6}, {"pc", 0}, {"cycle", 1u << 30}, {"bundle", ""}, {"message", "x"}};
     }, "the fault is in cycle 1073741824, after the run's"},
    {"fault without a message", [](nlohmann::json& b) {
       b["fault"] = {{"tile", 1}, {"context", 6}, {"pc", 0}, {"cycle", 1}, {"bundle", ""}};
     }, "fault: missing key 'message'"},
    {"op out of range", [](nlohmann::json& b) { b["events"][0][6] = 999; }, "tile 0 event 0: op 999 is out of range"},
    {"begins after it ends", [](nlohmann::json& b) { b["events"][0][2] = b["events"][0][3].get<std::uint64_t>() + 1; }, "tile 0 event 0: begins in cycle"},
    {"ends after the run", [](nlohmann::json& b) {
       nlohmann::json& events = b["events"][0];
       events[events.size() - 7] = b["cycles"].get<std::uint64_t>() + 10;
       events[events.size() - 8] = b["cycles"].get<std::uint64_t>() + 10;
     }, "after the run's"},
    {"events out of order", [](nlohmann::json& b) {
       nlohmann::json& events = b["events"][0];
       nlohmann::json first(events.begin(), events.begin() + 10);
       events.erase(events.begin(), events.begin() + 10);
       events.insert(events.end(), first.begin(), first.end());
     }, "before the event before it"},
    {"region kind", [](nlohmann::json& b) { b["regions"][0]["kind"] = "heap"; }, "regions[0].kind: unknown region kind 'heap'"},
    {"region lifetime", [](nlohmann::json& b) { b["regions"][0]["first_superstep"] = -2; }, "regions[0].first_superstep: expected a superstep"},
    {"region lifetime backwards", [](nlohmann::json& b) {
       b["regions"][0]["first_superstep"] = 3;
       b["regions"][0]["last_superstep"] = 1;
     }, "regions[0]: lives in supersteps 3 to 1"},
    {"region outside memory", [](nlohmann::json& b) { b["regions"][0]["address"] = 0x100; }, "lies outside tile memory"},
    {"region op not a string", [](nlohmann::json& b) { b["regions"][0]["op"] = 1; }, "regions[0].op: expected a string"},
    {"schedule without supersteps", [](nlohmann::json& b) { b["schedule"]["supersteps"] = 0; }, "schedule: has no supersteps"},
    {"schedule field missing", [](nlohmann::json& b) { b["schedule"].erase("chunks"); }, "schedule: missing key 'chunks'"},
    {"schedule groups past the tiles", [](nlohmann::json& b) { b["schedule"]["groups"] = 99; }, "schedule: 99 groups of"},
    {"repeat past the chunk", [](nlohmann::json& b) {
       b["schedule"]["repeat"] = {{"name", "blocks"}, {"first_superstep", 1}, {"last_superstep", 99}, {"count", 2}};
     }, "schedule: repeat 'blocks' has supersteps 1 to 99 of the chunk's"},
};

TEST(ProfileFileErrors, EveryBodyField) {
  for (const BodyCase& c : kBodyCases) {
    SCOPED_TRACE(c.what);
    nlohmann::json body = good_body();
    c.edit(body);
    expect_bad_file(framed(body.dump()), c.expected);
  }
}

TEST(ProfileFileErrors, WorkerEventInTheSupervisorIsRefused) {
  ProfileData profile = blank_profile(1, 100);
  profile.events.tiles[0] = {testing::kernel(sim::kSupervisorContext, 0, 10)};
  expect_bad_file(framed(encode_profile_json(profile).dump()), "a kernel event cannot run in context 6");
  profile.events.tiles[0] = {testing::event(sim::ProfileEventKind::Halt, sim::kSupervisorContext, 5, 6, 2)};
  expect_bad_file(framed(encode_profile_json(profile).dump()), "a halt spans cycles 5 to 6");
  profile.events.tiles[0] = {testing::sync_wait(0, 10, 0)};
  profile.events.tiles[0][0].op = 6;
  expect_bad_file(framed(encode_profile_json(profile).dump()), "a sync event names an op");
  profile.events.tiles[0][0].op = sim::kNoOpLabel;
  profile.events.tiles[0][0].amp_macs = 1;
  expect_bad_file(framed(encode_profile_json(profile).dump()), "a sync event carries AMP work");
}

// Whatever is cut off or flipped, reading gives a BadInput, never a crash.
TEST(ProfileFileErrors, TruncatedOrDamagedFilesNeverCrash) {
  const std::vector<std::uint8_t> file = good_file();
  const std::string path = temp_path("damaged.tprof");
  auto read_bytes = [&](const std::vector<std::uint8_t>& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    try {
      read_profile(path);
      return true;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::BadInput) << error.what();
      return false;
    }
  };
  for (std::size_t size = 0; size < file.size(); size += 1 + size / 8)
    EXPECT_FALSE(read_bytes({file.begin(), file.begin() + static_cast<std::ptrdiff_t>(size)})) << size;
  std::mt19937 random(1);
  for (int trial = 0; trial < 64; ++trial) {
    std::vector<std::uint8_t> damaged = file;
    damaged[random() % damaged.size()] ^= static_cast<std::uint8_t>(1 + random() % 255);
    EXPECT_FALSE(read_bytes(damaged));
  }
}

TEST(ProfileFileErrors, UnwritablePathIsAFailure) {
  try {
    write_profile(::testing::TempDir() + "/no/such/dir/x.tprof", mlp_profile());
    ADD_FAILURE();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Failure);
    EXPECT_THAT(std::string(error.what()), HasSubstr("cannot write"));
  }
}

}  // namespace
}  // namespace tilec::profile
