// kernels/parallel.hpp: parallel_ranges covers every item exactly once, and
// column_sums gives the same double bits for any number of threads (its
// chunks depend on the shape alone) and equals a plain sum to rounding.
#include <doctest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/kernels/parallel.hpp"
#include "tests/engine/kernels/kernel_test_util.hpp"

namespace dtrain::kernels {
namespace {

TEST_CASE("kernels::parallel_ranges covers every item once, in parallel above the threshold") {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5}, kParallelElements - 1, kParallelElements, 3 * kParallelElements + 7}) {
    CAPTURE(n);
    std::vector<int> hits(static_cast<size_t>(n), 0);
    std::vector<int> team(static_cast<size_t>(n), 0);
    parallel_ranges(n, 1, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        ++hits[static_cast<size_t>(i)];
        team[static_cast<size_t>(i)] = omp_get_num_threads();
      }
    });
    CHECK(std::count(hits.begin(), hits.end(), 1) == n);
    if (n > 0) CHECK(team[0] == (n >= kParallelElements ? 3 : 1));
  }
  omp_set_num_threads(saved);
}

TEST_CASE("kernels::column_sums gives the same bits for 1, 2 and 3 threads") {
  const int saved = omp_get_max_threads();
  for (int64_t width : {1, 3, 16, 64}) {
    const int64_t rows = 4 * kParallelElements / width + 13;  // not a whole number of chunks
    CAPTURE(width);
    const std::vector<float> x = test::random_vector(static_cast<size_t>(rows * width), static_cast<uint64_t>(width));
    auto run = [&](int threads) {
      omp_set_num_threads(threads);
      std::vector<double> out(static_cast<size_t>(width), -1.0);
      column_sums(rows, width, width, out.data(), [&](int64_t r, double* acc) {
        for (int64_t j = 0; j < width; ++j) acc[j] += x[static_cast<size_t>(r * width + j)] * 1.1;
      });
      return out;
    };
    const std::vector<double> one = run(1);
    CHECK(run(2) == one);
    CHECK(run(3) == one);
    for (int64_t j = 0; j < width; ++j) {
      double plain = 0.0;
      for (int64_t r = 0; r < rows; ++r) plain += x[static_cast<size_t>(r * width + j)] * 1.1;
      CHECK(one[static_cast<size_t>(j)] == doctest::Approx(plain).epsilon(1e-9));
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace dtrain::kernels
