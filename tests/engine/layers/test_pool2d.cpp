// Pooling layers: build errors and shapes, gradients (valid/same, strides
// different from the window), avg excluding padding.
#include <doctest.h>

#include "engine/layers/pool2d.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

Pool2D make_pool(kernels::PoolKind kind, std::array<int64_t, 2> size, std::array<int64_t, 2> strides, bool same) {
  return Pool2D({kind, size, strides, same});
}

TEST_CASE("pool2d: build errors") {
  Pool2D p = make_pool(kernels::PoolKind::kMax, {2, 2}, {2, 2}, false);
  auto r = p.build({10, 3});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "max_pool2d expects an image input (height, width, channels); got shape [10, 3]; "
        "add {type: reshape, target_shape: [height, width, channels]} before it");
  Pool2D a = make_pool(kernels::PoolKind::kAvg, {3, 3}, {1, 1}, false);
  auto e = a.build({2, 5, 1});
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().message ==
        "avg_pool2d output would be empty: a 3x3 window with padding valid does not fit input [2, 5, 1]; "
        "use padding: same, a smaller size or a larger input");
  CHECK(a.type() == "avg_pool2d");
  CHECK(p.type() == "max_pool2d");
}

TEST_CASE("pool2d: output shapes follow TensorFlow") {
  using K = kernels::PoolKind;
  CHECK(*make_pool(K::kMax, {2, 2}, {2, 2}, false).build({28, 28, 32}) == Shape{14, 14, 32});
  CHECK(*make_pool(K::kMax, {2, 2}, {2, 2}, false).build({5, 5, 1}) == Shape{2, 2, 1});
  CHECK(*make_pool(K::kMax, {2, 2}, {2, 2}, true).build({5, 5, 1}) == Shape{3, 3, 1});
  CHECK(*make_pool(K::kAvg, {3, 2}, {1, 2}, false).build({5, 6, 2}) == Shape{3, 3, 2});
  CHECK(make_pool(K::kAvg, {3, 2}, {1, 2}, false).params().empty());
}

TEST_CASE("pool2d: SAME padding with more after the input than before is its own op (no GPU kernel)") {
  using K = kernels::PoolKind;
  const auto ops_of = [](Pool2D p, const Shape& in) {
    REQUIRE(p.build(in).ok());
    return p.ops();
  };
  using Ops = std::vector<std::string_view>;
  CHECK(ops_of(make_pool(K::kMax, {2, 2}, {2, 2}, false), {7, 7, 1}) == Ops{"pool2d"});
  CHECK(ops_of(make_pool(K::kMax, {2, 2}, {2, 2}, true), {8, 8, 1}) == Ops{"pool2d"});     // no padding
  CHECK(ops_of(make_pool(K::kAvg, {3, 3}, {1, 1}, true), {7, 7, 1}) == Ops{"pool2d"});     // 1 before, 1 after
  CHECK(ops_of(make_pool(K::kMax, {2, 2}, {2, 2}, true), {7, 7, 1}) == Ops{"pool2d_pad_after"});  // 0 before, 1 after
  CHECK(ops_of(make_pool(K::kAvg, {3, 3}, {2, 2}, true), {8, 9, 1}) == Ops{"pool2d_pad_after"});  // rows 0 / 1
}

TEST_CASE("pool2d: avg with SAME padding divides by the real elements only") {
  Pool2D p = make_pool(kernels::PoolKind::kAvg, {2, 2}, {2, 2}, true);
  REQUIRE(*p.build({3, 3, 1}) == Shape{2, 2, 1});
  const Tensor x = Tensor::from({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor y;
  LayerCache cache;
  p.forward({}, {}, x, y, cache);
  // windows: {1,2,4,5} {3,6} {7,8} {9} (padding at bottom/right only)
  CHECK(y.to_vector() == std::vector<float>{3.0f, 4.5f, 7.5f, 9.0f});
}

TEST_CASE("pool2d: max with SAME padding ignores the padding (negative inputs)") {
  Pool2D p = make_pool(kernels::PoolKind::kMax, {2, 2}, {2, 2}, true);
  REQUIRE(p.build({3, 3, 1}).ok());
  const Tensor x = Tensor::from({1, 3, 3, 1}, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
  Tensor y;
  LayerCache cache;
  p.forward({}, {}, x, y, cache);
  CHECK(y.to_vector() == std::vector<float>{-1.0f, -3.0f, -7.0f, -9.0f});
  Tensor dx;
  p.backward({}, {}, {}, x, y, Tensor::from({1, 2, 2, 1}, {1, 2, 3, 4}), &dx, cache);
  CHECK(dx.to_vector() == std::vector<float>{1, 0, 2, 0, 0, 0, 3, 0, 4});
}

TEST_CASE("pool2d: gradients match finite differences") {
  struct Case {
    const char* name;
    kernels::PoolKind kind;
    Shape input;
    std::array<int64_t, 2> size, strides;
    bool same;
  };
  using K = kernels::PoolKind;
  const Case cases[] = {
      {"max valid 2", K::kMax, {4, 6, 3}, {2, 2}, {2, 2}, false},
      {"max same 3 stride 2", K::kMax, {5, 5, 2}, {3, 3}, {2, 2}, true},
      {"max valid 2x3 strides 1x2", K::kMax, {5, 7, 2}, {2, 3}, {1, 2}, false},
      {"max same 2 stride 1", K::kMax, {4, 5, 2}, {2, 2}, {1, 1}, true},
      {"avg valid 2 stride 1", K::kAvg, {4, 5, 3}, {2, 2}, {1, 1}, false},
      {"avg same 3 stride 2", K::kAvg, {5, 6, 2}, {3, 3}, {2, 2}, true},
      {"avg same 2x3 strides 2x1", K::kAvg, {5, 7, 2}, {2, 3}, {2, 1}, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Pool2D p = make_pool(c.kind, c.size, c.strides, c.same);
    REQUIRE(p.build(c.input).ok());
    Shape xs{2};
    xs.insert(xs.end(), c.input.begin(), c.input.end());
    test::GradCheckOptions opt;
    opt.eps = 1e-2;  // distinct values are 5e-2 apart: argmaxes do not move
    test::check_gradients(p, {}, test::distinct_tensor(xs, 5), opt);
  }
}

}  // namespace
}  // namespace dtrain
