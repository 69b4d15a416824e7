// Philox4x32-10 exactly as engine/rng.hpp computes it, for host and device:
// the dropout kernel draws its masks with these functions, and a host test
// compares them with rng.hpp's philox4x32 and CounterRng bit for bit.
#pragma once

#include <cstdint>

#include "engine/cuda/host_device.hpp"

namespace dtrain::cuda {

struct Philox4 {
  uint32_t v[4];
};

// rng.hpp's philox4x32({c0, c1, c2, c3}, {k0, k1}).
DTRAIN_HOST_DEVICE inline Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                                uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

// The four draws of block `block` of CounterRng(key, stream): elements
// 4*block .. 4*block+3 of that stream.
DTRAIN_HOST_DEVICE inline Philox4 counter_block(uint64_t key, uint64_t stream, uint64_t block) {
  return philox4x32_10(static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                       static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32),
                       static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}

// CounterRng's uniform float in [0, 1) from one 32-bit draw (exact: 24 bits
// times 2^-24).
DTRAIN_HOST_DEVICE inline float philox_uniform(uint32_t draw) {
  return static_cast<float>(draw >> 8) * (1.0f / 16777216.0f);
}

}  // namespace dtrain::cuda
