// The one table of what each backend can run: (op, device kind, compute
// type). Checked when the model is built for a replica's context, so an
// unsupported combination is a config error naming the layer, the device
// and the type, never a silent fallback to another backend.
#pragma once

#include <string_view>

#include "engine/ops/context.hpp"

namespace dtrain::ops {

// Op names as layers list them: "matmul", "conv2d", "pool2d", "global_pool",
// "activation", "gelu", "batch_norm", "layer_norm", "dropout", "embedding",
// "position_embedding", "attention", "merge", "pad", "sum_rows", "mul",
// "reduce" (sum of squares and the finite check: gradient clipping, mixed
// precision); losses and optimizers by their names
// ("sparse_softmax_cross_entropy", "adam", ...).
bool supports(std::string_view op, const Context& ctx);
// Why not, for the error message: e.g. "the cpu backend has no float16
// matmul (oneDNN has none on the CPU)".
std::string why_unsupported(std::string_view op, const Context& ctx);

}  // namespace dtrain::ops
