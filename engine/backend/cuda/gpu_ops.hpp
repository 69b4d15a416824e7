// The host side of the cuda backend: device memory and the GPU kernels of
// ops::, reached only through the CUDA module's GpuBackend
// (engine/cuda_module.hpp), so this code links no CUDA library. Call sites pass these as the GPU
// callable of ops::on_device. Shapes as the CPU kernels they mirror; every
// pointer is memory of GPU `d` (from cuda_memory()). A failed GPU call throws
// std::runtime_error naming the op, the GPU and the CUDA library's error
// (dtrain's main reports it; nothing written is lost).
#pragma once

#include <cstdint>

#include "engine/base/status.hpp"
#include "engine/cuda_module.hpp"
#include "engine/base/device.hpp"
#include "engine/kernels/conv.hpp"
#include "engine/kernels/matmul.hpp"
#include "engine/kernels/pool.hpp"
#include "engine/storage.hpp"

namespace dtrain::gpu {

// Whether tensors can live and ops run on `d` (a cuda device): the CUDA
// module loads and the GPU exists. The error says why not (no CUDA in this
// build, the module or a CUDA library missing, no driver, no such GPU).
Status check_device(const Device& d);

// The memory of cuda devices: the module's caching allocator. Copies are
// synchronous for the host side (the data is there when copy() returns).
// REQUIRES: check_device() succeeded for the devices used (else it reports
// the problem and aborts: strategies check before any tensor is made).
DeviceMemory& cuda_memory();

// GPU d's caching allocator: bytes in use and held, peaks, and how many
// cudaMalloc/cudaFree calls it has made (none in a steady training step).
using MemoryStats = GpuMemoryStats;
MemoryStats memory_stats(const Device& d);

// c (M, N) = op(a) op(b) [+ bias (N)] [then relu], as kernels::matmul (f32; s.batch products).
void matmul(const Device& d, const kernels::MatmulShape& s, const float* a, const float* b, const float* bias,
            float* c, bool relu, bool tf32);

// Convolution through cuDNN (engine/cuda/cudnn_ops.hpp), float32, shapes as
// kernels::conv2d_*: x (n, ih, iw, ic), w (kh, kw, ic, oc) HWIO, bias and db
// (oc) or null, y and dy (n, oh, ow, oc). Outputs are overwritten. math.tf32
// lets cuDNN use TF32 tensor cores (precision.matmul: tf32), otherwise FMA
// math only; math.deterministic prefers deterministic algorithms.
void conv2d_forward(const Device& d, const kernels::Conv2dShape& s, const float* x, const float* w, const float* bias,
                    float* y, const GpuMath& math);  // y = conv [+ bias], then relu when s.relu
void conv2d_backward_data(const Device& d, const kernels::Conv2dShape& s, const float* dy, const float* w, float* dx,
                          const GpuMath& math);
void conv2d_backward_weights(const Device& d, const kernels::Conv2dShape& s, const float* x, const float* dy,
                             float* dw, float* db, const GpuMath& math);
// The cuDNN algorithms the convolutions of this process ran with, one line
// per distinct convolution and direction; empty when the CUDA module was
// never loaded (no GPU op ran).
std::vector<std::string> conv_algorithms();

// Pooling through cuDNN, float32, x and dx (n, ih, iw, c), y and dy (n, oh, ow, c).
// The backward reads x and y (cuDNN finds the max again; no workspace).
// Throws for a SAME padding whose windows cuDNN cannot place (pool_pad_plan).
void pool2d_forward(const Device& d, const kernels::Pool2dShape& s, const float* x, float* y);
void pool2d_backward(const Device& d, const kernels::Pool2dShape& s, const float* x, const float* y, const float* dy,
                     float* dx);

// Elementwise, n floats each (out may alias an input):
void relu(const Device& d, const float* x, float* y, int64_t n);
void relu_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t n);    // dy where y > 0
void sigmoid(const Device& d, const float* x, float* y, int64_t n);
void sigmoid_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t n); // dy y (1 - y)
void tanh(const Device& d, const float* x, float* y, int64_t n);
void tanh_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t n);    // dy (1 - y^2)
void mul(const Device& d, const float* a, const float* b, float* out, int64_t n);
void add_into(const Device& d, float* acc, const float* x, int64_t n);  // acc += x
void scale(const Device& d, float* x, float s, int64_t n);              // x *= s

// Rows of a (rows, cols) matrix:
void softmax(const Device& d, const float* x, float* y, int64_t rows, int64_t cols);
void softmax_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t rows, int64_t cols);
void sum_rows(const Device& d, const float* x, float* out, int64_t rows, int64_t cols);  // out (cols)

// The dropout layer's mask and output (engine/cuda/dropout.hpp).
void dropout(const Device& d, uint64_t key, int64_t example_offset, float rate, const float* x, float* mask, float* y,
             int64_t rows, int64_t per);

// sparse softmax cross-entropy: row_losses (host, rows) := lse - logit[label]
// per row; dlogits (or null) := row_scale (softmax - onehot); with example
// weights (device; null: none) row r's times weights[r / positions]. Waits.
void sparse_xent(const Device& d, const float* logits, const float* labels, float* dlogits, float row_scale,
                 double* row_losses, int64_t rows, int64_t classes, const float* weights, int64_t positions);

// sum of x^2 in double; the number of non-finite elements. Wait.
double sum_squares(const Device& d, const float* x, int64_t n);
int64_t count_nonfinite(const Device& d, const float* x, int64_t n);

// One variable's update, bit-identical to engine/optim's sgd and adam
// (engine/cuda/update_math.hpp); slot pointers null where unused.
void sgd(const Device& d, float* var, const float* grad, float* velocity, int64_t n, float lr, float momentum,
         bool nesterov);
using AdamStep = GpuAdamStep;
void adam(const Device& d, float* var, const float* grad, float* m, float* v, int64_t n, const AdamStep& k);

}  // namespace dtrain::gpu
