// Where the tests find ../shared (the datasets CI has beside the clone and a
// user's clone lacks): DTRAIN_SHARED_DIR when set, else <source root>/../shared.
// A test that needs a file there and does not find it says so and returns.
#pragma once

#include <doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace dtrain::testing {

inline std::filesystem::path shared_dir() {
  const char* env = std::getenv("DTRAIN_SHARED_DIR");
  if (env != nullptr && *env != '\0') return env;
  return std::filesystem::path(DTRAIN_SOURCE_ROOT) / ".." / "shared";
}

inline std::filesystem::path shared_mnist_dir() { return shared_dir() / "data" / "mnist"; }

// True when the official MNIST files are there (says nothing either way).
inline bool shared_mnist_present() { return std::filesystem::exists(shared_mnist_dir() / "t10k-labels-idx1-ubyte.gz"); }

// True when the official MNIST files are there; else MESSAGEs why the test does nothing.
inline bool have_shared_mnist() {
  if (shared_mnist_present()) return true;
  MESSAGE("skipped: " << shared_mnist_dir().string() << " is absent (a user's clone); CI has it");
  return false;
}

}  // namespace dtrain::testing
