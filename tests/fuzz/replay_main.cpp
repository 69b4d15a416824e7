// The driver for CI: runs a harness's LLVMFuzzerTestOneInput once on each
// file named (or each file in each directory named), in name order, and
// prints how many it ran. A failing input aborts (the harness's message or
// the sanitizer's report), and a SIGABRT handler names the input. As under
// libFuzzer (tests/fuzz/fuzz.sh), an input may not take more than 2560 MB: a
// single allocation beyond it is ASan's error, a peak RSS beyond it ours.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// ASan's defaults for these executables (ASAN_OPTIONS adds to them).
extern "C" const char* __asan_default_options() { return "max_allocation_size_mb=2560:allocator_may_return_null=0"; }

namespace {

constexpr long kRssLimitMb = 2560;

std::string g_current;  // the input running now; set before, never resized during a run

extern "C" void name_the_input(int sig) {
  constexpr char kWhile[] = "\nreplay: the input that failed: ";
  (void)!write(2, kWhile, sizeof kWhile - 1);
  (void)!write(2, g_current.data(), g_current.size());
  (void)!write(2, "\n", 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg = argv[i];
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else if (std::filesystem::is_regular_file(arg)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "no inputs\n");
    return 2;
  }
  g_current.reserve(4096);
  signal(SIGABRT, name_the_input);
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    g_current.assign(path.string(), 0, std::min<size_t>(path.string().size(), 4095));
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    if (usage.ru_maxrss / 1024 > kRssLimitMb) {
      std::fprintf(stderr, "replay: peak RSS %ld MB is over %ld MB\n", usage.ru_maxrss / 1024, kRssLimitMb);
      name_the_input(SIGABRT);
    }
  }
  std::fprintf(stdout, "%s: %zu inputs ran\n", argv[0], files.size());
  return 0;
}
