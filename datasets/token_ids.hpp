// How token ids travel in a Batch's features: the one place that decides
// their element type, int32, which a model reads through an input declared
// `dtype: int32` and an embedding layer. Labels stay float32 class ids.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/dtype.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

inline constexpr DType kTokenDType = DType::i32;

// The largest vocabulary whose ids kTokenDType holds exactly.
inline constexpr int64_t kMaxTokenVocabulary = kTokenDType == DType::f32 ? int64_t{1} << 24 : int64_t{1} << 31;

// A zero-filled host tensor of `shape` for token ids.
inline Tensor token_tensor(Shape shape) { return Tensor::zeros(std::move(shape), kTokenDType, kHost); }

// Writes ids[0 .. n) at element `offset` of `t` (a token_tensor).
// REQUIRES: offset + n <= t.numel(); every id in [0, kMaxTokenVocabulary).
inline void put_tokens(Tensor& t, int64_t offset, const int32_t* ids, int64_t n) {
  if constexpr (kTokenDType == DType::i32) {
    std::copy_n(ids, n, t.host_data<int32_t>() + offset);
  } else {
    float* out = t.data() + offset;
    for (int64_t k = 0; k < n; ++k) out[k] = static_cast<float>(ids[k]);
  }
}

// The ids of a host token_tensor as floats (for tests and messages).
inline std::vector<float> token_vector(const Tensor& t) {
  const int32_t* ids = t.host_data<int32_t>();
  return std::vector<float>(ids, ids + t.numel());
}

}  // namespace dtrain
