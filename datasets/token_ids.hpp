// How token ids travel in a Batch's features: the one place that decides
// their element type. Today float32 (model inputs are float32; ids below 2^24
// are exact); once models take integer inputs (model.inputs dtype int32),
// setting kTokenDType to DType::i32 is the whole change for the text and
// synthetic_sequence sources. Labels stay float32 class ids either way.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/dtype.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

inline constexpr DType kTokenDType = DType::f32;

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

}  // namespace dtrain
