// The per-replica compute context every op takes: which device the op runs
// on and the compute type of matmuls and convolutions (mixed precision).
// Passed explicitly down from the strategy's replica; there is no
// thread-global mode.
#pragma once

#include "engine/base/device.hpp"
#include "engine/dtype.hpp"

namespace dtrain::ops {

struct Context {
  Device device = kHost;
  // dense/conv compute type: f32, or bf16 with f32 accumulation and f32
  // inputs/outputs (the op casts). Everything else computes in f32.
  DType compute = DType::f32;
  // precision.matmul: tf32. float32 matmuls and convolutions on a GPU may use
  // TF32 tensor cores (10-bit mantissa products, float32 accumulation). No
  // effect on the CPU.
  bool tf32 = false;
  // run.deterministic: GPU convolutions prefer algorithms cuDNN marks
  // deterministic (no atomics). No effect on the CPU, whose kernels always are.
  bool deterministic = false;
  // Each row's result independent of the other rows in its batch (predict:
  // an example alone gets the bits it gets inside a file). On the CPU,
  // matmuls run as fixed-size row blocks (kernels::MatmulShape::row_invariant).
  bool batch_invariant = false;
};

// A float32 context on the host (tests, host-side helpers).
const Context& host_context();

}  // namespace dtrain::ops
