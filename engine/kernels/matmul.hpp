// Row-major matrix multiply on the CPU through oneDNN's matmul primitive
// (bias fused), float32 or bfloat16 operands with float32 accumulation,
// optionally a batch of independent products in one call (attention's
// per-head products). Transposed operands are read in place through strides,
// never copied.
#pragma once

#include <cstdint>

#include "engine/kernels/ktype.hpp"

namespace dtrain::kernels {

struct MatmulShape {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false;  // A stored (K, M) instead of (M, K)
  bool trans_b = false;  // B stored (N, K) instead of (K, N)
  // Element types of a, b and c. Supported: all f32; a and b bf16 with c f32
  // or bf16. Products are accumulated in f32 (plus the f32 bias) and rounded
  // to c_type once at the end.
  KType a_type = KType::kF32, b_type = KType::kF32, c_type = KType::kF32;
  // Independent products, stored one after another: a (batch, M, K) (or
  // (batch, K, M) with trans_a), b (batch, K, N) (or (batch, N, K)), c
  // (batch, M, N). Last, so {m, n, k, trans_a, trans_b} initializers keep
  // meaning one product.
  int64_t batch = 1;
  // Every row of c computed as it would be in any other batch of rows: the
  // product runs as oneDNN calls of one fixed row count (a multiple of 48,
  // so every gemm micro-kernel group is whole), the last block padded with
  // zero rows. oneDNN 2.6's AVX2 sgemm gives a row other bits when it falls
  // in a 1-3 row tail of its 6-row groups or in some tails of its 48-row
  // blocks, and M = 1 takes a gemv on every ISA. Costs up to a block of
  // padding per product; predict sets it. Rows only (batch 1, A not trans_a).
  bool row_invariant = false;
};

// c (M, N) = op(a) (M, K) x op(b) (K, N) [+ bias (N) broadcast over rows],
// for each of the s.batch products (the same bias for every one).
// a, b, c hold elements of s.a_type, s.b_type, s.c_type (float or uint16_t
// bf16 bits); bias is always f32 and may be null. c is overwritten and must
// not alias a, b or bias. Unsupported type combinations throw ErrorException.
// Thread-safe (primitives are cached per shape and types, shared across threads).
void matmul(const MatmulShape& s, const void* a, const void* b, const float* bias, void* c);

}  // namespace dtrain::kernels
