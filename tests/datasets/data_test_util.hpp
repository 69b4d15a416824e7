// Helpers for the datasets tests: a scratch directory, file writing, paths of
// the real MNIST files, and draining an Input.
#pragma once

#include <doctest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "tests/shared_data.hpp"

namespace dtrain::data_testing {

// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("dtrain-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string dir() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The official MNIST test set, read in place from the shared data folder.
inline std::string t10k_file(const std::string& kind) {
  return (testing::shared_mnist_dir() / ("t10k-" + kind)).string();
}

// The 10,000-digit sample shipped in sample_configs/data/ (byte-identical to
// ../shared/data/mnist/train-*, which is used if the repo copy is missing).
inline std::string sample_file(const std::string& kind) {
  const std::string repo = std::string(DTRAIN_SOURCE_ROOT "/sample_configs/data/mnist-sample-train-") + kind;
  if (std::filesystem::exists(repo)) return repo;
  return (testing::shared_mnist_dir() / ("train-" + kind)).string();
}

// Real gzip-compressed MNIST IDX files, for tests of the reader itself, where
// any such pair serves: the official t10k set where ../shared has it, else
// (saying so) the in-repo 10,000-digit sample.
struct MnistFiles {
  std::string images;
  std::string labels;
};
inline MnistFiles t10k_or_sample() {
  if (testing::shared_mnist_present()) return {t10k_file("images-idx3-ubyte.gz"), t10k_file("labels-idx1-ubyte.gz")};
  MESSAGE("using the in-repo sample: " << testing::shared_mnist_dir().string()
                                       << " is absent (a user's clone); CI has it");
  return {sample_file("images-idx3-ubyte.gz"), sample_file("labels-idx1-ubyte.gz")};
}

// Every batch's ids, until the end or `max_batches`; fails the test on an error.
inline std::vector<std::vector<int64_t>> drain_ids(Input& input, int64_t max_batches = int64_t{1} << 40) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; i < max_batches; ++i) {
    auto b = input.next();
    REQUIRE_MESSAGE(b.ok(), b.error().message);
    if (!b->has_value()) break;
    out.push_back((*b)->ids);
  }
  return out;
}

}  // namespace dtrain::data_testing
