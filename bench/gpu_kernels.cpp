// dtrain_bench_gpu: the GPU benchmark of the bundle (run-gpu-checks.sh). Times
// cuBLASLt matmul (float32 and TF32) and cuDNN conv2d forward on GPU 0, each
// result verified first against sampled entries computed on the host in double.
// The first call of a shape makes its plan (descriptors, the heuristic's
// algorithm) and is timed apart, wall clock; the timed calls are warm ones,
// which reuse the plan and only run the kernels (CUDA events).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/cudnn_ops.hpp"
#include "engine/cuda/matmul_lt.hpp"
#include "engine/cuda/runtime.hpp"

namespace dtrain::cuda {
namespace {

constexpr int kSamples = 256;    // output entries verified per case
constexpr int kWarmup = 3, kTimed = 20;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "dtrain_bench_gpu: %s\n", what.c_str());
  std::exit(1);
}

void ok_or_die(const Status& s) {
  if (!s.ok()) die(s.error().message);
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

// n floats on `dev`, uploaded from `host` when given.
CachedBuffer upload(GpuDevice& dev, size_t n, const std::vector<float>* host = nullptr) {
  Result<CachedBuffer> b = dev.allocator.allocate_buffer(n * sizeof(float), stream_id(dev.compute));
  if (!b.ok()) die(b.error().message);
  if (host != nullptr) ok_or_die(copy_async(b->get(), host->data(), n * sizeof(float), dev.compute));
  return std::move(*b);
}

std::vector<float> download(GpuDevice& dev, const CachedBuffer& b, size_t n) {
  std::vector<float> out(n);
  ok_or_die(copy_async(out.data(), b.get(), n * sizeof(float), dev.compute));
  ok_or_die(dev.compute.synchronize());
  return out;
}

// One sampled entry: the reference in double and the sum of |terms|, the
// scale rounding errors are measured against.
struct Reference {
  double value = 0, abs_sum = 0;
  void add(double a, double b) {
    value += a * b;
    abs_sum += std::fabs(a * b);
  }
};

// Largest |got - want| / abs_sum over the samples; dies above `tol`.
void verify(const std::string& name, const std::vector<std::pair<float, Reference>>& samples, double tol) {
  double worst = 0;
  for (const auto& [got, ref] : samples) {
    worst = std::max(worst, std::fabs(got - ref.value) / std::max(ref.abs_sum, 1e-30));
  }
  if (!(worst <= tol)) die(fmt::format("{}: wrong result: relative error {:.3g} > {:.3g}", name, worst, tol));
  std::printf("%-44s verified %d entries (max relative error %.2g)\n", name.c_str(), kSamples, worst);
}

// Wall-clock milliseconds of `run`'s first call (its planning included), to completion.
template <typename F>
double first_call_ms(GpuDevice& dev, F&& run) {
  const auto start = std::chrono::steady_clock::now();
  ok_or_die(run());
  ok_or_die(dev.compute.synchronize());
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Milliseconds per call of `run` on dev.compute, after warm-up, by CUDA events.
template <typename F>
double time_ms(GpuDevice& dev, F&& run) {
  for (int i = 0; i < kWarmup; ++i) ok_or_die(run());
  cudaEvent_t start, stop;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) die("cudaEventCreate failed");
  cudaEventRecord(start, dev.compute.get());
  for (int i = 0; i < kTimed; ++i) ok_or_die(run());
  cudaEventRecord(stop, dev.compute.get());
  if (cudaEventSynchronize(stop) != cudaSuccess) die("cudaEventSynchronize failed");
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / kTimed;
}

void bench_matmul(GpuDevice& dev, int64_t m, int64_t n, int64_t k, MathMode mode) {
  const std::string name =
      fmt::format("matmul {} {}x{}x{}", mode == MathMode::kTf32 ? "tf32" : "fp32", m, n, k);
  const std::vector<float> a = random_floats(static_cast<size_t>(m * k), 1);
  const std::vector<float> b = random_floats(static_cast<size_t>(k * n), 2);
  CachedBuffer da = upload(dev, a.size(), &a), db = upload(dev, b.size(), &b);
  CachedBuffer dc = upload(dev, static_cast<size_t>(m * n));
  const kernels::MatmulShape s{m, n, k, false, false};
  auto run = [&] { return matmul(dev, s, da.floats(), db.floats(), nullptr, dc.floats(), Epilogue::kNone, mode); };
  const double first = first_call_ms(dev, run);
  const std::vector<float> c = download(dev, dc, static_cast<size_t>(m * n));
  std::mt19937 gen(3);
  std::vector<std::pair<float, Reference>> samples;
  for (int i = 0; i < kSamples; ++i) {
    const int64_t r = std::uniform_int_distribution<int64_t>(0, m - 1)(gen);
    const int64_t col = std::uniform_int_distribution<int64_t>(0, n - 1)(gen);
    Reference ref;
    for (int64_t p = 0; p < k; ++p) ref.add(a[r * k + p], b[p * n + col]);
    samples.push_back({c[r * n + col], ref});
  }
  // TF32 rounds each input to 10 mantissa bits (2^-11 relative each).
  verify(name, samples, mode == MathMode::kTf32 ? 4e-3 : 1e-5);
  const double ms = time_ms(dev, run);
  std::printf("%-44s %8.3f ms  %8.1f TFLOP/s (2*M*N*K / time); first call %.3f ms\n", name.c_str(), ms,
              2.0 * m * n * k / (ms * 1e-3) / 1e12, first);
}

// A 3x3 SAME, stride-1 convolution (n, hw, hw, ic) -> (n, hw, hw, oc), as mnist_cnn's.
void bench_conv(GpuDevice& dev, int64_t batch, int64_t hw, int64_t ic, int64_t oc) {
  const std::string name = fmt::format("conv2d fwd fp32 {}x{}x{}x{} -> {} (3x3 same)", batch, hw, hw, ic, oc);
  kernels::Conv2dShape s;
  s.n = batch;
  s.ih = s.iw = s.oh = s.ow = hw;
  s.ic = ic;
  s.oc = oc;
  s.kh = s.kw = 3;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  const std::vector<float> x = random_floats(static_cast<size_t>(batch * hw * hw * ic), 4);
  const std::vector<float> w = random_floats(static_cast<size_t>(9 * ic * oc), 5);
  CachedBuffer dx = upload(dev, x.size(), &x), dw = upload(dev, w.size(), &w);
  const size_t ny = static_cast<size_t>(batch * hw * hw * oc);
  CachedBuffer dy = upload(dev, ny);
  const ConvPolicy fma{MathMode::kFloat32, false};
  auto run = [&] { return conv2d_forward(dev, s, dx.floats(), dw.floats(), nullptr, dy.floats(), fma); };
  const double first = first_call_ms(dev, run);
  const std::vector<float> y = download(dev, dy, ny);
  std::mt19937 gen(6);
  std::vector<std::pair<float, Reference>> samples;
  for (int i = 0; i < kSamples; ++i) {
    const size_t at = std::uniform_int_distribution<size_t>(0, ny - 1)(gen);
    const int64_t o = static_cast<int64_t>(at) % oc, col = static_cast<int64_t>(at) / oc % hw;
    const int64_t row = static_cast<int64_t>(at) / (oc * hw) % hw, img = static_cast<int64_t>(at) / (oc * hw * hw);
    Reference ref;
    for (int64_t i2 = 0; i2 < 3; ++i2) {
      for (int64_t j = 0; j < 3; ++j) {
        const int64_t r = row + i2 - 1, c = col + j - 1;
        if (r < 0 || r >= hw || c < 0 || c >= hw) continue;
        for (int64_t ch = 0; ch < ic; ++ch) {
          ref.add(x[((img * hw + r) * hw + c) * ic + ch], w[((i2 * 3 + j) * ic + ch) * oc + o]);
        }
      }
    }
    samples.push_back({y[at], ref});
  }
  verify(name, samples, 1e-5);
  const double ms = time_ms(dev, run);
  std::printf("%-44s %8.3f ms  %8.1f TFLOP/s (2*N*H*W*9*IC*OC / time); first call %.3f ms\n", name.c_str(), ms,
              2.0 * batch * hw * hw * 9 * ic * oc / (ms * 1e-3) / 1e12, first);
}

int run() {
  if (const auto why = no_gpu_reason()) {
    std::fprintf(stderr, "dtrain_bench_gpu: no CUDA device: %s\n", why->c_str());
    return 2;
  }
  Result<GpuDevice*> dev = gpu_device(0);
  if (!dev.ok()) die(dev.error().message);
  std::printf("dtrain_bench_gpu: gpu:0, %d timed warm calls after the first call and %d warm-up calls per case\n",
              kTimed, kWarmup);
  for (const int64_t size : {1024, 4096}) {
    bench_matmul(**dev, size, size, size, MathMode::kFloat32);
    bench_matmul(**dev, size, size, size, MathMode::kTf32);
  }
  bench_conv(**dev, 64, 28, 1, 32);   // mnist_cnn's first convolution, batch 64
  bench_conv(**dev, 64, 14, 32, 64);  // its second
  bench_conv(**dev, 256, 32, 64, 64);  // a larger one, compute-bound
  return 0;
}

}  // namespace
}  // namespace dtrain::cuda

int main() { return dtrain::cuda::run(); }
