// Shared by the fuzz harnesses (tests/fuzz/fuzz_*.cpp): each defines
// LLVMFuzzerTestOneInput, linked either with libFuzzer (clang's
// -fsanitize=fuzzer: tests/fuzz/fuzz.sh) or with replay_main.cpp, which runs
// the committed corpus once (tests/run.sh, under ASan and UBSan).
//
// A harness fails (aborts, which both drivers report with the input) when a
// reader throws (main would print "internal error"), returns an error of
// the wrong kind, or returns an error with no message. Crashes, leaks and
// undefined behaviour are the sanitizers' to report.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "engine/base/status.hpp"

namespace dtrain::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz harness: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// A reader's error must be the user-facing kind it documents, with a message.
inline void expect_kind(const Error& e, ErrorKind want, const char* reader) {
  if (e.message.empty()) fail(std::string(reader) + " returned an error without a message");
  if (e.kind != want) fail(std::string(reader) + " returned an error of the wrong kind: " + e.message);
}

template <class R>
void expect_ok_or(const R& result, ErrorKind want, const char* reader) {
  if (!result.ok()) expect_kind(result.error(), want, reader);
}

// This process's scratch directory (removed at exit): readers that take a
// path get the input written there.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dtrain-fuzz-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) fail("cannot create a scratch directory");
    static std::string keep = tmpl;
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(keep, ec); });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

// Writes `bytes` to scratch_dir()/name and returns its path.
inline std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) fail("cannot write " + path.string());
  return path.string();
}

// Splits the input: the first byte selects a variant (returned), the rest is the data.
inline uint8_t take_selector(std::string_view& data) {
  if (data.empty()) return 0;
  const uint8_t s = static_cast<uint8_t>(data[0]);
  data.remove_prefix(1);
  return s;
}

}  // namespace dtrain::fuzz
