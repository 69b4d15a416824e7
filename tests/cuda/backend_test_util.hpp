// Helpers for the cuda backend's tests: the gpu:0 context (skipping, with the
// reason, without a GPU or without a usable CUDA module) and comparisons that
// name the op, the element, the GPU and CPU values and the tolerance.
#pragma once

#include <doctest.h>

#include <string>
#include <vector>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/layer.hpp"
#include "engine/ops/context.hpp"
#include "engine/tensor.hpp"
#include "tests/cuda/gpu_test_util.hpp"

// DTRAIN_SKIP_WITHOUT_GPU, then REQUIREs the CUDA module and gpu:0 usable
// (a GPU with no loadable module is a failure, not a skip).
#define DTRAIN_REQUIRE_GPU_BACKEND()                                                                \
  DTRAIN_SKIP_WITHOUT_GPU();                                                                        \
  do {                                                                                              \
    const ::dtrain::Status dtrain_s_ = ::dtrain::gpu::check_device(::dtrain::gputest_backend::kGpu0); \
    REQUIRE_MESSAGE(dtrain_s_.ok(), (dtrain_s_.ok() ? "" : dtrain_s_.error().message));              \
  } while (0)

namespace dtrain::gputest_backend {

inline constexpr Device kGpu0{DeviceKind::cuda, 0};
// float32 contexts on gpu:0 and on the host.
const ops::Context& gpu();
const ops::Context& cpu();

// One layer's forward and backward (training mode, seed 42, step 7, example
// offset 100) on ctx's device from host inputs; y, dx and the parameter
// gradients copied back to the host.
struct LayerPass {
  Tensor y, dx;
  std::vector<Tensor> grads;
};
LayerPass run_layer(const Layer& layer, const ops::Context& ctx, const std::vector<Tensor>& host_params,
                    const Tensor& host_x, const Tensor& host_dy, bool training);

// CHECKs |got - want| <= atol + rtol |want| for every element (NaN matches
// only NaN); on failure names `what`, the worst element's index and both
// values. got: any device; want: host.
void check_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what);
// CHECKs that got and want hold the same float32 bits (tolerance 0).
void check_same(const Tensor& got, const Tensor& want, const std::string& what);

}  // namespace dtrain::gputest_backend
