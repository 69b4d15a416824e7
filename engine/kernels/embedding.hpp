// Embedding and position embedding's float32 CPU loops: the row gather and
// its scatter-add, the per-sequence add of a position table and its sum over
// sequences. Sums run in token (sequence) order, so results depend on the
// inputs alone. Single-threaded; thread-safe.
#pragma once

#include <cstdint>

namespace dtrain::kernels {

// An id as a row of a table of `rows` rows, or -1 when it is not an integer
// in [0, rows) (NaN included; a float id is compared in double, so that no
// rounding of `rows` lets an id past the table through).
int64_t embedding_row(int32_t id, int64_t rows);
int64_t embedding_row(float id, int64_t rows);

// y (tokens, d) := row embedding_row(ids[t]) of table (rows, d), or NaN for
// an id that is not a row. Id: int32_t or float.
template <class Id>
void embedding_gather(const Id* ids, int64_t tokens, const float* table, int64_t rows, int64_t d, float* y);
// dtable (rows, d) := the sum of dy's rows (tokens, d) over the tokens whose
// id picks each row, in token order; tokens with no row add nothing.
template <class Id>
void embedding_scatter_add(const Id* ids, int64_t tokens, const float* dy, int64_t rows, int64_t d, float* dtable);

// y, x (sequences, block) with block = steps * channels: y := x + table's
// first block elements (its rows [0, steps)), per sequence.
void position_embedding_forward(const float* x, const float* table, int64_t sequences, int64_t block, float* y);
// dtable (table_size) := the sum over sequences of dy (sequences, block), in
// double and sequence order, in its first block elements; 0 after them.
void position_embedding_backward(const float* dy, int64_t sequences, int64_t block, int64_t table_size,
                                 float* dtable);

}  // namespace dtrain::kernels
