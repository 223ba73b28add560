#include "package/package_file.h"

#include "package/body_codec.h"
#include "package/byte_io.h"
#include "package/validate.h"

#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

namespace tilec::package {

namespace {

using detail::BodyCounts;
using detail::ByteReader;
using detail::ByteWriter;

std::uint64_t file_checksum(std::span<const std::uint8_t> header_before_checksum,
                            std::span<const std::uint8_t> stored_body) {
  std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> state(XXH64_createState(),
                                                                    &XXH64_freeState);
  TILEC_CHECK(state != nullptr, "cannot allocate a checksum state");
  XXH64_reset(state.get(), 0);
  XXH64_update(state.get(), header_before_checksum.data(), header_before_checksum.size());
  XXH64_update(state.get(), stored_body.data(), stored_body.size());
  return XXH64_digest(state.get());
}

std::vector<std::uint8_t> compress(std::span<const std::uint8_t> body) {
  std::vector<std::uint8_t> stored(ZSTD_compressBound(body.size()));
  std::size_t size =
      ZSTD_compress(stored.data(), stored.size(), body.data(), body.size(), kCompressionLevel);
  TILEC_CHECK(!ZSTD_isError(size), "zstd compression failed: {}", ZSTD_getErrorName(size));
  stored.resize(size);
  return stored;
}

// Decompresses exactly one zstd frame that must produce exactly `expected`
// bytes. The output starts at a size in proportion to the input and grows
// as data actually arrives, so a header that claims a huge body costs
// nothing unless the frame really holds it.
std::vector<std::uint8_t> decompress(std::span<const std::uint8_t> stored, std::uint64_t expected) {
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> context(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  TILEC_CHECK(context != nullptr, "cannot allocate a zstd context");
  std::vector<std::uint8_t> body;
  std::size_t produced = 0;
  ZSTD_inBuffer input{stored.data(), stored.size(), 0};
  // Packages compress 3-4x; zeroed data far more, hence the margin.
  const std::uint64_t first_size = std::max<std::uint64_t>(1 << 20, 64 * stored.size());
  while (true) {
    if (produced == body.size()) {
      if (body.size() == expected) {
        // Full: the frame must end here, with nothing more to write.
        std::uint8_t probe = 0;
        ZSTD_outBuffer output{&probe, 1, 0};
        std::size_t status = ZSTD_decompressStream(context.get(), &output, &input);
        if (ZSTD_isError(status))
          throw_bad_input("", "body does not decompress: {}", ZSTD_getErrorName(status));
        if (output.pos != 0)
          throw_bad_input("", "body decompresses to more than the {} bytes the header says",
                          expected);
        if (status != 0) throw_bad_input("", "body's compressed frame is incomplete");
        break;
      }
      body.resize(static_cast<std::size_t>(std::min(expected, std::max<std::uint64_t>(first_size, 2 * body.size()))));
    }
    ZSTD_outBuffer output{body.data(), body.size(), produced};
    std::size_t consumed = input.pos;
    std::size_t status = ZSTD_decompressStream(context.get(), &output, &input);
    if (ZSTD_isError(status))
      throw_bad_input("", "body does not decompress: {}", ZSTD_getErrorName(status));
    bool progressed = output.pos != produced || input.pos != consumed;
    produced = output.pos;
    if (status == 0) break;  // the frame ended
    if (!progressed) throw_bad_input("", "body's compressed frame is incomplete");
  }
  if (produced != expected)
    throw_bad_input("", "body decompresses to {} bytes but the header says {}", produced, expected);
  if (input.pos != input.size)
    throw_bad_input("", "{} bytes of trailing data after the compressed body",
                    input.size - input.pos);
  return body;
}

}  // namespace

PackageHeader decode_header(std::span<const std::uint8_t> file, const std::string& name) {
  try {
    if (file.size() < kHeaderBytes)
      throw_bad_input("", "truncated header: {} of {} bytes", file.size(), kHeaderBytes);
    if (!std::equal(std::begin(kMagic), std::end(kMagic), file.begin()))
      throw_bad_input("", "not a tilec package (bad magic)");
    ByteReader in(file.first(kHeaderBytes), "header");
    in.raw(sizeof kMagic, "magic");
    PackageHeader header;
    header.version = in.u32();
    if (header.version != kFormatVersion)
      throw_bad_input("", "format version {} is not supported (this tilec reads version {}; compile the graph again)",
                      header.version, kFormatVersion);
    header.flags = in.u32();
    if (header.flags != 0) throw_bad_input("", "unknown header flags {:#x}", header.flags);
    header.tiles = in.u32();
    header.contents = in.u32();
    header.groups = in.u32();
    header.bindings = in.u32();
    header.stored_body_bytes = in.u64();
    header.body_bytes = in.u64();
    header.checksum = in.u64();
    return header;
  } catch (const Error& error) {
    throw error.within(name);
  }
}

std::vector<std::uint8_t> encode_package(const Package& package) {
  validate(package);
  return detail::frame_package_file(detail::encode_body(package));
}

std::vector<std::uint8_t> detail::frame_package_file(const EncodedBody& body) {
  TILEC_CHECK(body.bytes.size() <= kMaxBodyBytes, "package body of {} bytes exceeds the format's {}",
              body.bytes.size(), kMaxBodyBytes);
  std::vector<std::uint8_t> stored = compress(body.bytes);

  ByteWriter out;
  out.bytes().reserve(kHeaderBytes + stored.size());
  out.raw({reinterpret_cast<const std::uint8_t*>(kMagic), sizeof kMagic});
  out.u32(kFormatVersion);
  out.u32(0);  // flags
  out.u32(body.counts.tiles);
  out.u32(body.counts.contents);
  out.u32(body.counts.groups);
  out.u32(body.counts.bindings);
  out.u64(stored.size());
  out.u64(body.bytes.size());
  out.u64(file_checksum(out.bytes(), stored));
  out.raw(stored);
  return std::move(out.bytes());
}

Package decode_package(std::span<const std::uint8_t> file, const std::string& name) {
  PackageHeader header = decode_header(file, name);
  try {
    std::span<const std::uint8_t> stored = file.subspan(kHeaderBytes);
    if (stored.size() < header.stored_body_bytes)
      throw_bad_input("", "truncated body: {} of {} bytes", stored.size(),
                      header.stored_body_bytes);
    if (stored.size() > header.stored_body_bytes)
      throw_bad_input("", "{} bytes of trailing data after the body",
                      stored.size() - header.stored_body_bytes);
    if (file_checksum(file.first(kChecksumOffset), stored) != header.checksum)
      throw_bad_input("", "checksum mismatch: the file is corrupt");
    if (header.body_bytes > kMaxBodyBytes)
      throw_bad_input("", "body of {} bytes exceeds the limit of {}", header.body_bytes,
                      kMaxBodyBytes);
    std::vector<std::uint8_t> body = decompress(stored, header.body_bytes);
    Package package = detail::decode_body(
        body, BodyCounts{header.tiles, header.contents, header.groups, header.bindings});
    validate(package);
    return package;
  } catch (const Error& error) {
    throw error.within(name);
  }
}

std::size_t write_package(const Package& package, const std::string& path) {
  std::vector<std::uint8_t> bytes = encode_package(package);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (out) out.close();
  if (!out) throw_bad_input(path, "cannot write: {}", std::strerror(errno));
  return bytes.size();
}

Package read_package(const std::string& path) {
  std::error_code error;
  std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) throw_bad_input(path, "cannot open: {}", error.message());
  if (size > kHeaderBytes + kMaxBodyBytes)
    throw_bad_input(path, "file of {} bytes is larger than any package", size);
  std::ifstream in(path, std::ios::binary);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!in) throw_bad_input(path, "cannot read: {}", std::strerror(errno));
  return decode_package(bytes, path);
}

}  // namespace tilec::package
