// The driver of every fuzz target: the target's seeds (and a corpus
// folder's inputs), then inputs made from them by stacked random mutations
// (bit flips, byte changes, insertions and deletions, copies, splices of
// two inputs, dictionary words), from a fixed seed, for a number of seconds
// or inputs.
//
// When tilec is built with -fsanitize-coverage=trace-pc (the `fuzz`
// preset), every basic block calls __sanitizer_cov_trace_pc below, which
// counts edges as AFL does; an input that reaches an edge (or an edge's
// hit-count bucket) no earlier input reached joins the pool that mutations
// start from, and the corpus folder. Without it the search is blind.
//
//   graph_reader_fuzz [--seconds S] [--inputs N] [--seed N] [--corpus DIR] [--crash FILE] [FILE...]
//
// FILEs are run once each first (a crash to replay). The input running when
// the process dies is written to --crash FILE (default crash-input.bin).
#include "fuzz_target.h"

#include "support/parallel.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

extern "C" void __sanitizer_cov_trace_pc();
// Defined by the sanitizers' runtime only: ASan ends the process itself
// (no signal) when it finds an error, so the crash input is saved from here.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

using tilec::fuzz::Input;

constexpr std::size_t kLargestInput = 1 << 20;
constexpr std::size_t kLargestPool = 20'000;

// Edge counts of the input being run, and the hit-count buckets any input
// has reached so far.
constexpr std::size_t kEdgeCells = 1 << 16;
std::uint8_t g_edges[kEdgeCells];
std::uint8_t g_seen[kEdgeCells];
thread_local std::uintptr_t g_previous_block = 0;
bool g_edges_touched = false;  // g_edges holds counts to look at and clear


// The input being run, for the signal handler.
const Input* g_current = nullptr;
std::string g_crash_path = "crash-input.bin";

void save_current_input() {
  if (!g_current) return;
  const int file = ::open(g_crash_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (file < 0) return;
  std::size_t written = 0;
  while (written < g_current->size()) {
    const ssize_t n = ::write(file, g_current->data() + written, g_current->size() - written);
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  ::close(file);
}

extern "C" void on_fatal_signal(int signal) {
  save_current_input();
  const char message[] = "fuzz: the target crashed; its input is in the crash file\n";
  (void)::write(STDERR_FILENO, message, sizeof message - 1);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void on_sanitizer_death() {
  save_current_input();
  const char message[] = "fuzz: a sanitizer stopped the target; its input is in the crash file\n";
  (void)::write(STDERR_FILENO, message, sizeof message - 1);
}

// AFL's buckets: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128 and more.
std::uint8_t bucket(std::uint8_t count) {
  return count == 0 ? 0 : count < 4 ? static_cast<std::uint8_t>(1u << (count - 1)) : count < 8 ? 8 : count < 16 ? 16
       : count < 32 ? 32 : count < 128 ? 64 : 128;
}

// True when the last run reached an edge bucket no earlier run had.
bool reached_new_edges() {
  bool added = false;
  if (!g_edges_touched) return false;
  for (std::size_t i = 0; i < kEdgeCells; ++i) {
    if (g_edges[i] == 0) continue;
    const std::uint8_t bits = bucket(g_edges[i]);
    if ((g_seen[i] & bits) != bits) {
      g_seen[i] |= bits;
      added = true;
    }
  }
  return added;
}

std::size_t edges_seen() {
  std::size_t count = 0;
  for (std::uint8_t cell : g_seen) count += cell != 0;
  return count;
}

// Runs the target on `input`; true when it reached new edges.
bool run_one(const Input& input) {
  if (g_edges_touched) std::memset(g_edges, 0, sizeof g_edges);
  g_edges_touched = false;
  g_previous_block = 0;
  g_current = &input;
  try {
    LLVMFuzzerTestOneInput(input.data(), input.size());
  } catch (const std::exception& error) {
    save_current_input();
    std::fprintf(stderr, "fuzz: the target threw %s; its input is in %s\n", error.what(), g_crash_path.c_str());
    std::exit(1);
  }
  g_current = nullptr;
  return reached_new_edges();
}

class Mutator {
 public:
  Mutator(std::uint64_t seed, std::vector<Input> pool, std::vector<std::string> dictionary)
      : random_(seed), pool_(std::move(pool)), dictionary_(std::move(dictionary)) {}

  // An input worth mutating further (it reached new edges).
  void keep(Input input) {
    if (pool_.size() < kLargestPool) pool_.push_back(std::move(input));
    else pool_[below(pool_.size())] = std::move(input);
  }
  std::size_t pool_size() const { return pool_.size(); }

  Input next() {
    Input input = pool_[below(pool_.size())];
    const std::size_t mutations = 1 + below(8);
    for (std::size_t i = 0; i < mutations; ++i) mutate(input);
    if (input.size() > kLargestInput) input.resize(kLargestInput);
    return input;
  }

 private:
  // Uniform enough below `n` (n > 0), and the same on every standard library.
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(random_() % n); }

  void mutate(Input& input) {
    static const std::uint8_t kInteresting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '0', '9', '-', '"', '[', ']', '{', '}'};
    switch (below(input.empty() ? 2 : 9)) {
      case 0: {  // insert a dictionary word, or a random byte
        const std::size_t at = below(input.size() + 1);
        if (!dictionary_.empty() && below(2) == 0) {
          const std::string& word = dictionary_[below(dictionary_.size())];
          input.insert(input.begin() + static_cast<std::ptrdiff_t>(at), word.begin(), word.end());
        } else {
          input.insert(input.begin() + static_cast<std::ptrdiff_t>(at), static_cast<std::uint8_t>(random_()));
        }
        break;
      }
      case 1: {  // splice: a piece of another input
        const Input& other = pool_[below(pool_.size())];
        if (other.empty()) break;
        const std::size_t from = below(other.size()), length = 1 + below(std::min<std::size_t>(other.size() - from, 256));
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(below(input.size() + 1)),
                     other.begin() + static_cast<std::ptrdiff_t>(from),
                     other.begin() + static_cast<std::ptrdiff_t>(from + length));
        break;
      }
      case 2: input[below(input.size())] ^= static_cast<std::uint8_t>(1u << below(8)); break;
      case 3: input[below(input.size())] = static_cast<std::uint8_t>(random_()); break;
      case 4: input[below(input.size())] = kInteresting[below(sizeof kInteresting)]; break;
      case 5: {  // delete a range
        const std::size_t at = below(input.size()), length = 1 + below(std::min<std::size_t>(input.size() - at, 64));
        input.erase(input.begin() + static_cast<std::ptrdiff_t>(at),
                    input.begin() + static_cast<std::ptrdiff_t>(at + length));
        break;
      }
      case 6: {  // duplicate a range in place
        const std::size_t at = below(input.size()), length = 1 + below(std::min<std::size_t>(input.size() - at, 64));
        const Input piece(input.begin() + static_cast<std::ptrdiff_t>(at),
                          input.begin() + static_cast<std::ptrdiff_t>(at + length));
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(at), piece.begin(), piece.end());
        break;
      }
      case 7: {  // a 32-bit word set to an edge value (counts, sizes, addresses)
        if (input.size() < 4) break;
        static const std::uint32_t kWords[] = {0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0x10000, 0x4c000, 0xe8000};
        const std::uint32_t word = kWords[below(std::size(kWords))];
        std::memcpy(input.data() + below(input.size() - 3), &word, 4);
        break;
      }
      default: {  // a decimal digit run made larger or smaller
        const std::size_t at = below(input.size());
        if (input[at] >= '0' && input[at] <= '9') input[at] = static_cast<std::uint8_t>('0' + below(10));
        else input.insert(input.begin() + static_cast<std::ptrdiff_t>(at), '9');
        break;
      }
    }
  }

  std::mt19937_64 random_;
  std::vector<Input> pool_;
  std::vector<std::string> dictionary_;
};

Input file_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "fuzz: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return Input(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// A corpus file's name: its bytes' FNV-1a hash, so that equal inputs share one.
std::string input_name(const Input& input) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::uint8_t byte : input) hash = (hash ^ byte) * 0x100000001b3ull;
  char name[32];
  std::snprintf(name, sizeof name, "input-%016llx", static_cast<unsigned long long>(hash));
  return name;
}

void save_to_corpus(const std::string& corpus, const Input& input) {
  if (corpus.empty()) return;
  std::ofstream file(std::filesystem::path(corpus) / input_name(input), std::ios::binary);
  file.write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.size()));
}

}  // namespace

// Called at every basic block of code built with -fsanitize-coverage=trace-pc.
// Blocks are named by their offset from this function (the same in every
// run, whatever the address randomisation); an edge is a pair of
// consecutive blocks.
extern "C" void __sanitizer_cov_trace_pc() {
  const auto here = reinterpret_cast<std::uintptr_t>(__builtin_return_address(0)) -
                    reinterpret_cast<std::uintptr_t>(&__sanitizer_cov_trace_pc);
  const std::uintptr_t block = (here * 0x9e3779b97f4a7c15ull) >> 48;
  std::uint8_t& cell = g_edges[(block ^ g_previous_block) & (kEdgeCells - 1)];
  if (cell != 255) ++cell;
  g_previous_block = block >> 1;
  g_edges_touched = true;
}

int main(int argc, char** argv) {
  double seconds = 3;
  std::uint64_t most_inputs = UINT64_MAX, seed = 1;
  std::vector<std::string> files;
  std::string corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    const bool has_value = i + 1 < argc;
    if (argument == "--seconds" && has_value) seconds = std::atof(argv[++i]);
    else if (argument == "--inputs" && has_value) most_inputs = std::strtoull(argv[++i], nullptr, 10);
    else if (argument == "--seed" && has_value) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (argument == "--crash" && has_value) g_crash_path = argv[++i];
    else if (argument == "--corpus" && has_value) corpus = argv[++i];
    else if (!argument.empty() && argument[0] != '-') files.push_back(argument);
    else {
      std::fprintf(stderr, "usage: %s [--seconds S] [--inputs N] [--seed N] [--corpus DIR] [--crash FILE] [FILE...]\n",
                   argv[0]);
      return 2;
    }
  }
  for (int signal : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(signal, on_fatal_signal);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
  tilec::set_thread_count(1);  // one thread: the same edges for the same input

  for (const std::string& file : files) run_one(file_bytes(file));
  std::vector<Input> pool = tilec::fuzz::seeds();
  const std::size_t seeds = pool.size();
  if (!corpus.empty()) {
    std::filesystem::create_directories(corpus);
    std::vector<std::filesystem::path> names;
    for (const auto& entry : std::filesystem::directory_iterator(corpus)) names.push_back(entry.path());
    std::sort(names.begin(), names.end());  // the same order every time
    for (const auto& name : names) pool.push_back(file_bytes(name.string()));
  }
  for (const Input& input : pool) run_one(input);

  Mutator mutator(seed, std::move(pool), tilec::fuzz::dictionary());
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t inputs = 0, kept = 0;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (inputs < most_inputs && elapsed() < seconds) {
    Input input = mutator.next();
    ++inputs;
    if (!run_one(input)) continue;
    ++kept;
    save_to_corpus(corpus, input);
    mutator.keep(std::move(input));
  }
  std::printf("fuzz: %llu mutated inputs in %.1f s (seed %llu), %zu seeds, %llu inputs reached new edges "
              "(%zu edges seen), pool %zu: no crash\n",
              static_cast<unsigned long long>(inputs), elapsed(), static_cast<unsigned long long>(seed), seeds,
              static_cast<unsigned long long>(kept), edges_seen(), mutator.pool_size());
  return 0;
}
