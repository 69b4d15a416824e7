// Shared by the cuBLASLt and cuDNN tests (test_cuda_blas.cpp, test_cuda_dnn.cpp):
// their tolerances (reasoned in test_cuda_blas.cpp) and shape helpers.
#pragma once

#include <doctest.h>

#include <cstdint>

#include "engine/base/status.hpp"
#include "engine/cuda/cudnn_ops.hpp"
#include "engine/kernels/conv.hpp"
#include "engine/kernels/padding.hpp"
#include "engine/kernels/pool.hpp"
#include "engine/tensor.hpp"
#include "tests/cuda/gpu_test_util.hpp"

namespace dtrain::cuda::blas_dnn_test {
inline constexpr double kMatmulRtol = 1e-4, kTf32Rtol = 2e-2, kConvRtol = 1e-4;
inline constexpr double kAvgPoolRtol = 1e-5, kPoolBackwardRtol = 1e-5, kSoftmaxRtol = 1e-5;
// Convolutions with FMA math (no TF32), cuDNN's best-ranked algorithm.
inline const ConvPolicy kFma{MathMode::kFloat32, false};

inline void require_ok(const Status& s) { REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message)); }

inline Tensor from_gpu(const gputest::DeviceArray& a, const Shape& shape) { return Tensor::from(shape, a.download()); }

inline kernels::Conv2dShape conv_shape(int64_t n, int64_t ih, int64_t iw, int64_t ic, int64_t oc, int64_t k, int64_t stride,
                                int64_t dilation, bool same, bool relu) {
  const kernels::Window1d h = kernels::window_1d(ih, k, stride, dilation, same);
  const kernels::Window1d w = kernels::window_1d(iw, k, stride, dilation, same);
  kernels::Conv2dShape s;
  s.n = n, s.ih = ih, s.iw = iw, s.ic = ic, s.oh = h.out, s.ow = w.out, s.oc = oc, s.kh = k, s.kw = k;
  s.sh = s.sw = stride;
  s.dh = s.dw = dilation;
  s.pad_top = h.pad_before, s.pad_bottom = h.pad_after, s.pad_left = w.pad_before, s.pad_right = w.pad_after;
  s.relu = relu;
  return s;
}

inline kernels::Pool2dShape pool_shape(kernels::PoolKind kind, int64_t n, int64_t ih, int64_t iw, int64_t c, int64_t k,
                                int64_t stride, bool same) {
  const kernels::Window1d h = kernels::window_1d(ih, k, stride, 1, same);
  const kernels::Window1d w = kernels::window_1d(iw, k, stride, 1, same);
  kernels::Pool2dShape s;
  s.kind = kind, s.n = n, s.ih = ih, s.iw = iw, s.c = c, s.oh = h.out, s.ow = w.out, s.kh = s.kw = k;
  s.sh = s.sw = stride;
  s.pad_top = h.pad_before, s.pad_bottom = h.pad_after, s.pad_left = w.pad_before, s.pad_right = w.pad_after;
  return s;
}

}  // namespace dtrain::cuda::blas_dnn_test
