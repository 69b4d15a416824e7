// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
// A draw is a pure function of (key, counter), so results do not depend on
// which thread or replica computes them: dropout keys on (seed, step) and
// counts by (example index, element), initializers key on (seed, variable).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "engine/cuda/philox.hpp"  // the rounds, shared with the GPU kernels

namespace dtrain {

inline std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  const cuda::Philox4 r = cuda::philox4x32_10(ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1]);
  return {r.v[0], r.v[1], r.v[2], r.v[3]};
}

// 64-bit FNV-1a, for turning names into keys.
inline uint64_t hash64(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// A stream of uniform floats for one (key, stream) pair; element i of the
// stream is independent of how the stream is partitioned among threads.
class CounterRng {
 public:
  CounterRng(uint64_t key, uint64_t stream) : key_{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)}, stream_(stream) {}

  // Uniform in [0, 1) for element `i` of this stream.
  float uniform(uint64_t i) const {
    const uint64_t block = i / 4;
    const auto r = philox4x32({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                               static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
                              key_);
    return static_cast<float>(r[i % 4] >> 8) * (1.0f / 16777216.0f);
  }
  // Standard normal for element `i` (Box-Muller over elements 2i and 2i+1).
  float normal(uint64_t i) const {
    float u1 = uniform(2 * i);
    const float u2 = uniform(2 * i + 1);
    if (u1 < 1e-7f) u1 = 1e-7f;
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
  }

 private:
  std::array<uint32_t, 2> key_;
  uint64_t stream_;
};

}  // namespace dtrain
