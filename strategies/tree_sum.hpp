// The one order in which dtrain adds partial gradient sums: the micro-batches
// of a replica's shard, the replicas of a process, the workers of a cluster
// (collective's ordered all-reduce, the sync parameter server). Float
// addition is commutative but not associative, so a sum's bits depend only on
// its grouping; every strategy groups parts [0, n) the same way:
//
//   T(lo, hi) = part lo                                   when hi - lo == 1
//   T(lo, hi) = T(lo, lo + p) + T(lo + p, hi)             p = tree_split(hi - lo)
//
// with p the largest power of two below hi - lo. If every replica's shard is
// a power-of-two number m of micro-batches (and all shards equal), each
// shard's sum is a node of the tree over the whole batch's micro-batches, and
// the tree over the shards' sums is the rest of it: one_device on the whole
// batch and any split of it into replicas and workers add the same floats in
// the same grouping, so they give the same bits (run.micro_batch_rows).
#pragma once

#include <cstddef>

namespace dtrain {

// The largest power of two below n. REQUIRES: n >= 2.
inline size_t tree_split(size_t n) {
  size_t p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}

// Adds parts [lo, hi) into part lo in the order above: add(i, j) must make
// part i the sum of parts i and j (j > i) and is called hi - lo - 1 times.
template <class Add>
void tree_sum(size_t lo, size_t hi, Add&& add) {
  if (hi - lo < 2) return;
  const size_t mid = lo + tree_split(hi - lo);
  tree_sum(lo, mid, add);
  tree_sum(mid, hi, add);
  add(lo, mid);
}

template <class Add>
void tree_sum(size_t n, Add&& add) {
  tree_sum(0, n, add);
}

}  // namespace dtrain
