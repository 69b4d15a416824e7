// The host-compilable halves of the CUDA kernels, checked on any machine:
// the Philox rounds (shared by engine/rng.hpp and the kernels) against
// Random123's known answers, the dropout kernel's mapping against the CPU
// layer's masks, the multi-tensor launch plan and its block lookup, and the
// text of GPU error messages. (The per-element optimizer updates are shared
// with engine/optim, whose tests check them against reference values.)
#include <doctest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/gpu_error.hpp"
#include "engine/cuda/multi_tensor.hpp"
#include "engine/cuda/philox.hpp"
#include "engine/cuda/update_math.hpp"
#include "engine/layers/dropout.hpp"
#include "engine/rng.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain::cuda {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("cuda philox: Random123's known answers for Philox4x32-10, through rng.hpp and the host/device rounds") {
  // Random123's kat_vectors (Salmon et al., SC'11): counter, key, output.
  struct Kat {
    std::array<uint32_t, 4> ctr;
    std::array<uint32_t, 2> key;
    std::array<uint32_t, 4> out;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    CHECK(philox4x32(k.ctr, k.key) == k.out);
    const Philox4 got = philox4x32_10(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1]);
    for (int j = 0; j < 4; ++j) CHECK(got.v[j] == k.out[static_cast<size_t>(j)]);
  }
  // CounterRng's uniform(e) is lane e % 4 of block e / 4.
  const uint64_t key = 0x0123456789ABCDEFull, stream = (uint64_t{5} << 32) | 77;
  const CounterRng rng(key, stream);
  for (uint64_t e = 0; e < 64; ++e) {
    const Philox4 d = counter_block(key, stream, e / 4);
    REQUIRE(philox_uniform(d.v[e % 4]) == rng.uniform(e));
  }
}

TEST_CASE("cuda dropout math: the kernel's (key, example, block, lane) mapping reproduces the CPU layer's mask") {
  const float rate = 0.35f;
  Dropout layer(rate, "dropout_3");
  REQUIRE(layer.build({3, 7}).ok());  // 21 elements per example: the last Philox block is partial
  const Tensor x = test::random_tensor({5, 3, 7}, 9);
  ForwardContext ctx;
  ctx.training = true;
  ctx.seed = 42;
  ctx.step = 17;
  ctx.example_offset = 1000;
  Tensor y;
  LayerCache cache;
  layer.forward(ctx, {}, x, y, cache);
  const std::vector<float> cpu_mask = cache.saved.at(0).to_vector();
  // The per-thread loop of dropout_forward_kernel, run on the host.
  const uint64_t key = layer.mask_key(ctx.seed, ctx.step);
  const int64_t rows = 5, per = 21, blocks_per_row = (per + 3) / 4;
  const float keep_scale = 1.0f / (1.0f - rate);
  std::vector<float> mask(static_cast<size_t>(rows * per), -1.0f), out(mask.size(), -1.0f);
  for (int64_t i = 0; i < rows * blocks_per_row; ++i) {
    const int64_t r = i / blocks_per_row, b = i - r * blocks_per_row;
    const Philox4 draw = counter_block(key, static_cast<uint64_t>(ctx.example_offset + r), static_cast<uint64_t>(b));
    for (int j = 0; j < 4; ++j) {
      const int64_t e = 4 * b + j;
      if (e >= per) continue;
      const float m = philox_uniform(draw.v[j]) >= rate ? keep_scale : 0.0f;
      mask[static_cast<size_t>(r * per + e)] = m;
      out[static_cast<size_t>(r * per + e)] = exact::mul(x[r * per + e], m);
    }
  }
  CHECK(same_bits(mask, cpu_mask));
  CHECK(same_bits(out, y.to_vector()));
  // Both values occur (the test would pass vacuously on an all-kept mask).
  CHECK(std::count(mask.begin(), mask.end(), 0.0f) > 0);
  CHECK(std::count(mask.begin(), mask.end(), keep_scale) > 0);
}

TEST_CASE("cuda multi-tensor plan: chunks, launch limits and the block lookup cover every element once") {
  const std::vector<int64_t> sizes{10, 0, 16384, 16385, 100000, 1};
  auto plan = plan_multi_tensor(sizes, 64, 16384);
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].first == 0);
  CHECK(plan[0].count == 6);
  CHECK(plan[0].chunk_start == std::vector<int32_t>{0, 1, 1, 2, 4, 11, 12});
  CHECK(plan[0].blocks() == 12);

  plan = plan_multi_tensor(sizes, 2, 16384);
  REQUIRE(plan.size() == 3);
  CHECK(plan[1].first == 2);
  CHECK(plan[1].chunk_start == std::vector<int32_t>{0, 1, 3});
  CHECK(plan[2].first == 4);
  CHECK(plan[2].chunk_start == std::vector<int32_t>{0, 7, 8});

  plan = plan_multi_tensor(sizes, 64, 16384, 7);  // at most 7 blocks a launch
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].count == 4);
  CHECK(plan[1].count == 1);  // 100000 elements: 7 chunks alone
  CHECK(plan[2].count == 1);

  CHECK(plan_multi_tensor(std::vector<int64_t>{}, 64, 16384).empty());

  // Every element of every tensor is visited by exactly one (launch, block, i).
  for (const int max_tensors : {1, 2, 3, 64}) {
    for (const int64_t chunk : {int64_t{1}, int64_t{7}, int64_t{4096}}) {
      CAPTURE(max_tensors);
      CAPTURE(chunk);
      std::vector<std::vector<int>> seen;
      for (int64_t n : sizes) seen.emplace_back(static_cast<size_t>(n), 0);
      size_t next = 0;
      for (const MultiTensorLaunch& l : plan_multi_tensor(sizes, max_tensors, chunk)) {
        CHECK(l.first == next);
        next += static_cast<size_t>(l.count);
        CHECK(l.count <= max_tensors);
        for (int32_t b = 0; b < l.blocks(); ++b) {
          const int t = tensor_of_block(l.chunk_start.data(), l.count, b);
          REQUIRE(t >= 0);
          REQUIRE(t < l.count);
          const int64_t begin = (b - l.chunk_start[static_cast<size_t>(t)]) * chunk;
          const int64_t n = sizes[l.first + static_cast<size_t>(t)];
          for (int64_t i = begin; i < std::min(begin + chunk, n); ++i) ++seen[l.first + static_cast<size_t>(t)][static_cast<size_t>(i)];
        }
      }
      CHECK(next == sizes.size());
      for (const auto& v : seen) CHECK(std::all_of(v.begin(), v.end(), [](int k) { return k == 1; }));
    }
  }
}

TEST_CASE("cuda error text: call, place, GPU, host, rank and the library's code are all in one line") {
  GpuFailure f;
  f.call = "cudaMalloc(&p, bytes)";
  f.code_name = "cudaErrorMemoryAllocation";
  f.code = 2;
  f.description = "out of memory";
  f.file = "../engine/cuda/device_context.cpp";
  f.line = 42;
  f.device = 1;
  CHECK(format_gpu_failure(f, "node7", 3) ==
        "engine/cuda/device_context.cpp:42: cudaMalloc(&p, bytes) failed on gpu:1 (host node7, rank 3): "
        "cudaErrorMemoryAllocation (2): out of memory");
  f.device = -1;
  f.file = "./tests/x.cpp";
  CHECK(format_gpu_failure(f, "node7", -1) ==
        "tests/x.cpp:42: cudaMalloc(&p, bytes) failed (host node7): cudaErrorMemoryAllocation (2): out of memory");
  // This build's own prefix for source files is dropped, however deep the build directory is.
  CHECK(std::string(source_root()) + "tests/cuda/test_cuda_host_math.cpp" == __FILE__);
  CHECK(source_relative("/b/src/engine/x.cpp", "/b/src/") == "engine/x.cpp");
  CHECK(source_relative("../../b/src/engine/x.cpp", "../../b/src/") == "engine/x.cpp");
  CHECK(source_relative("../engine/x.cpp", "/elsewhere/") == "engine/x.cpp");
  f.file = __FILE__;
  CHECK(format_gpu_failure(f, "h", -1).starts_with("tests/cuda/test_cuda_host_math.cpp:42: "));

  char host[256] = {};
  REQUIRE(gethostname(host, sizeof(host) - 1) == 0);
  set_gpu_error_rank(5);
  const Error e = gpu_failure_error(f);
  set_gpu_error_rank(-1);
  CHECK(e.kind == ErrorKind::kRuntime);
  CHECK(e.message == "tests/cuda/test_cuda_host_math.cpp:42: cudaMalloc(&p, bytes) failed (host " + std::string(host) +
                         ", rank 5): cudaErrorMemoryAllocation (2): out of memory");
}

}  // namespace
}  // namespace dtrain::cuda
