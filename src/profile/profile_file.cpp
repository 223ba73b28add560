#include "profile/profile_file.h"

#include "profile/profile_codec.h"
#include "support/error.h"

#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>

namespace tilec::profile {

namespace {

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}
void put_u64(std::vector<std::uint8_t>& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}
std::uint64_t get_le(std::span<const std::uint8_t> bytes, std::size_t offset, int width) {
  std::uint64_t value = 0;
  for (int i = 0; i < width; ++i) value |= std::uint64_t{bytes[offset + i]} << (8 * i);
  return value;
}

std::uint64_t checksum(std::span<const std::uint8_t> header, std::span<const std::uint8_t> stored) {
  std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> state(XXH64_createState(), &XXH64_freeState);
  TILEC_CHECK(state != nullptr, "cannot allocate a checksum state");
  XXH64_reset(state.get(), 0);
  XXH64_update(state.get(), header.data(), header.size());
  XXH64_update(state.get(), stored.data(), stored.size());
  return XXH64_digest(state.get());
}

// One zstd frame that must give exactly `expected` bytes. The output grows
// only as data arrives, so a header claiming a huge body costs nothing
// unless the frame really holds it.
std::string decompress(std::span<const std::uint8_t> stored, std::uint64_t expected) {
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> context(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  TILEC_CHECK(context != nullptr, "cannot allocate a zstd context");
  std::string body;
  ZSTD_inBuffer input{stored.data(), stored.size(), 0};
  std::size_t produced = 0;
  while (true) {
    // One byte beyond `expected` of room shows a frame that holds too much.
    const std::uint64_t room = std::min<std::uint64_t>(expected + 1, std::max<std::size_t>(1 << 20, 2 * body.size()));
    body.resize(static_cast<std::size_t>(room));
    ZSTD_outBuffer output{body.data(), body.size(), produced};
    const std::size_t consumed = input.pos;
    const std::size_t status = ZSTD_decompressStream(context.get(), &output, &input);
    if (ZSTD_isError(status)) throw_bad_input("", "body does not decompress: {}", ZSTD_getErrorName(status));
    const bool progressed = output.pos != produced || input.pos != consumed;
    produced = output.pos;
    if (produced > expected)
      throw_bad_input("", "body decompresses to more than the {} bytes the header says", expected);
    if (status == 0) break;  // the frame ended
    if (!progressed) throw_bad_input("", "the body's compressed frame is incomplete");
  }
  if (produced != expected)
    throw_bad_input("", "body decompresses to {} bytes but the header says {}", produced, expected);
  if (input.pos != input.size)
    throw_bad_input("", "{} bytes of trailing data after the compressed body", input.size - input.pos);
  body.resize(produced);
  return body;
}

}  // namespace

std::vector<std::uint8_t> encode_profile_file(const ProfileData& profile) {
  validate_profile(profile);
  // The body is compressed as it is written: only the compressed bytes are
  // ever held whole.
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> context(ZSTD_createCCtx(), &ZSTD_freeCCtx);
  TILEC_CHECK(context != nullptr, "cannot allocate a zstd context");
  const std::size_t level = ZSTD_CCtx_setParameter(context.get(), ZSTD_c_compressionLevel, kCompressionLevel);
  TILEC_CHECK(!ZSTD_isError(level), "zstd compression level: {}", ZSTD_getErrorName(level));
  std::vector<std::uint8_t> stored;
  std::uint64_t body_bytes = 0;
  auto compress = [&](std::string_view text, ZSTD_EndDirective mode) {
    ZSTD_inBuffer input{text.data(), text.size(), 0};
    while (true) {
      const std::size_t produced = stored.size();
      stored.resize(produced + ZSTD_CStreamOutSize());
      ZSTD_outBuffer output{stored.data(), stored.size(), produced};
      const std::size_t remaining = ZSTD_compressStream2(context.get(), &output, &input, mode);
      TILEC_CHECK(!ZSTD_isError(remaining), "zstd compression failed: {}", ZSTD_getErrorName(remaining));
      stored.resize(output.pos);
      const bool done = mode == ZSTD_e_end ? remaining == 0 : input.pos == input.size;
      if (done) break;
    }
  };
  write_profile_json(profile, [&](std::string_view text) {
    body_bytes += text.size();
    TILEC_CHECK(body_bytes <= kMaxBodyBytes, "profile body of more than {} bytes exceeds the format's {}",
                body_bytes, kMaxBodyBytes);
    compress(text, ZSTD_e_continue);
  });
  compress({}, ZSTD_e_end);

  std::vector<std::uint8_t> file(std::begin(kMagic), std::end(kMagic));
  file.reserve(kHeaderBytes + stored.size());
  put_u32(file, kFormatVersion);
  put_u32(file, 0);  // flags
  put_u64(file, stored.size());
  put_u64(file, body_bytes);
  put_u64(file, checksum(file, stored));
  file.insert(file.end(), stored.begin(), stored.end());
  return file;
}

ProfileData decode_profile_file(std::span<const std::uint8_t> file, const std::string& name) {
  try {
    if (file.size() < kHeaderBytes)
      throw_bad_input("", "truncated header: {} of {} bytes", file.size(), kHeaderBytes);
    if (!std::equal(std::begin(kMagic), std::end(kMagic), file.begin()))
      throw_bad_input("", "not a tilec profile (bad magic)");
    const auto version = static_cast<std::uint32_t>(get_le(file, 8, 4));
    if (version != kFormatVersion)
      throw_bad_input("", "profile format version {} is not supported (this tilec reads version {})", version,
                      kFormatVersion);
    const auto flags = static_cast<std::uint32_t>(get_le(file, 12, 4));
    if (flags != 0) throw_bad_input("", "unknown header flags {:#x}", flags);
    const std::uint64_t stored_bytes = get_le(file, 16, 8);
    const std::uint64_t body_bytes = get_le(file, 24, 8);
    const std::uint64_t expected_checksum = get_le(file, 32, 8);
    std::span<const std::uint8_t> stored = file.subspan(kHeaderBytes);
    if (stored.size() < stored_bytes) throw_bad_input("", "truncated body: {} of {} bytes", stored.size(), stored_bytes);
    if (stored.size() > stored_bytes)
      throw_bad_input("", "{} bytes of trailing data after the body", stored.size() - stored_bytes);
    if (checksum(file.first(kChecksumOffset), stored) != expected_checksum)
      throw_bad_input("", "checksum mismatch: the file is corrupt");
    if (body_bytes > kMaxBodyBytes)
      throw_bad_input("", "body of {} bytes exceeds the limit of {}", body_bytes, kMaxBodyBytes);
    return decode_profile_text(decompress(stored, body_bytes));
  } catch (const Error& error) {
    throw error.within(name);
  }
}

void write_profile(const std::string& path, const ProfileData& profile) {
  const std::vector<std::uint8_t> bytes = encode_profile_file(profile);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (out) out.close();
  if (!out) throw_failure(path, "cannot write: {}", std::strerror(errno));
}

ProfileData read_profile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw_bad_input(path, "cannot read: is a directory");
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) throw_bad_input(path, "cannot open: {}", error.message());
  if (size > kHeaderBytes + kMaxBodyBytes) throw_bad_input(path, "file of {} bytes is larger than any profile", size);
  std::ifstream in(path, std::ios::binary);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!in) throw_bad_input(path, "cannot read: {}", std::strerror(errno));
  return decode_profile_file(bytes, path);
}

}  // namespace tilec::profile
