// The softmax losses' predictions: softmax over the last dimension (the row
// helpers are kernels::log_sum_exp and softmax_from_lse, engine/kernels/losses.hpp).
#pragma once

#include "engine/tensor.hpp"

namespace dtrain {

// Softmax over the last dimension of logits (any rank >= 1), a new tensor of
// logits' shape: the predictions of both softmax losses.
Tensor softmax_last_dim(const Tensor& logits);

}  // namespace dtrain
