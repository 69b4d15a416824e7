// Conv2D layer: build errors and shapes (TF SAME/VALID), gradients for
// padding, strides, dilation and non-square kernels.
#include <doctest.h>

#include "engine/layers/conv2d.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

Conv2D make_conv(int64_t filters, std::array<int64_t, 2> kernel, std::array<int64_t, 2> strides = {1, 1},
                 std::array<int64_t, 2> dilation = {1, 1}, bool same = false, bool use_bias = true) {
  Conv2dOptions o;
  o.filters = filters;
  o.kernel = kernel;
  o.strides = strides;
  o.dilation = dilation;
  o.same = same;
  o.use_bias = use_bias;
  return Conv2D(o);
}

TEST_CASE("conv2d: build rejects a flat input with the exact message") {
  Conv2D c = make_conv(4, {3, 3});
  auto r = c.build({784});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kConfig);
  CHECK(r.error().message ==
        "conv2d expects an image input (height, width, channels); got shape [784]; "
        "add {type: reshape, target_shape: [height, width, channels]} before it");
}

TEST_CASE("conv2d: build rejects an empty output") {
  Conv2D c = make_conv(4, {3, 3}, {1, 1}, {2, 2});
  auto r = c.build({4, 4, 1});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "conv2d output would be empty: a 3x3 kernel with dilation [2, 2] and padding valid does not fit "
        "input [4, 4, 1]; use padding: same, a smaller kernel or a larger input");
  Conv2D same = make_conv(4, {3, 3}, {1, 1}, {2, 2}, true);
  CHECK(*same.build({4, 4, 1}) == Shape{4, 4, 4});
}

TEST_CASE("conv2d: a dilated convolution is its own op for the support table") {
  using Ops = std::vector<std::string_view>;
  CHECK(make_conv(4, {3, 3}).ops() == Ops{"conv2d", "activation"});
  CHECK(make_conv(4, {3, 3}, {2, 2}).ops() == Ops{"conv2d", "activation"});
  CHECK(make_conv(4, {3, 3}, {1, 1}, {2, 2}).ops() == Ops{"conv2d_dilated", "activation"});
  CHECK(make_conv(4, {3, 3}, {1, 1}, {1, 3}).ops() == Ops{"conv2d_dilated", "activation"});
}

TEST_CASE("conv2d: output shapes follow TensorFlow") {
  CHECK(*make_conv(8, {3, 3}).build({28, 28, 1}) == Shape{26, 26, 8});
  CHECK(*make_conv(8, {3, 3}, {1, 1}, {1, 1}, true).build({28, 28, 1}) == Shape{28, 28, 8});
  CHECK(*make_conv(8, {3, 3}, {2, 2}, {1, 1}, true).build({7, 8, 3}) == Shape{4, 4, 8});
  CHECK(*make_conv(8, {3, 3}, {2, 2}).build({7, 8, 3}) == Shape{3, 3, 8});
  CHECK(*make_conv(2, {3, 5}, {1, 1}, {2, 1}).build({10, 10, 1}) == Shape{6, 6, 2});
  Conv2D c = make_conv(5, {2, 3});
  REQUIRE(c.build({6, 6, 3}).ok());
  const auto p = c.params();
  REQUIRE(p.size() == 2);
  CHECK(p[0].shape == Shape{2, 3, 3, 5});
  CHECK(p[1].shape == Shape{5});
}

TEST_CASE("conv2d: gradients match finite differences") {
  struct Case {
    const char* name;
    Shape input;
    int64_t filters;
    std::array<int64_t, 2> kernel, strides, dilation;
    bool same, use_bias;
  };
  const Case cases[] = {
      {"valid 3x3", {5, 5, 2}, 3, {3, 3}, {1, 1}, {1, 1}, false, true},
      {"same 3x3", {5, 6, 2}, 2, {3, 3}, {1, 1}, {1, 1}, true, true},
      {"same 3x2 stride 2", {6, 7, 2}, 3, {3, 2}, {2, 2}, {1, 1}, true, true},
      {"valid stride 2", {7, 7, 1}, 2, {3, 3}, {2, 2}, {1, 1}, false, true},
      {"same dilation 2", {7, 6, 2}, 2, {3, 3}, {1, 1}, {2, 2}, true, true},
      {"valid 2x3 dilation 2 no bias", {6, 8, 2}, 2, {2, 3}, {1, 1}, {2, 2}, false, false},
      {"same 4x4 stride 3 (asymmetric pad)", {7, 8, 1}, 2, {4, 4}, {3, 3}, {1, 1}, true, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Conv2D conv = make_conv(c.filters, c.kernel, c.strides, c.dilation, c.same, c.use_bias);
    REQUIRE(conv.build(c.input).ok());
    Shape xs{2};
    xs.insert(xs.end(), c.input.begin(), c.input.end());
    test::check_gradients(conv, test::make_params(conv, 21), test::random_tensor(xs, 7));
  }
}

TEST_CASE("conv2d: a batch computed in two halves equals the whole") {
  Conv2D conv = make_conv(3, {3, 3}, {2, 2}, {1, 1}, true);
  REQUIRE(conv.build({6, 6, 2}).ok());
  auto params = test::make_params(conv, 2);
  const Tensor x = test::random_tensor({4, 6, 6, 2}, 3);
  Tensor y, y0, y1;
  LayerCache cache;
  conv.forward({}, params, x, y, cache);
  conv.forward({}, params, x.rows(0, 1), y0, cache);
  conv.forward({}, params, x.rows(1, 4), y1, cache);
  test::check_close(y0, y.rows(0, 1).clone(), 1e-6, "rows 0-1");
  test::check_close(y1, y.rows(1, 4).clone(), 1e-6, "rows 1-4");
}

}  // namespace
}  // namespace dtrain
