// Damaged files: every one must give a clean one-line tilec::Error, never a
// crash, a hang or an absurd allocation.
#include "package/body_codec.h"
#include "package/byte_io.h"
#include "package/package_file.h"
#include "sample_package.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <random>

namespace tilec::package {
namespace {

using detail::BodyCounts;
using detail::ByteWriter;
using testing::bad_input_message;
using testing::sample_package;
using Bytes = std::vector<std::uint8_t>;

// Recomputes the checksum after editing a file, as the format defines it:
// XXH64 (seed 0) of header bytes 0..47 followed by the stored body.
void reseal(Bytes& file) {
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  XXH64_update(state, file.data(), 48);
  XXH64_update(state, file.data() + kHeaderBytes, file.size() - kHeaderBytes);
  std::uint64_t checksum = XXH64_digest(state);
  XXH64_freeState(state);
  for (int i = 0; i < 8; ++i) file[48 + i] = static_cast<std::uint8_t>(checksum >> (8 * i));
}

void put_u32(Bytes& file, std::size_t offset, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) file[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

void put_u64(Bytes& file, std::size_t offset, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) file[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::string decode_error(const Bytes& file) {
  return bad_input_message([&] { decode_package(file, "bad.tpk"); });
}

// The error of a file whose decompressed body is `body`.
std::string body_error(const Bytes& body, BodyCounts counts) {
  return decode_error(detail::frame_package_file({body, counts}));
}

// A one-tile package written field by field, with knobs for breaking it.
struct MinimalBody {
  std::uint32_t segment_count = 1;
  std::uint8_t segment_flags = 1;
  std::uint32_t content_index = 0;
  std::uint8_t symbol_kind = 0;
  std::uint8_t role = 0;
  std::uint8_t element_type = 1;
  std::uint32_t rank = 1;
  std::uint32_t piece_count = 1;
  std::uint32_t group_members = 1;
  bool unused_content = false;
  std::uint32_t orders = 0;  // summation orders, each of op "gemm1"
  std::uint8_t order_flags = 0;
  std::uint8_t order_pass_parts = 0;  // written only with flag bit 1
  std::uint32_t order_part = 0;
  std::uint32_t row_orders = 0;  // row orders, each of op "norm", whole rows
  std::uint32_t row_ranges = 1;
  std::uint32_t attention_orders = 0;  // each of op "attend", one key block
  std::uint8_t attention_flags = 1;

  Bytes bytes() const {
    ByteWriter out;
    out.string("ipu21:1");
    out.string("{}");
    out.u32(8);  // one content: a bundle of nop and fnop
    out.u64(isa::encode_bundle({isa::nop(), isa::fnop()}));
    if (unused_content) {
      out.u32(8);
      out.u64(0);
    }
    out.u32(0x4C000);  // entry
    out.u32(64);       // peak
    out.u32(segment_count);
    out.string(".text");
    out.u32(0x4C000);
    out.u8(segment_flags);
    out.u32(content_index);
    out.u32(1);  // symbols
    out.string("main");
    out.u32(0x4C000);
    out.u32(8);
    out.u8(symbol_kind);
    out.u32(0);  // regions
    out.u32(group_members);
    out.u32(0);
    out.string("x");
    out.u8(role);
    out.u8(element_type);
    out.i32(0);
    out.u32(rank);
    out.i64(2);
    out.u32(piece_count);
    out.u32(0);        // tile
    out.u32(0x80000);  // address
    out.i64(0);        // start
    out.i64(2);        // size
    out.i64(1);        // stride
    out.u32(orders);
    for (std::uint32_t i = 0; i < orders; ++i) {
      out.string("gemm1");
      out.u8(order_flags);
      if (order_flags & 2) out.u8(order_pass_parts);
      out.u32(2);  // cuts 0, 16
      out.i64(0);
      out.i64(16);
      out.u32(1);  // one column range, [0, 2), part 0
      out.i64(0);
      out.i64(2);
      out.u32(1);
      out.u32(order_part);
    }
    out.u32(row_orders);
    for (std::uint32_t i = 0; i < row_orders; ++i) {
      out.string("norm");
      out.u32(row_ranges);
      out.u8(0);
      out.u32(0);  // whole rows
    }
    out.u32(attention_orders);
    for (std::uint32_t i = 0; i < attention_orders; ++i) {
      out.string("attend");
      out.u32(1);  // softmax chunks
      out.u8(attention_flags);
      out.u32(2);  // key cuts 0, 9
      out.i64(0);
      out.i64(9);
    }
    for (int field = 0; field < 5; ++field) out.u32(0);  // an unknown schedule, without a repeat
    out.i32(-1);
    out.i32(-1);
    out.u32(0);
    return out.bytes();
  }
};
constexpr BodyCounts kMinimalCounts{1, 1, 1, 1};

TEST(Corruption, MinimalBodyIsValid) {
  Package package = detail::decode_body(MinimalBody{}.bytes(), kMinimalCounts);
  EXPECT_NO_THROW(decode_package(detail::frame_package_file({MinimalBody{}.bytes(), kMinimalCounts}),
                                 "ok.tpk"));
  EXPECT_EQ(package.tiles[0].segments[0].size(), 8u);
}

TEST(Corruption, HeaderProblems) {
  Bytes good = encode_package(sample_package());
  EXPECT_EQ(decode_error({}), "bad.tpk: truncated header: 0 of 56 bytes");
  EXPECT_EQ(decode_error(Bytes(good.begin(), good.begin() + 55)),
            "bad.tpk: truncated header: 55 of 56 bytes");
  Bytes file = good;
  file[0] = 'X';
  EXPECT_EQ(decode_error(file), "bad.tpk: not a tilec package (bad magic)");
  file = good;
  put_u32(file, 8, 3);
  EXPECT_EQ(decode_error(file),
            "bad.tpk: format version 3 is not supported (this tilec reads version 5; compile the graph again)");
  file = good;
  put_u32(file, 12, 4);
  EXPECT_EQ(decode_error(file), "bad.tpk: unknown header flags 0x4");
}

TEST(Corruption, LengthAndChecksumProblems) {
  Bytes good = encode_package(sample_package());
  std::size_t stored = good.size() - kHeaderBytes;
  Bytes file(good.begin(), good.end() - 1);
  EXPECT_EQ(decode_error(file), fmt::format("bad.tpk: truncated body: {} of {} bytes", stored - 1, stored));
  file = good;
  file.push_back(0);
  EXPECT_EQ(decode_error(file), "bad.tpk: 1 bytes of trailing data after the body");
  file = good;
  file[kHeaderBytes + 10] ^= 1;
  EXPECT_EQ(decode_error(file), "bad.tpk: checksum mismatch: the file is corrupt");
  file = good;
  put_u32(file, 16, 9);  // tile count, without resealing
  EXPECT_EQ(decode_error(file), "bad.tpk: checksum mismatch: the file is corrupt");
}

TEST(Corruption, DecompressionProblems) {
  Bytes good = encode_package(sample_package());
  std::uint64_t body_bytes = detail::encode_body(sample_package()).bytes.size();
  Bytes file = good;
  put_u64(file, 40, body_bytes + 1);
  reseal(file);
  EXPECT_EQ(decode_error(file), fmt::format("bad.tpk: body decompresses to {} bytes but the "
                                            "header says {}", body_bytes, body_bytes + 1));
  put_u64(file, 40, body_bytes - 1);
  reseal(file);
  EXPECT_EQ(decode_error(file), fmt::format("bad.tpk: body decompresses to more than the {} "
                                            "bytes the header says", body_bytes - 1));
  put_u64(file, 40, kMaxBodyBytes + 1);
  reseal(file);
  EXPECT_EQ(decode_error(file), "bad.tpk: body of 2147483649 bytes exceeds the limit of 2147483648");

  // Not zstd at all.
  file = Bytes(good.begin(), good.begin() + kHeaderBytes);
  for (int i = 0; i < 32; ++i) file.push_back(static_cast<std::uint8_t>(i));
  put_u64(file, 32, 32);
  reseal(file);
  EXPECT_EQ(decode_error(file), "bad.tpk: body does not decompress: Unknown frame descriptor");

  // A frame cut short, and a frame with bytes after it.
  file = Bytes(good.begin(), good.end() - 5);
  put_u64(file, 32, good.size() - kHeaderBytes - 5);
  reseal(file);
  EXPECT_EQ(decode_error(file), "bad.tpk: body's compressed frame is incomplete");
  file = good;
  file.insert(file.end(), {1, 2, 3});
  put_u64(file, 32, good.size() - kHeaderBytes + 3);
  reseal(file);
  EXPECT_EQ(decode_error(file), "bad.tpk: 3 bytes of trailing data after the compressed body");
}

// MinimalBody's layout: contents at 17, the tile at 29 (segment count at 37,
// segment flags at 54, content index at 55, symbol kind at 79), groups at
// 84, the binding at 92 (role 97, element type 98, rank 103, piece count
// 115), the gemm, row and attention order counts at 151, 155 and 159, the
// schedule at 163, 195 bytes in all.
TEST(Corruption, CountsBeyondTheBodyAreRejectedBeforeAllocating) {
  Bytes body = MinimalBody{}.bytes();
  ASSERT_EQ(body.size(), 195u);
  EXPECT_EQ(body_error(body, {4'000'000'000u, 1, 1, 1}),
            "bad.tpk: body offset 29: header's tile count 4000000000 needs more than the 166 "
            "bytes left");
  EXPECT_EQ(body_error(body, {1, 4'000'000'000u, 1, 1}),
            "bad.tpk: body offset 17: header's segment content count 4000000000 needs more than "
            "the 178 bytes left");
  EXPECT_EQ(body_error(body, {1, 1, 4'000'000'000u, 1}),
            "bad.tpk: body offset 84: header's exchange group count 4000000000 needs more than "
            "the 111 bytes left");
  EXPECT_EQ(body_error(body, {1, 1, 1, 4'000'000'000u}),
            "bad.tpk: body offset 92: header's binding count 4000000000 needs more than the 103 "
            "bytes left");
  EXPECT_EQ(body_error(MinimalBody{.segment_count = 0xFFFFFFFF}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 37: segment count 4294967295 needs at least 55834574835 bytes "
            "but only 154 remain");
  EXPECT_EQ(body_error(MinimalBody{.rank = 0x10000000}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 103: rank 268435456 needs at least 2147483648 bytes but only 88 "
            "remain");
  EXPECT_EQ(body_error(MinimalBody{.piece_count = 1000}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 115: piece count 1000 needs at least 32000 bytes but only 76 "
            "remain");
  EXPECT_EQ(body_error(MinimalBody{.group_members = 100}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 84: group member count 100 needs at least 400 bytes but only "
            "107 remain");
}

TEST(Corruption, BadCodesAndIndices) {
  EXPECT_EQ(body_error(MinimalBody{.segment_flags = 3}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 54: unknown segment flags 0x03");
  EXPECT_EQ(body_error(MinimalBody{.content_index = 1}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 55: segment content 1 does not exist (1 contents)");
  EXPECT_EQ(body_error(MinimalBody{.symbol_kind = 4}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 79: unknown symbol kind code 4");
  EXPECT_EQ(body_error(MinimalBody{.role = 3}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 97: unknown binding role code 3");
  EXPECT_EQ(body_error(MinimalBody{.element_type = 6}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 98: unknown element type code 6");
  EXPECT_EQ(body_error(MinimalBody{.unused_content = true}.bytes(), {1, 2, 1, 1}),
            "bad.tpk: body offset 96: segment content 1 is used by no segment");
}

TEST(Corruption, TrailingBytesInsideTheBody) {
  Bytes body = MinimalBody{}.bytes();
  body.push_back(7);
  EXPECT_EQ(body_error(body, kMinimalCounts),
            "bad.tpk: body offset 195: 1 bytes of trailing data after the schedule");
}

TEST(Corruption, SummationOrderProblems) {
  const Package one = detail::decode_body(MinimalBody{.orders = 1}.bytes(), kMinimalCounts);
  ASSERT_EQ(one.summation_order.gemms.size(), 1u);
  EXPECT_EQ(one.summation_order.gemms.at("gemm1").cuts, (std::vector<std::int64_t>{0, 16}));
  EXPECT_EQ(body_error(MinimalBody{.orders = 1, .order_flags = 4}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 164: unknown summation order flags 0x04");
  const Package passes =
      detail::decode_body(MinimalBody{.orders = 1, .order_flags = 2, .order_pass_parts = 8}.bytes(), kMinimalCounts);
  EXPECT_EQ(passes.summation_order.gemms.at("gemm1").pass_parts, 8);
  EXPECT_EQ(body_error(MinimalBody{.orders = 1, .order_flags = 2, .order_pass_parts = 1}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 165: op 'gemm1' is summed in passes of 1 parts (at least 2)");
  EXPECT_EQ(body_error(MinimalBody{.orders = 1, .order_part = 1}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 209: part 1 of op 'gemm1' does not exist (1 parts)");
  EXPECT_EQ(body_error(MinimalBody{.orders = 2}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 213: op 'gemm1' has two summation orders");
  const Package rows = detail::decode_body(MinimalBody{.row_orders = 1}.bytes(), kMinimalCounts);
  EXPECT_EQ(rows.summation_order.rows.at("norm"), reference::RowSplit{});
  EXPECT_EQ(body_error(MinimalBody{.row_orders = 1, .row_ranges = 0}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 167: op 'norm' has 0 column ranges per part");
  EXPECT_EQ(body_error(MinimalBody{.row_orders = 2}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 176: op 'norm' has two row orders");
  const Package attention = detail::decode_body(MinimalBody{.attention_orders = 1}.bytes(), kMinimalCounts);
  EXPECT_EQ(attention.summation_order.attentions.at("attend"), (reference::AttentionSplit{{0, 9}, 1, true}));
  EXPECT_EQ(body_error(MinimalBody{.attention_orders = 1, .attention_flags = 4}.bytes(), kMinimalCounts),
            "bad.tpk: body offset 177: unknown attention order flags 0x04");
}

TEST(Corruption, EveryFlippedByteIsAnError) {
  Bytes good = encode_package(sample_package());
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (std::uint8_t mask : {0x01, 0x80, 0xFF}) {
      Bytes file = good;
      file[i] ^= mask;
      EXPECT_FALSE(decode_error(file).empty()) << "byte " << i << " mask " << int(mask);
    }
  }
}

TEST(Corruption, EveryTruncationIsAnError) {
  Bytes good = encode_package(sample_package());
  for (std::size_t size = 0; size < good.size(); ++size)
    EXPECT_FALSE(decode_error(Bytes(good.begin(), good.begin() + size)).empty()) << size;
}

// Past the checksum: damage inside a correctly sealed file must still be
// caught by the body's own checks (or give a package that validates).
TEST(Corruption, FlippedBodyBytesBehindAValidChecksum) {
  detail::EncodedBody encoded = detail::encode_body(sample_package());
  int accepted = 0;
  for (std::size_t i = 0; i < encoded.bytes.size(); ++i) {
    Bytes body = encoded.bytes;
    body[i] ^= 0xFF;
    try {
      decode_package(detail::frame_package_file({body, encoded.counts}), "bad.tpk");
      ++accepted;  // e.g. a changed byte of code or of a name
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::BadInput);
      EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos);
    }
  }
  EXPECT_LT(accepted, static_cast<int>(encoded.bytes.size()));
}

TEST(Corruption, TruncatedBodiesBehindAValidChecksum) {
  detail::EncodedBody encoded = detail::encode_body(sample_package());
  for (std::size_t size = 0; size < encoded.bytes.size(); ++size) {
    Bytes body(encoded.bytes.begin(), encoded.bytes.begin() + size);
    EXPECT_FALSE(body_error(body, encoded.counts).empty()) << size;
  }
}

TEST(Corruption, RandomBodiesAndFiles) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 300; ++round) {
    Bytes bytes(random() % 400);
    for (std::uint8_t& byte : bytes) byte = static_cast<std::uint8_t>(random());
    // Small counts so that parsing goes deep before failing.
    BodyCounts counts{static_cast<std::uint32_t>(random() % 3), static_cast<std::uint32_t>(random() % 3),
                      static_cast<std::uint32_t>(random() % 3), static_cast<std::uint32_t>(random() % 3)};
    EXPECT_FALSE(body_error(bytes, counts).empty());
    // Random bytes behind a good magic.
    Bytes file = bytes;
    file.resize(bytes.size() + sizeof kMagic);
    std::copy_backward(bytes.begin(), bytes.end(), file.end());
    std::copy(std::begin(kMagic), std::end(kMagic), file.begin());
    EXPECT_FALSE(decode_error(file).empty());
  }
}

}  // namespace
}  // namespace tilec::package
