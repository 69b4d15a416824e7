// Helpers shared by the layer implementations: output buffers that are reused
// across calls, window-parameter parsing and "did you mean" suggestions.
#pragma once

#include "engine/base/did_you_mean.hpp"  // did_you_mean(), shared with the job loader

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// True when the element ranges of a and b share memory.
bool overlaps(const Tensor& a, const Tensor& b);

// Makes `out` a float32 (B, ...) tensor of `shape`, on the device of the
// first non-empty input, whose contents the caller will overwrite (new
// storage is zero on the host, NaN on the debug device). Keeps out's storage
// (re-viewed as `shape`) when it already holds exactly that many elements on
// that device and overlaps none of `inputs`; else allocates.
// This is how forward/backward avoid per-call allocations in steady state.
void prepare_output(Tensor& out, const Shape& shape, std::initializer_list<const Tensor*> inputs);
void prepare_output(Tensor& out, const Shape& shape, std::span<const Tensor* const> inputs);

// (batch, s...)
Shape with_batch(int64_t batch, const Shape& s);

// A 2-D window parameter from the job: [] -> `fallback`, [a] -> (a, a),
// [a, b] -> (a, b). Every entry must be >= 1; errors name `field`.
Result<std::array<int64_t, 2>> window_pair(const std::vector<int64_t>& v, std::string_view field,
                                           std::array<int64_t, 2> fallback);

// Checks padding is "valid" or "same"; returns true for "same".
Result<bool> parse_padding(const std::string& padding);

// The documentation of options several layer types share (their field tables).
inline constexpr const char* kOutputActivationDoc =
    "Activation applied to the output: linear (none), relu, gelu, tanh, sigmoid or softmax.";
inline constexpr const char* kUseBiasDoc = "Whether the layer adds a bias vector.";
inline constexpr const char* kKernelInitializerDoc =
    "Initializer of the kernel: a name, or {type: constant, value: x}, or {type: random_uniform, minval: a, maxval: "
    "b} (random_uniform alone: U(-0.05, 0.05)).";
inline constexpr const char* kBiasInitializerDoc =
    "Initializer of the bias: a name, or {type: constant, value: x}, or {type: random_uniform, minval: a, maxval: b} "
    "(random_uniform alone: U(-0.05, 0.05)).";

// "a, b, c"
std::string join(const std::vector<std::string>& words);

}  // namespace dtrain
