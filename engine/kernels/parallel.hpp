// How the engine's plain-loop CPU kernels split work over the calling
// thread's OpenMP team (the one oneDNN uses: OMP_NUM_THREADS threads, or the
// replica pool's share of the cores). Every helper here gives results that do
// not depend on the number of threads or on timing: ranges of independent
// items go to one thread each, and sums over rows are taken per chunk of rows
// whose size depends on the shape alone, then added in chunk order.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dtrain::kernels {

// Below this many elements of work a parallel region (waking the team, which
// sleeps under OMP_WAIT_POLICY=passive) costs more than it saves.
inline constexpr int64_t kParallelElements = int64_t{1} << 16;

// Calls fn(begin, end) on disjoint ranges covering [0, n), one range per
// thread of the team when n * elements_per_item >= kParallelElements, else
// fn(0, n) on the calling thread. REQUIRES: fn's items are independent (each
// writes only its own outputs).
template <class F>
void parallel_ranges(int64_t n, int64_t elements_per_item, F&& fn) {
  if (n <= 0) return;
  if (n * elements_per_item < kParallelElements || omp_get_max_threads() == 1 || omp_in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

// Rows per chunk of column_sums: a chunk holds about 2^14 elements.
inline int64_t chunk_rows(int64_t row_elements) {
  return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, row_elements));
}

// out[0, width) = the sum over rows r in [0, rows) of what add_row(r, acc)
// adds into acc[0, width), in double. Rows are summed in order within chunks
// of chunk_rows(row_elements) rows, chunks in parallel, and the chunks'
// partial sums are added in chunk order: the result is the same for any
// number of threads. add_row may also write outputs of row r alone.
template <class AddRow>
void column_sums(int64_t rows, int64_t row_elements, int64_t width, double* out, AddRow&& add_row) {
  const int64_t per = chunk_rows(row_elements);
  const int64_t chunks = (rows + per - 1) / per;
  std::vector<double> partial(static_cast<size_t>(chunks * width), 0.0);
  parallel_ranges(chunks, per * row_elements, [&](int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k) {
      double* acc = partial.data() + k * width;
      const int64_t end = std::min(rows, (k + 1) * per);
      for (int64_t r = k * per; r < end; ++r) add_row(r, acc);
    }
  });
  std::fill(out, out + width, 0.0);
  for (int64_t k = 0; k < chunks; ++k) {
    const double* acc = partial.data() + k * width;
    for (int64_t j = 0; j < width; ++j) out[j] += acc[j];
  }
}

// column_sums with add_rows(first, last, acc) adding rows [first, last) in
// order (a chunk at a time): the same sums, one call per chunk.
template <class AddRows>
void column_sums_ranges(int64_t rows, int64_t row_elements, int64_t width, double* out, AddRows&& add_rows) {
  const int64_t per = chunk_rows(row_elements);
  const int64_t chunks = (rows + per - 1) / per;
  std::vector<double> partial(static_cast<size_t>(chunks * width), 0.0);
  parallel_ranges(chunks, per * row_elements, [&](int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k) add_rows(k * per, std::min(rows, (k + 1) * per), partial.data() + k * width);
  });
  std::fill(out, out + width, 0.0);
  for (int64_t k = 0; k < chunks; ++k) {
    const double* acc = partial.data() + k * width;
    for (int64_t j = 0; j < width; ++j) out[j] += acc[j];
  }
}

}  // namespace dtrain::kernels
