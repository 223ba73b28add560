// .npy files and tensor directories: round trips, every rejected input, and
// interchange with NumPy itself.
#include "graph/npy.h"

#include "numerics/fp16.h"
#include "numerics/fp8.h"
#include "support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

namespace tilec::graph {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    directory_ = fs::temp_directory_path() / fmt::format("tilec-npy-{}-{}", ::getpid(), info->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string path(const std::string& name) const { return (directory_ / name).string(); }

  fs::path directory_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A .npy file made by hand: `dict` is the header text before padding.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i) file += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return file + header + data;
}

std::string floats_bytes(std::initializer_list<float> values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), std::data(values), bytes.size());
  return bytes;
}

void expect_bad_input(const std::function<void()>& action, const std::string& where, const std::string& phrase) {
  try {
    action();
    ADD_FAILURE() << "no error; expected one about: " << phrase;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput) << error.what();
    EXPECT_THAT(error.what(), HasSubstr(where));
    EXPECT_THAT(error.what(), HasSubstr(phrase));
    EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos) << error.what();
  }
}

TensorType type_of(Shape shape, ElementType element, int scale = 0) { return {std::move(shape), {element, scale}}; }

TEST_F(NpyTest, RoundTripsEveryElementType) {
  const std::vector<float> values{0.0f, -0.0f, 1.5f, -2.25f, 0.1f, 300.0f, -1e-3f, 7.0f,
                                  std::numeric_limits<float>::infinity(), 1e-8f, 65504.0f, -0.75f};
  for (ElementType element : {ElementType::F32, ElementType::F16, ElementType::F143, ElementType::F152,
                              ElementType::E4M3, ElementType::E5M2}) {
    const int scale = is_fp8(element) ? -3 : 0;
    const Tensor tensor = Tensor::from_floats(type_of({3, 4}, element, scale), values);
    const std::string file = path(std::string(element_type_name(element)) + ".npy");
    write_npy(file, tensor);
    const Tensor back = read_npy(file, tensor.type);
    EXPECT_EQ(back.type, tensor.type);
    EXPECT_EQ(back.bytes, tensor.bytes) << element_type_name(element);
    const Tensor stored = read_npy_as_stored(file, {element == ElementType::F32 || element == ElementType::F16
                                                         ? ElementType::F143
                                                         : element,
                                                     scale});
    EXPECT_EQ(stored.type, tensor.type);
    EXPECT_EQ(stored.bytes, tensor.bytes);
    // The data starts on a 64-byte boundary after a version 1.0 header.
    const std::string bytes = read_bytes(file);
    EXPECT_EQ(bytes[6], 1);
    EXPECT_EQ((bytes.size() - tensor.bytes.size()) % 64, 0u);
  }
}

TEST_F(NpyTest, RoundTripsScalarsEmptyAndOneDimensionalShapes) {
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{0, 3}, Shape{2, 1, 3}}) {
    TensorType type = type_of(shape, ElementType::F32);
    std::vector<float> values(static_cast<std::size_t>(type.elements()));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) - 2.5f;
    const Tensor tensor = Tensor::from_floats(type, values);
    write_npy(path("t.npy"), tensor);
    EXPECT_EQ(read_npy(path("t.npy"), type).bytes, tensor.bytes);
  }
  write_npy(path("one.npy"), Tensor::zeros(type_of({5}, ElementType::F16)));
  EXPECT_THAT(read_bytes(path("one.npy")), HasSubstr("'shape': (5,)"));
  write_npy(path("scalar.npy"), Tensor::zeros(type_of({}, ElementType::F16)));
  EXPECT_THAT(read_bytes(path("scalar.npy")), HasSubstr("'shape': ()"));
}

TEST_F(NpyTest, WritesVersion2WhenTheHeaderOutgrowsVersion1) {
  const TensorType type = type_of(Shape(25000, 1), ElementType::F32);
  const Tensor tensor = Tensor::from_floats(type, std::vector<float>{42.0f});
  write_npy(path("wide.npy"), tensor);
  const std::string bytes = read_bytes(path("wide.npy"));
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ((bytes.size() - 4) % 64, 0u);
  EXPECT_EQ(read_npy(path("wide.npy"), type).at(0), 42.0f);
}

TEST_F(NpyTest, ReadsVersion2AndU1AndDoubleQuotes) {
  write_bytes(path("v2.npy"), npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                       floats_bytes({1.0f, -3.0f}), 2));
  EXPECT_EQ(read_npy(path("v2.npy"), type_of({2}, ElementType::F32)).to_floats(), (std::vector<float>{1, -3}));
  write_bytes(path("u1.npy"), npy_file("{\"descr\": \"<u1\", \"shape\": (2,), \"fortran_order\": False}",
                                       std::string("\x40\xc2", 2)));
  EXPECT_EQ(read_npy(path("u1.npy"), type_of({2}, ElementType::F143)).to_floats(),
            (std::vector<float>{1.0f, -1.25f}));
}

TEST_F(NpyTest, RoundsFloatDataToTheExpectedStorage) {
  const Tensor f32 = Tensor::from_floats(type_of({3}, ElementType::F32), std::vector<float>{0.1f, 1000.0f, -0.3f});
  write_npy(path("f32.npy"), f32);
  EXPECT_EQ(read_npy(path("f32.npy"), type_of({3}, ElementType::F16)).to_floats(),
            (std::vector<float>{round_to_half(0.1f), 1000.0f, round_to_half(-0.3f)}));
  const StorageType f143{ElementType::F143, 2};
  EXPECT_EQ(read_npy(path("f32.npy"), type_of({3}, ElementType::F143, 2)).to_floats(),
            (std::vector<float>{round_to_storage(0.1f, f143), 960.0f, round_to_storage(-0.3f, f143)}));
  const Tensor f16 = Tensor::from_floats(type_of({3}, ElementType::F16), std::vector<float>{0.1f, 1000.0f, -0.3f});
  write_npy(path("f16.npy"), f16);
  EXPECT_EQ(read_npy(path("f16.npy"), type_of({3}, ElementType::F32)).to_floats(), f16.to_floats());
}

TEST_F(NpyTest, RejectsBadFilesWithOneLineErrors) {
  const std::string good_data = floats_bytes({1, 2});
  const auto expect_file_error = [&](const std::string& name, const std::string& bytes, const std::string& phrase) {
    write_bytes(path(name), bytes);
    expect_bad_input([&] { read_npy(path(name), type_of({2}, ElementType::F32)); }, path(name), phrase);
  };
  const auto header = [](const std::string& descr, const std::string& fortran, const std::string& shape) {
    return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  };
  expect_file_error("magic.npy", "\x93NUMPZ\x01\x00" + std::string(100, ' '), "bad magic");
  expect_file_error("short.npy", "\x93NU", "bad magic");
  expect_file_error("version.npy", npy_file(header("'<f4'", "False", "(2,)"), good_data, 3), "version 3.0");
  expect_file_error("big.npy", npy_file(header("'>f4'", "False", "(2,)"), good_data), "big-endian");
  expect_file_error("fortran.npy", npy_file(header("'<f4'", "True", "(2,)"), good_data), "Fortran");
  expect_file_error("object.npy", npy_file(header("'|O'", "False", "(2,)"), good_data), "object arrays");
  expect_file_error("struct.npy", npy_file(header("[('a', '<f4')]", "False", "(2,)"), good_data), "structured");
  expect_file_error("f8.npy", npy_file(header("'<f8'", "False", "(2,)"), good_data), "unsupported dtype '<f8'");
  expect_file_error("truncated.npy", npy_file(header("'<f4'", "False", "(2,)"), good_data.substr(0, 7)),
                    "truncated data");
  expect_file_error("extra.npy", npy_file(header("'<f4'", "False", "(2,)"), good_data + "x"), "unexpected data");
  expect_file_error("huge.npy", npy_file(header("'<f4'", "False", "(4294967296, 4294967296, 16)"), good_data),
                    "truncated data");
  expect_file_error("shape.npy", npy_file(header("'<f4'", "False", "(1, 2)"), good_data),
                    "shape [1, 2] where [2] was expected");
  expect_file_error("u1.npy", npy_file(header("'|u1'", "False", "(2,)"), "ab"), "uint8 (FP8 code) data where f32");
  // Malformed headers.
  expect_file_error("headerlen.npy", std::string("\x93NUMPY\x01\x00\xff\x00{}", 12), "truncated .npy header");
  expect_file_error("notdict.npy", npy_file("['descr']", good_data), "not a dict");
  expect_file_error("missing.npy", npy_file("{'descr': '<f4', 'shape': (2,)}", good_data), "needs the keys");
  expect_file_error("extrakey.npy", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
                                             good_data),
                    "unexpected key 'x'");
  expect_file_error("twice.npy", npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False}", good_data),
                    "given twice");
  expect_file_error("unterminated.npy", npy_file("{'descr: '<f4'}", good_data), "malformed .npy header");
  expect_file_error("negative.npy", npy_file(header("'<f4'", "False", "(-2,)"), good_data), "other than sizes");
  expect_file_error("shapelist.npy", npy_file(header("'<f4'", "False", "[2]"), good_data), "'shape' is not a tuple");
  expect_file_error("fortranint.npy", npy_file(header("'<f4'", "0", "(2,)"), good_data), "not True or False");
  expect_file_error("trailing.npy", npy_file(header("'<f4'", "False", "(2,)") + " junk", good_data),
                    "after the header dict");
  expect_file_error("deep.npy", npy_file("{'descr': ((((((1,),),),),),)}", good_data), "nested too deeply");
  expect_file_error("garbage.npy", npy_file("{'descr': @}", good_data), "unexpected character '@'");
  expect_bad_input([&] { read_npy(path("absent.npy"), type_of({2}, ElementType::F32)); }, path("absent.npy"),
                   "cannot open");
  expect_bad_input([&] { write_npy(path("no/such/dir.npy"), Tensor::zeros(type_of({1}, ElementType::F32))); },
                   "dir.npy", "cannot write");
}

// Damaged files either read or raise a BadInput error: never a crash, a
// hang or another exception (run under ASan to check memory safety).
TEST_F(NpyTest, DamagedFilesNeverCrash) {
  write_npy(path("good.npy"), Tensor::from_floats(type_of({2, 3}, ElementType::F16),
                                                  std::vector<float>{1, 2, 3, 4, 5, 6}));
  const std::string good = read_bytes(path("good.npy"));
  std::uint64_t state = 99;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>(state >> 33);
  };
  constexpr std::string_view kHeaderCharacters = "(),:'\"0123456789 x\n\x93{}[]TF-";
  int read_cleanly = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::string damaged = good;
    if (trial % 3 == 0) {
      damaged.resize(next() % good.size());
    } else {
      for (std::size_t flips = 1 + next() % 3; flips > 0; --flips)
        damaged[next() % damaged.size()] = kHeaderCharacters[next() % kHeaderCharacters.size()];
    }
    // A new file each time: rewriting one file is far slower on some file systems.
    const std::string file = path(fmt::format("damaged{}.npy", trial));
    write_bytes(file, damaged);
    try {
      read_npy_as_stored(file);
      ++read_cleanly;
    } catch (const Error& error) {
      ASSERT_EQ(error.kind(), ErrorKind::BadInput) << error.what();
    }
  }
  EXPECT_GT(read_cleanly, 0);  // some damage falls in padding or data
}

TEST_F(NpyTest, TensorDirectoriesRoundTripWithAManifest) {
  TensorMap inputs, parameters;
  inputs.emplace("x", Tensor::from_floats(type_of({2, 2}, ElementType::F143, -2), std::vector<float>{1, 2, 3, 4}));
  parameters.emplace("w1", Tensor::from_floats(type_of({3}, ElementType::F16), std::vector<float>{0.5, 1, 2}));
  parameters.emplace("w2", Tensor::from_floats(type_of({1}, ElementType::F32), std::vector<float>{-1}));
  const std::string dir = path("tensors");
  write_tensor_dir(dir, inputs, TensorRole::Input);
  write_tensor_dir(dir, parameters, TensorRole::Parameter);  // adds to the manifest

  const auto manifest = nlohmann::json::parse(read_bytes(dir + "/manifest.json"));
  ASSERT_EQ(manifest["tensors"].size(), 3u);
  const auto& first = manifest["tensors"][0];
  EXPECT_EQ(first["name"], "w1");
  EXPECT_EQ(first["file"], "w1.npy");
  EXPECT_EQ(first["role"], "parameter");
  EXPECT_EQ(first["element"], "f16");
  EXPECT_EQ(first["scale"], 0);
  EXPECT_EQ(first["shape"], nlohmann::json::array({3}));
  EXPECT_EQ(manifest["tensors"][2]["name"], "x");
  EXPECT_EQ(manifest["tensors"][2]["role"], "input");
  EXPECT_EQ(manifest["tensors"][2]["element"], "f143");
  EXPECT_EQ(manifest["tensors"][2]["scale"], -2);

  std::map<std::string, TensorType> types{{"x", inputs.at("x").type}, {"w1", parameters.at("w1").type}};
  TensorMap back = read_tensor_dir(dir, types);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back.at("x").bytes, inputs.at("x").bytes);
  EXPECT_EQ(back.at("w1").bytes, parameters.at("w1").bytes);
  // Without the manifest the files alone are enough.
  fs::remove(dir + "/manifest.json");
  EXPECT_EQ(read_tensor_dir(dir, types).at("x").bytes, inputs.at("x").bytes);
}

TEST_F(NpyTest, TensorDirectoryErrors) {
  const std::string dir = path("tensors");
  TensorMap tensors;
  tensors.emplace("x", Tensor::from_floats(type_of({2}, ElementType::F143, 0), std::vector<float>{1, 2}));
  write_tensor_dir(dir, tensors, TensorRole::Input);
  expect_bad_input([&] { read_tensor_dir(dir, {{"y", type_of({2}, ElementType::F32)}}); }, dir,
                   "no file 'y.npy' for tensor 'y'");
  expect_bad_input([&] { read_tensor_dir(dir, {{"x", type_of({2}, ElementType::E4M3, 0)}}); }, "manifest.json",
                   "tensor 'x' is f143(s=0) but e4m3(s=0) is expected");
  expect_bad_input([&] { read_tensor_dir(dir, {{"x", type_of({2}, ElementType::F143, 3)}}); }, "manifest.json",
                   "but f143(s=3) is expected");
  expect_bad_input([&] { read_tensor_dir(dir, {{"x", type_of({1, 2}, ElementType::F143)}}); }, "manifest.json",
                   "has shape [2] but [1, 2] is expected");
  expect_bad_input([&] { read_tensor_dir(path("absent"), {}); }, "absent", "not a directory");
  TensorMap bad_name;
  bad_name.emplace("a/b", Tensor::zeros(type_of({1}, ElementType::F32)));
  expect_bad_input([&] { write_tensor_dir(dir, bad_name, TensorRole::Output); }, dir, "tensor name 'a/b'");

  const auto expect_manifest_error = [&](const std::string& text, const std::string& phrase) {
    write_bytes(dir + "/manifest.json", text);
    expect_bad_input([&] { read_tensor_dir(dir, {{"x", type_of({2}, ElementType::F143)}}); }, "manifest.json",
                     phrase);
  };
  expect_manifest_error("{\"tensors\": [", "not valid JSON");
  expect_manifest_error("[]", "'tensors' array");
  const std::string entry =
      R"({"name": "x", "file": "x.npy", "role": "input", "element": "f143", "scale": 0, "shape": [2]})";
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = entry;
    text.replace(text.find(from), from.size(), to);
    return "{\"tensors\": [" + text + "]}";
  };
  expect_manifest_error(with("\"name\": \"x\", ", ""), "tensor 0: 'name' is missing");
  expect_manifest_error(with("f143", "f8"), "unknown element type 'f8'");
  expect_manifest_error(with("\"scale\": 0", "\"scale\": 0.5"), "'scale' is missing or not an integer");
  expect_manifest_error(with("[2]", "[-2]"), "other than sizes");
  expect_manifest_error(with("\"input\"", "\"weights\""), "unknown role 'weights'");
  expect_manifest_error(with("x.npy", "../x.npy"), "not a plain file name");
  expect_manifest_error(with("x.npy", "gone.npy"), "no file 'gone.npy' for tensor 'x'");
}

std::string run_and_capture(const std::string& command, int& status) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    status = -1;
    return "popen failed";
  }
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  status = ::pclose(pipe);
  return output;
}

// NumPy must load what tilec writes and tilec what NumPy writes. NumPy comes
// with scripts/bootstrap; its absence is a failure, not a reason to skip.
TEST_F(NpyTest, InterchangesWithNumPy) {
  write_npy(path("ours_f32.npy"),
            Tensor::from_floats(type_of({2, 3}, ElementType::F32), std::vector<float>{-1, -0.5, 0, 0.5, 1, 1.5}));
  write_npy(path("ours_f16.npy"),
            Tensor::from_floats(type_of({3}, ElementType::F16), std::vector<float>{1.0f, -2.5f, 65504.0f}));
  Tensor codes = Tensor::zeros(type_of({2, 2}, ElementType::F143));
  codes.bytes = {0x00, 0x40, 0x7f, 0xc2};
  write_npy(path("ours_u8.npy"), codes);
  write_npy(path("ours_scalar.npy"), Tensor::from_floats(type_of({}, ElementType::F32), std::vector<float>{7}));

  const std::string script =
      "import sys, numpy as np\n"
      "d = sys.argv[1]\n"
      "a = np.load(d + \"/ours_f32.npy\")\n"
      "assert a.dtype == np.float32 and a.shape == (2, 3), a\n"
      "assert (a == np.arange(6, dtype=np.float32).reshape(2, 3) / 2 - 1).all(), a\n"
      "h = np.load(d + \"/ours_f16.npy\")\n"
      "assert h.dtype == np.float16 and h.tolist() == [1.0, -2.5, 65504.0], h\n"
      "u = np.load(d + \"/ours_u8.npy\")\n"
      "assert u.dtype == np.uint8 and u.tolist() == [[0, 64], [127, 194]], u\n"
      "s = np.load(d + \"/ours_scalar.npy\")\n"
      "assert s.shape == () and s == 7, s\n"
      "np.save(d + \"/numpy_f32.npy\", np.arange(12, dtype=np.float32).reshape(3, 4) / 8)\n"
      "np.save(d + \"/numpy_f16.npy\", np.array([0.1, 1000], dtype=np.float16))\n"
      "np.save(d + \"/numpy_u8.npy\", np.arange(256, dtype=np.uint8).reshape(16, 16))\n"
      "with open(d + \"/numpy_v2.npy\", \"wb\") as f:\n"
      "    np.lib.format.write_array(f, np.arange(5, dtype=np.float32), version=(2, 0))\n"
      "np.save(d + \"/numpy_fortran.npy\", np.asfortranarray(np.ones((2, 3), np.float32)))\n"
      "np.save(d + \"/numpy_big.npy\", np.ones(3, dtype=\">f4\"))\n"
      "np.save(d + \"/numpy_f64.npy\", np.ones(3))\n"
      "np.save(d + \"/numpy_object.npy\", np.array([1, \"a\"], dtype=object), allow_pickle=True)\n"
      "print(\"numpy ok\")\n";
  write_bytes(path("interchange.py"), script);
  int status = 0;
  const std::string output =
      run_and_capture("/usr/bin/python3 -c \"$(cat '" + path("interchange.py") + "')\" '" + directory_.string() + "'",
                      status);
  ASSERT_EQ(status, 0) << "python3 with numpy failed (run scripts/bootstrap): " << output;
  EXPECT_THAT(output, HasSubstr("numpy ok"));

  std::vector<float> expected(12);
  for (int i = 0; i < 12; ++i) expected[static_cast<std::size_t>(i)] = static_cast<float>(i) / 8;
  EXPECT_EQ(read_npy(path("numpy_f32.npy"), type_of({3, 4}, ElementType::F32)).to_floats(), expected);
  const Tensor f16 = read_npy_as_stored(path("numpy_f16.npy"));
  EXPECT_EQ(f16.type, type_of({2}, ElementType::F16));
  EXPECT_EQ(f16.to_floats(), (std::vector<float>{round_to_half(0.1f), 1000.0f}));
  const Tensor u8 = read_npy(path("numpy_u8.npy"), type_of({16, 16}, ElementType::E5M2, 1));
  for (int code = 0; code < 256; ++code) EXPECT_EQ(u8.bytes[static_cast<std::size_t>(code)], code);
  EXPECT_EQ(read_npy(path("numpy_v2.npy"), type_of({5}, ElementType::F32)).to_floats(),
            (std::vector<float>{0, 1, 2, 3, 4}));
  expect_bad_input([&] { read_npy_as_stored(path("numpy_fortran.npy")); }, "numpy_fortran.npy", "Fortran");
  expect_bad_input([&] { read_npy_as_stored(path("numpy_big.npy")); }, "numpy_big.npy", "big-endian");
  expect_bad_input([&] { read_npy_as_stored(path("numpy_f64.npy")); }, "numpy_f64.npy", "unsupported dtype '<f8'");
  expect_bad_input([&] { read_npy_as_stored(path("numpy_object.npy")); }, "numpy_object.npy", "object arrays");
}

}  // namespace
}  // namespace tilec::graph
