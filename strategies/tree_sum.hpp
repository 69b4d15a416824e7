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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

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

// Parts [0, m) cut into n contiguous ranges that are each a node of the
// tree above (the largest range, the leftmost of equals, split at its
// tree_split until there are n): summed as nodes and added in the tree's
// order, they give the bits of the tree over all m parts. Returns the n + 1
// boundaries. With n a power of two dividing m, the ranges are equal.
// REQUIRES: 1 <= n <= m.
inline std::vector<size_t> tree_parts(size_t m, size_t n) {
  std::vector<std::pair<size_t, size_t>> parts{{0, m}};
  while (parts.size() < n) {
    size_t best = 0;
    for (size_t i = 1; i < parts.size(); ++i) {
      if (parts[i].second - parts[i].first > parts[best].second - parts[best].first) best = i;
    }
    const auto [lo, hi] = parts[best];
    if (hi - lo < 2) break;
    const size_t mid = lo + tree_split(hi - lo);
    parts[best] = {lo, mid};
    parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1, {mid, hi});
  }
  std::vector<size_t> bounds;
  for (const auto& [lo, hi] : parts) bounds.push_back(lo);
  bounds.push_back(m);
  return bounds;
}

// Adds parts [lo, hi) of the tree above when they come as contiguous
// ranges, each a node of it (`bounds`: the ranges' n + 1 boundaries, from
// tree_parts): add(a, b) must make range a the sum of ranges a and b (b > a),
// called n - 1 times in the tree's order. Returns the range that holds the
// sum. REQUIRES: bounds.front() <= lo < hi <= bounds.back(), and [lo, hi) a
// node made of whole ranges.
template <class Add>
size_t tree_sum_ranges(const std::vector<size_t>& bounds, size_t lo, size_t hi, Add&& add) {
  const auto first = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), lo) - bounds.begin());
  if (bounds[first + 1] == hi) return first;  // one range
  const size_t mid = lo + tree_split(hi - lo);
  const size_t a = tree_sum_ranges(bounds, lo, mid, add), b = tree_sum_ranges(bounds, mid, hi, add);
  add(a, b);
  return a;
}

template <class Add>
size_t tree_sum_ranges(const std::vector<size_t>& bounds, Add&& add) {
  return tree_sum_ranges(bounds, bounds.front(), bounds.back(), add);
}

// Elastic training's split of a global batch of `rows` over n workers: with
// micro-batches of `micro_batch_rows` (> 0, dividing rows, at least n of
// them), whole micro-batches in the ranges of tree_parts (`bounds`, in
// micro-batches: their sums, added as tree_sum_ranges does, keep the bits of
// the tree over every micro-batch); else rows as even as they allow (bounds
// empty). row_cuts: the n + 1 row boundaries.
struct ElasticSplit {
  std::vector<int64_t> row_cuts;
  std::vector<size_t> bounds;
};

inline ElasticSplit elastic_split(int64_t rows, size_t n, int64_t micro_batch_rows) {
  ElasticSplit out;
  const int64_t mb = micro_batch_rows;
  if (mb > 0 && rows % mb == 0 && static_cast<size_t>(rows / mb) >= n) {
    out.bounds = tree_parts(static_cast<size_t>(rows / mb), n);
    for (size_t b : out.bounds) out.row_cuts.push_back(static_cast<int64_t>(b) * mb);
  } else {
    for (size_t k = 0; k <= n; ++k) out.row_cuts.push_back(rows * static_cast<int64_t>(k) / static_cast<int64_t>(n));
  }
  return out;
}

}  // namespace dtrain
