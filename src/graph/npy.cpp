// The .npy format: the magic "\x93NUMPY", a major and minor version byte, the
// header length (2 bytes little-endian in 1.0, 4 bytes in 2.0), then an ASCII
// Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), }
// padded with spaces and a newline so the data starts at a multiple of 64
// bytes; then the elements, C order.
#include "graph/npy.h"

#include "numerics/fp16.h"
#include "support/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

namespace tilec::graph {

static_assert(std::endian::native == std::endian::little, "tensor bytes are stored little-endian");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
constexpr std::size_t kAlignment = 64;
constexpr int kMaxLiteralDepth = 4;

enum class NpyDtype { F32, F16, U8 };

std::size_t dtype_bytes(NpyDtype dtype) { return dtype == NpyDtype::F32 ? 4 : dtype == NpyDtype::F16 ? 2 : 1; }

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// The subset of Python literals .npy headers use.
struct Literal {
  enum Kind { String, Boolean, Integer, Tuple, List, Dict, Other } kind = Other;
  std::string text;
  bool flag = false;
  std::int64_t integer = 0;
  std::vector<Literal> items;                              // tuple, list
  std::vector<std::pair<std::string, Literal>> entries;   // dict with string keys
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  Literal parse_header() {
    Literal dict = parse_value(0);
    if (dict.kind != Literal::Dict) fail("the header is not a dict");
    skip_space();
    if (at_ != text_.size()) fail("unexpected text after the header dict");
    return dict;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    constexpr std::size_t kShown = 100;
    std::string_view shown = text_.substr(0, kShown);
    while (!shown.empty() && std::isspace(static_cast<unsigned char>(shown.back()))) shown.remove_suffix(1);
    throw_bad_input(path_, "malformed .npy header: {} (at byte {} of \"{}{}\")", what, at_, shown,
                    text_.size() > kShown ? "..." : "");
  }

  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }

  bool take(char expected) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == expected) return ++at_, true;
    return false;
  }

  Literal parse_value(int depth) {
    if (depth > kMaxLiteralDepth) fail("nested too deeply");
    skip_space();
    if (at_ == text_.size()) fail("unexpected end");
    const char c = text_[at_];
    if (c == '\'' || c == '"') return parse_string();
    if (c == '{') return parse_dict(depth);
    if (c == '(' || c == '[') return parse_sequence(depth);
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') return parse_integer();
    if (std::isalpha(static_cast<unsigned char>(c))) return parse_word();
    fail(fmt::format("unexpected character '{}'", c));
  }

  Literal parse_string() {
    const char quote = text_[at_++];
    const std::size_t end = text_.find(quote, at_);
    if (end == std::string_view::npos) fail("unterminated string");
    Literal literal;
    literal.kind = Literal::String;
    literal.text = std::string(text_.substr(at_, end - at_));
    at_ = end + 1;
    return literal;
  }

  Literal parse_integer() {
    Literal literal;
    literal.kind = Literal::Integer;
    const bool negative = text_[at_] == '-';
    if (negative) ++at_;
    if (at_ == text_.size() || !std::isdigit(static_cast<unsigned char>(text_[at_]))) fail("bad number");
    std::int64_t value = 0;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
      if (value > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("number too large");
      value = value * 10 + (text_[at_++] - '0');
    }
    if (at_ < text_.size() && text_[at_] == 'L') ++at_;  // Python 2 long suffix
    literal.integer = negative ? -value : value;
    return literal;
  }

  Literal parse_word() {
    const std::size_t start = at_;
    while (at_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[at_]))) ++at_;
    const std::string_view word = text_.substr(start, at_ - start);
    Literal literal;
    if (word == "True" || word == "False") {
      literal.kind = Literal::Boolean;
      literal.flag = word == "True";
    } else {
      literal.text = std::string(word);  // None and the like: Other
    }
    return literal;
  }

  // (a, b), (a,), (), [a, b]
  Literal parse_sequence(int depth) {
    Literal literal;
    literal.kind = text_[at_] == '(' ? Literal::Tuple : Literal::List;
    const char close = literal.kind == Literal::Tuple ? ')' : ']';
    ++at_;
    while (!take(close)) {
      literal.items.push_back(parse_value(depth + 1));
      if (!take(',')) {
        if (!take(close)) fail(fmt::format("expected ',' or '{}'", close));
        break;
      }
    }
    return literal;
  }

  Literal parse_dict(int depth) {
    Literal literal;
    literal.kind = Literal::Dict;
    ++at_;
    while (!take('}')) {
      skip_space();
      Literal key = parse_value(depth + 1);
      if (key.kind != Literal::String) fail("a dict key is not a string");
      if (!take(':')) fail("expected ':'");
      literal.entries.emplace_back(key.text, parse_value(depth + 1));
      if (!take(',')) {
        if (!take('}')) fail("expected ',' or '}'");
        break;
      }
    }
    return literal;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t at_ = 0;
};

NpyDtype parse_dtype(const Literal& descr, const std::string& path) {
  if (descr.kind == Literal::List) throw_bad_input(path, "structured arrays are not supported");
  if (descr.kind != Literal::String) throw_bad_input(path, "malformed .npy header: 'descr' is not a string");
  const std::string& d = descr.text;
  if (d == "<f4") return NpyDtype::F32;
  if (d == "<f2") return NpyDtype::F16;
  if (d == "|u1" || d == "<u1") return NpyDtype::U8;
  if (d.find('O') != std::string::npos) throw_bad_input(path, "object arrays ('{}') are not supported", d);
  if (!d.empty() && d[0] == '>') throw_bad_input(path, "big-endian data ('{}') is not supported", d);
  throw_bad_input(path, "unsupported dtype '{}' (tilec reads <f4, <f2 and |u1)", d);
}

struct NpyContents {
  NpyDtype dtype;
  Shape shape;
  std::string bytes;        // the whole file
  std::size_t data_offset;  // where the elements start
};

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_bad_input(path, "cannot open: {}", std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw_bad_input(path, "cannot read: {}", std::strerror(errno));
  return bytes;
}

std::uint32_t little_endian(const std::string& bytes, std::size_t at, std::size_t count) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < count; ++i)
    value |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return value;
}

NpyContents read_contents(const std::string& path) {
  NpyContents contents;
  contents.bytes = read_whole_file(path);
  const std::string& bytes = contents.bytes;
  if (bytes.size() < kMagicBytes + 2 || bytes.compare(0, kMagicBytes, kMagic) != 0)
    throw_bad_input(path, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2) || minor != 0)
    throw_bad_input(path, "unsupported .npy version {}.{} (tilec reads 1.0 and 2.0)", major, minor);
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t header_start = 8 + length_bytes;
  if (bytes.size() < header_start) throw_bad_input(path, "truncated .npy header");
  const std::size_t header_length = little_endian(bytes, 8, length_bytes);
  if (bytes.size() - header_start < header_length)
    throw_bad_input(path, "truncated .npy header: {} bytes announced, {} present", header_length,
                    bytes.size() - header_start);
  contents.data_offset = header_start + header_length;

  const std::string_view header(bytes.data() + header_start, header_length);
  const Literal dict = HeaderParser(header, path).parse_header();
  const Literal* descr = nullptr;
  const Literal* fortran_order = nullptr;
  const Literal* shape = nullptr;
  for (const auto& [key, value] : dict.entries) {
    const Literal** slot = key == "descr" ? &descr : key == "fortran_order" ? &fortran_order
                                                   : key == "shape"       ? &shape
                                                                          : nullptr;
    if (!slot) throw_bad_input(path, "malformed .npy header: unexpected key '{}'", key);
    if (*slot) throw_bad_input(path, "malformed .npy header: key '{}' given twice", key);
    *slot = &value;
  }
  if (!descr || !fortran_order || !shape)
    throw_bad_input(path, "malformed .npy header: it needs the keys 'descr', 'fortran_order' and 'shape'");
  contents.dtype = parse_dtype(*descr, path);
  if (fortran_order->kind != Literal::Boolean)
    throw_bad_input(path, "malformed .npy header: 'fortran_order' is not True or False");
  if (fortran_order->flag) throw_bad_input(path, "Fortran-order arrays are not supported");
  if (shape->kind != Literal::Tuple) throw_bad_input(path, "malformed .npy header: 'shape' is not a tuple");

  for (const Literal& extent : shape->items) {
    if (extent.kind != Literal::Integer || extent.integer < 0)
      throw_bad_input(path, "malformed .npy header: 'shape' holds something other than sizes");
    contents.shape.push_back(extent.integer);
  }
  // Sizes saturate rather than overflow on hostile shapes.
  const std::size_t available = bytes.size() - contents.data_offset;
  constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t needed = dtype_bytes(contents.dtype);
  for (std::int64_t extent : contents.shape) {
    const auto size = static_cast<std::uint64_t>(extent);
    needed = size != 0 && needed > kSaturated / size ? kSaturated : needed * size;
  }
  if (available < needed)
    throw_bad_input(path, "truncated data: {} bytes where shape {} needs {}", available,
                    shape_text(contents.shape), needed == kSaturated ? "more than 2^64" : std::to_string(needed));
  if (available > needed)
    throw_bad_input(path, "{} bytes of unexpected data after the {} that shape {} needs",
                    available - needed, needed, shape_text(contents.shape));
  return contents;
}

const char* dtype_descr(ElementType element) {
  switch (element) {
    case ElementType::F32: return "<f4";
    case ElementType::F16: return "<f2";
    default: return "|u1";
  }
}

std::string header_dict(const TensorType& type) {
  std::string shape = "(";
  for (std::size_t i = 0; i < type.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(type.shape[i]);
  if (type.shape.size() == 1) shape += ",";
  shape += ")";
  return fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", dtype_descr(type.storage.element),
                     shape);
}

// Float values of f32/f16 file data, for rounding to another storage type.
std::vector<float> file_floats(const NpyContents& contents, std::size_t count) {
  std::vector<float> values(count);
  const char* data = contents.bytes.data() + contents.data_offset;
  if (contents.dtype == NpyDtype::F32) {
    std::memcpy(values.data(), data, count * 4);
  } else {
    for (std::size_t i = 0; i < count; ++i) {
      std::uint16_t half;
      std::memcpy(&half, data + 2 * i, 2);
      values[i] = half_to_float(half);
    }
  }
  return values;
}

Tensor tensor_from_contents(const NpyContents& contents, const TensorType& type) {
  const std::size_t count = static_cast<std::size_t>(type.elements());
  const bool same_layout = (contents.dtype == NpyDtype::F32 && type.storage.element == ElementType::F32) ||
                           (contents.dtype == NpyDtype::F16 && type.storage.element == ElementType::F16) ||
                           contents.dtype == NpyDtype::U8;
  if (!same_layout) return Tensor::from_floats(type, file_floats(contents, count));
  Tensor tensor{type, {}};
  const auto* data = reinterpret_cast<const std::uint8_t*>(contents.bytes.data()) + contents.data_offset;
  tensor.bytes.assign(data, data + count * dtype_bytes(contents.dtype));
  return tensor;
}

}  // namespace

void write_npy(const std::string& path, const Tensor& tensor) {
  TILEC_CHECK(static_cast<std::int64_t>(tensor.bytes.size()) == tensor.type.bytes(),
              "tensor of {} bytes for a type of {}", tensor.bytes.size(), tensor.type.bytes());
  std::string dict = header_dict(tensor.type);
  // Version 1.0 unless the header outgrows its 2-byte length.
  const bool version2 = kMagicBytes + 2 + 2 + dict.size() + 1 > 0xffff;
  const std::size_t prefix = kMagicBytes + 2 + (version2 ? 4 : 2);
  const std::size_t padded = (prefix + dict.size() + 1 + kAlignment - 1) / kAlignment * kAlignment;
  dict.append(padded - prefix - dict.size() - 1, ' ');
  dict += '\n';

  std::string header(kMagic, kMagicBytes);
  header += static_cast<char>(version2 ? 2 : 1);
  header += '\0';
  for (std::size_t i = 0; i < (version2 ? 4u : 2u); ++i) header += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  header += dict;

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw_bad_input(path, "cannot write: {}", std::strerror(errno));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(tensor.bytes.data()), static_cast<std::streamsize>(tensor.bytes.size()));
  out.close();
  if (!out) throw_bad_input(path, "cannot write: {}", std::strerror(errno));
}

Tensor read_npy(const std::string& path, const TensorType& expected) {
  const NpyContents contents = read_contents(path);
  if (contents.shape != expected.shape)
    throw_bad_input(path, "shape {} where {} was expected", shape_text(contents.shape), shape_text(expected.shape));
  if (contents.dtype == NpyDtype::U8 && !is_fp8(expected.storage.element))
    throw_bad_input(path, "uint8 (FP8 code) data where {} was expected", element_type_name(expected.storage.element));
  return tensor_from_contents(contents, expected);
}

Tensor read_npy_as_stored(const std::string& path, StorageType fp8_type) {
  TILEC_CHECK(is_fp8(fp8_type.element), "read_npy_as_stored given {} for FP8 data",
              element_type_name(fp8_type.element));
  const NpyContents contents = read_contents(path);
  TensorType type{contents.shape, {ElementType::F32, 0}};
  if (contents.dtype == NpyDtype::F16) type.storage = {ElementType::F16, 0};
  if (contents.dtype == NpyDtype::U8) type.storage = fp8_type;
  return tensor_from_contents(contents, type);
}

// Tensor directories ---------------------------------------------------------

namespace {

constexpr const char* kManifestName = "manifest.json";

std::string_view role_name(TensorRole role) {
  switch (role) {
    case TensorRole::Input: return "input";
    case TensorRole::Parameter: return "parameter";
    case TensorRole::Output: return "output";
  }
  return "?";
}

std::string storage_text(StorageType storage) {
  if (!is_fp8(storage.element)) return std::string(element_type_name(storage.element));
  return fmt::format("{}(s={})", element_type_name(storage.element), storage.scale);
}

// A tensor's file must stay inside its directory.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find_first_of("/\\") == std::string::npos &&
         name.find('\0') == std::string::npos;
}

struct ManifestEntry {
  std::string name, file, role;
  StorageType storage;
  Shape shape;
};

// Reads manifest.json of a directory, if there is one.
std::vector<ManifestEntry> read_manifest(const std::filesystem::path& directory) {
  const std::filesystem::path path = directory / kManifestName;
  if (!std::filesystem::exists(path)) return {};
  const std::string where = path.string();
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(read_whole_file(where));
  } catch (const nlohmann::json::exception& error) {
    throw_bad_input(where, "not valid JSON: {}", error.what());
  }
  if (!manifest.is_object() || !manifest.contains("tensors") || !manifest["tensors"].is_array())
    throw_bad_input(where, "expected an object with a 'tensors' array");
  std::vector<ManifestEntry> entries;
  for (std::size_t i = 0; i < manifest["tensors"].size(); ++i) {
    const nlohmann::json& item = manifest["tensors"][i];
    const std::string at = fmt::format("{}: tensor {}", where, i);
    auto text = [&](const char* key) -> std::string {
      if (!item.is_object() || !item.contains(key) || !item[key].is_string())
        throw_bad_input(at, "'{}' is missing or not a string", key);
      return item[key].get<std::string>();
    };
    ManifestEntry entry{text("name"), text("file"), text("role"), {}, {}};
    if (entry.role != role_name(TensorRole::Input) && entry.role != role_name(TensorRole::Parameter) &&
        entry.role != role_name(TensorRole::Output))
      throw_bad_input(at, "unknown role '{}' (input, parameter or output)", entry.role);
    const std::string element = text("element");
    const auto type = parse_element_type(element);
    if (!type) throw_bad_input(at, "unknown element type '{}'", element);
    if (!item.contains("scale") || !item["scale"].is_number_integer())
      throw_bad_input(at, "'scale' is missing or not an integer");
    entry.storage = {*type, item["scale"].get<int>()};
    if (!item.contains("shape") || !item["shape"].is_array())
      throw_bad_input(at, "'shape' is missing or not an array");
    for (const nlohmann::json& extent : item["shape"]) {
      if (!extent.is_number_integer() || extent.get<std::int64_t>() < 0)
        throw_bad_input(at, "'shape' holds something other than sizes");
      entry.shape.push_back(extent.get<std::int64_t>());
    }
    if (!is_plain_file_name(entry.file)) throw_bad_input(at, "file '{}' is not a plain file name", entry.file);
    entries.push_back(std::move(entry));
  }
  return entries;
}

void write_manifest(const std::filesystem::path& directory, const std::vector<ManifestEntry>& entries) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const ManifestEntry& entry : entries)
    tensors.push_back({{"name", entry.name},
                       {"file", entry.file},
                       {"role", entry.role},
                       {"element", element_type_name(entry.storage.element)},
                       {"scale", entry.storage.scale},
                       {"shape", entry.shape}});
  const std::string path = (directory / kManifestName).string();
  std::ofstream out(path, std::ios::trunc);
  out << nlohmann::json{{"tensors", tensors}}.dump(2) << "\n";
  out.close();
  if (!out) throw_bad_input(path, "cannot write: {}", std::strerror(errno));
}

}  // namespace

void write_tensor_dir(const std::string& directory, const TensorMap& tensors, TensorRole role) {
  const std::filesystem::path root(directory);
  std::error_code error;
  std::filesystem::create_directories(root, error);
  if (error) throw_bad_input(directory, "cannot create the directory: {}", error.message());
  // Entries already listed for other tensors stay, so inputs and parameters
  // can be written into one directory by two calls.
  std::vector<ManifestEntry> entries;
  for (ManifestEntry& entry : read_manifest(root))
    if (!tensors.contains(entry.name)) entries.push_back(std::move(entry));
  for (const auto& [name, tensor] : tensors) {
    const std::string file = name + ".npy";
    if (!is_plain_file_name(file) || !is_plain_file_name(name))
      throw_bad_input(directory, "tensor name '{}' cannot be a file name", name);
    write_npy((root / file).string(), tensor);
    entries.push_back({name, file, std::string(role_name(role)), tensor.type.storage, tensor.type.shape});
  }
  std::sort(entries.begin(), entries.end(),
            [](const ManifestEntry& a, const ManifestEntry& b) { return a.name < b.name; });
  write_manifest(root, entries);
}

TensorMap read_tensor_dir(const std::string& directory, const std::map<std::string, TensorType>& types) {
  const std::filesystem::path root(directory);
  if (!std::filesystem::is_directory(root)) throw_bad_input(directory, "not a directory");
  const std::vector<ManifestEntry> manifest = read_manifest(root);
  const std::string manifest_path = (root / kManifestName).string();
  TensorMap tensors;
  for (const auto& [name, type] : types) {
    std::string file = name + ".npy";
    bool listed = false;
    for (const ManifestEntry& entry : manifest) {
      if (entry.name != name) continue;
      if (entry.storage != type.storage)
        throw_bad_input(manifest_path, "tensor '{}' is {} but {} is expected", name, storage_text(entry.storage),
                        storage_text(type.storage));
      if (entry.shape != type.shape)
        throw_bad_input(manifest_path, "tensor '{}' has shape {} but {} is expected", name, shape_text(entry.shape),
                        shape_text(type.shape));
      file = entry.file;
      listed = true;
    }
    const std::filesystem::path path = root / file;
    if (!is_plain_file_name(file) || !std::filesystem::exists(path))
      throw_bad_input(directory, "no file '{}' for tensor '{}'{}", file, name,
                      listed ? fmt::format(" (as {} says)", kManifestName) : "");
    tensors.emplace(name, read_npy(path.string(), type));
  }
  return tensors;
}

}  // namespace tilec::graph
