// The cuda backend's convolution and pooling (cuDNN through ops::) against the
// CPU backend (oneDNN), through the layers' own forward and backward on gpu:0
// and on the host, with random inputs. Skipped, saying why, without a GPU.
//
// Tolerance per op (|gpu - cpu| <= atol + rtol |cpu|), K the length of each
// output's sum (forward kh kw ic, backward data kh kw oc, kernel and bias
// gradients n oh ow):
//   conv2d forward and every gradient (cuDNN and oneDNN sum in other orders):
//     1e-5 relative + 2e-6 x K absolute, as the matmul of test_cuda_backend_ops
//   conv2d under precision.matmul: tf32 (10-bit mantissa products):
//     2e-3 relative + 2e-3 x sqrt(K)
//   max_pool2d forward, and its backward where windows do not overlap: 0
//     (bit-identical: it selects; inputs are distinct, so the max is unique)
//   max_pool2d backward with overlapping windows (dx sums up to kh kw shares in
//     another order): 1e-6 relative + 1e-6
//   avg_pool2d forward and backward (a sum and a division or a reciprocal
//     multiply): 1e-5 relative + 1e-7
#include <doctest.h>

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/layers/conv2d.hpp"
#include "engine/layers/flatten.hpp"
#include "engine/layers/pool2d.hpp"
#include "engine/storage.hpp"
#include "tests/cuda/backend_test_util.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain::gputest_backend {
namespace {

using dtrain::test::distinct_tensor;
using dtrain::test::random_tensor;

struct ConvCase {
  const char* name;
  int64_t n, ih, iw, ic, oc;
  std::array<int64_t, 2> kernel, strides, dilation;
  bool same, relu, bias;
};

// Symmetric and asymmetric (SAME with stride: cudnn_ops pads explicitly)
// padding, strides 1 to 3, rectangular kernels, dilation, 1x1, no bias.
const ConvCase kConvCases[] = {
    {"28x28x1 -> 8, 3x3 same, relu (mnist_cnn's first)", 4, 28, 28, 1, 8, {3, 3}, {1, 1}, {1, 1}, true, true, true},
    {"14x14x8 -> 16, 3x3 same, relu (mnist_cnn's second)", 3, 14, 14, 8, 16, {3, 3}, {1, 1}, {1, 1}, true, true, true},
    {"14x12x4 -> 6, 3x3 same stride 2, relu (asymmetric pad)", 3, 14, 12, 4, 6, {3, 3}, {2, 2}, {1, 1}, true, true,
     true},
    {"10x7x3 -> 4, 2x3 valid stride [1, 2], no bias", 2, 10, 7, 3, 4, {2, 3}, {1, 2}, {1, 1}, false, false, false},
    {"11x11x2 -> 3, 3x3 same dilation 2", 2, 11, 11, 2, 3, {3, 3}, {1, 1}, {2, 2}, true, false, true},
    {"7x9x5 -> 7, 4x4 same stride 3 (asymmetric pad)", 2, 7, 9, 5, 7, {4, 4}, {3, 3}, {1, 1}, true, false, true},
    {"8x8x16 -> 32, 1x1 valid, relu", 2, 8, 8, 16, 32, {1, 1}, {1, 1}, {1, 1}, false, true, true},
};

// The layer built for c's input; *out_shape: its output (oh, ow, oc).
Conv2D make_conv(const ConvCase& c, Shape* out_shape) {
  Conv2dOptions o;
  o.filters = c.oc;
  o.kernel = c.kernel;
  o.strides = c.strides;
  o.dilation = c.dilation;
  o.same = c.same;
  o.use_bias = c.bias;
  Conv2D layer(o);
  if (c.relu) REQUIRE(layer.fuse_activation("relu"));
  const Result<Shape> out = layer.build({c.ih, c.iw, c.ic});
  REQUIRE(out.ok());
  *out_shape = *out;
  return layer;
}

// The layer on gpu:0 (context `on_gpu`) against the host, every output and gradient.
void check_conv(const ConvCase& c, const ops::Context& on_gpu, bool tf32) {
  INFO(c.name);
  Shape out;
  const Conv2D layer = make_conv(c, &out);
  std::vector<Tensor> params = dtrain::test::make_params(layer, 11);
  if (c.bias) params[1] = random_tensor({c.oc}, 12);
  const Tensor x = random_tensor({c.n, c.ih, c.iw, c.ic}, 13);
  const Tensor dy = random_tensor({c.n, out[0], out[1], out[2]}, 14);
  const LayerPass want = run_layer(layer, cpu(), params, x, dy, true);
  const LayerPass got = run_layer(layer, on_gpu, params, x, dy, true);
  const int64_t oh = out[0], ow = out[1];
  const double k_fwd = double(c.kernel[0] * c.kernel[1] * c.ic), k_data = double(c.kernel[0] * c.kernel[1] * c.oc);
  const double k_weights = double(c.n * oh * ow);
  const auto tol = [&](double k) { return tf32 ? std::array{2e-3, 2e-3 * std::sqrt(k)} : std::array{1e-5, 2e-6 * k}; };
  const std::string what = std::string(tf32 ? "tf32 " : "") + "conv2d " + c.name;
  check_close(got.y, want.y, tol(k_fwd)[0], tol(k_fwd)[1], what + ": y");
  check_close(got.dx, want.dx, tol(k_data)[0], tol(k_data)[1], what + ": dx");
  check_close(got.grads[0], want.grads[0], tol(k_weights)[0], tol(k_weights)[1], what + ": dkernel");
  if (c.bias) check_close(got.grads[1], want.grads[1], tol(k_weights)[0], tol(k_weights)[1], what + ": dbias");
}

TEST_CASE("cuda backend layers: conv2d forward, input, kernel and bias gradients equal the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  for (const ConvCase& c : kConvCases) check_conv(c, gpu(), false);
}

TEST_CASE("cuda backend layers: conv2d under precision.matmul tf32 stays within TF32 rounding of the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  const ops::Context tf32{kGpu0, DType::f32, true};
  check_conv(kConvCases[1], tf32, true);
  check_conv(kConvCases[2], tf32, true);
}

struct PoolCase {
  const char* name;
  kernels::PoolKind kind;
  int64_t n, ih, iw, c;
  std::array<int64_t, 2> size, strides;
  bool same;
  bool overlapping;  // windows share inputs (the max backward sums shares)
};

const PoolCase kPoolCases[] = {
    {"max 2x2 stride 2 on 28x28x8 (mnist_cnn's)", kernels::PoolKind::kMax, 4, 28, 28, 8, {2, 2}, {2, 2}, false, false},
    {"max 3x3 stride 2 valid on 10x8x4", kernels::PoolKind::kMax, 2, 10, 8, 4, {3, 3}, {2, 2}, false, true},
    {"max 3x3 stride 1 same on 9x9x3", kernels::PoolKind::kMax, 2, 9, 9, 3, {3, 3}, {1, 1}, true, true},
    {"max 2x3 stride [2, 1] valid on 8x7x2", kernels::PoolKind::kMax, 3, 8, 7, 2, {2, 3}, {2, 1}, false, true},
    {"avg 2x2 stride 2 valid on 12x10x5", kernels::PoolKind::kAvg, 3, 12, 10, 5, {2, 2}, {2, 2}, false, false},
    {"avg 3x3 stride 1 same on 9x9x3 (padding excluded)", kernels::PoolKind::kAvg, 2, 9, 9, 3, {3, 3}, {1, 1}, true,
     true},
    {"avg 3x3 stride 2 same on 9x9x4 (padding excluded)", kernels::PoolKind::kAvg, 2, 9, 9, 4, {3, 3}, {2, 2}, true,
     true},
};

TEST_CASE("cuda backend layers: max_pool2d and avg_pool2d forward and backward equal the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  for (const PoolCase& c : kPoolCases) {
    INFO(c.name);
    Pool2D layer({c.kind, c.size, c.strides, c.same});
    const Result<Shape> out = layer.build({c.ih, c.iw, c.c});
    REQUIRE(out.ok());
    const Tensor x = distinct_tensor({c.n, c.ih, c.iw, c.c}, 21);
    const Tensor dy = random_tensor({c.n, (*out)[0], (*out)[1], (*out)[2]}, 22);
    const LayerPass want = run_layer(layer, cpu(), {}, x, dy, true);
    const LayerPass got = run_layer(layer, gpu(), {}, x, dy, true);
    const std::string what = c.name;
    if (c.kind == kernels::PoolKind::kMax) {
      check_same(got.y, want.y, what + ": y");
      if (c.overlapping) {
        check_close(got.dx, want.dx, 1e-6, 1e-6, what + ": dx");
      } else {
        check_same(got.dx, want.dx, what + ": dx");
      }
    } else {
      check_close(got.y, want.y, 1e-5, 1e-7, what + ": y");
      check_close(got.dx, want.dx, 1e-5, 1e-7, what + ": dx");
    }
  }
}

TEST_CASE("cuda backend layers: SAME pooling cuDNN cannot place fails loudly, naming the padding") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  // The support table refuses such a layer when the job loads (its op is
  // pool2d_pad_after); this is the GPU op's own last line of defence.
  // 7 rows pooled 2 with stride 2 under SAME: 4 windows, the extra pad after
  // the input only; cuDNN takes one pad for both sides.
  Pool2D layer({kernels::PoolKind::kMax, {2, 2}, {2, 2}, true});
  REQUIRE(layer.build({7, 7, 2}).ok());
  const Tensor x = random_tensor({2, 7, 7, 2}, 31).to(kGpu0);
  ForwardContext f;
  f.ops = &gpu();
  LayerCache cache;
  Tensor y;
  std::vector<Tensor> none;
  CHECK_THROWS_WITH_AS(layer.forward(f, none, x, y, cache),
                       "pool2d on gpu:0 failed: pool2d on the GPU: padding top 0 bottom 1, left 0 right 1 pads "
                       "more after the input than before, which cuDNN's pooling (one pad per side pair) cannot "
                       "place; such a pooling runs on the CPU only (the support table refuses pool2d_pad_after on "
                       "GPUs)",
                       std::runtime_error);
}

TEST_CASE("cuda backend layers: flatten on gpu:0 is a view (no copy, no kernel)") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  Flatten layer;
  REQUIRE(layer.build({6, 5, 4}).ok());
  const Tensor x = random_tensor({3, 6, 5, 4}, 41);
  const Tensor gx = x.to(kGpu0), gdy = random_tensor({3, 120}, 42).to(kGpu0);
  ForwardContext f;
  f.ops = &gpu();
  LayerCache cache;
  Tensor y, dx;
  std::vector<Tensor> none;
  const CopyCounts before = copy_counts();
  layer.forward(f, none, gx, y, cache);
  layer.backward(f, {}, none, gx, y, gdy, &dx, cache);
  const CopyCounts after = copy_counts();
  CHECK(y.shape() == Shape{3, 120});
  CHECK(y.device() == kGpu0);
  CHECK(y.raw() == gx.raw());
  CHECK(dx.shape() == x.shape());
  CHECK(dx.raw() == gdy.raw());
  CHECK(after.host_to_device == before.host_to_device);
  CHECK(after.device_to_host == before.device_to_host);
  CHECK(after.device_to_device == before.device_to_device);
  check_same(y, x.reshaped({3, 120}), "flatten y");
}

}  // namespace
}  // namespace dtrain::gputest_backend
