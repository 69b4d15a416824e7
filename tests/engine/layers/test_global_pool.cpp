// Global pooling: shapes and build errors, forward values, the max gradient's
// tie rule, and the average gradient spread.
#include <doctest.h>

#include "engine/layers/global_pool.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

TEST_CASE("global pools: types, output shapes and no params") {
  GlobalPool avg(GlobalPoolKind::kAvg2d), max(GlobalPoolKind::kMax2d), avg1(GlobalPoolKind::kAvg1d);
  CHECK(avg.type() == "global_avg_pool2d");
  CHECK(max.type() == "global_max_pool2d");
  CHECK(avg1.type() == "global_avg_pool1d");
  CHECK(*avg.build({4, 5, 3}) == Shape{3});
  CHECK(*max.build({1, 1, 7}) == Shape{7});
  CHECK(*avg1.build({9, 2}) == Shape{2});
  CHECK(avg.params().empty());
  CHECK(avg.ops() == std::vector<std::string_view>{"global_pool"});
}

TEST_CASE("global pools: build rejects other ranks with the exact message") {
  CHECK(GlobalPool(GlobalPoolKind::kMax2d).build({784}).error().message ==
        "global_max_pool2d expects an image input (height, width, channels); got shape [784]; "
        "add {type: reshape, target_shape: [height, width, channels]} before it");
  CHECK(GlobalPool(GlobalPoolKind::kAvg1d).build({4, 4, 3}).error().message ==
        "global_avg_pool1d expects a sequence input (steps, channels); got shape [4, 4, 3]; "
        "add {type: reshape, target_shape: [steps, channels]} before it");
}

TEST_CASE("global pools: forward means and maxima per example and channel") {
  // (2, 2, 2, 2): example 0 channel 0 = {1, 3, 5, 7}, channel 1 = {-1, -2, -3, -4}.
  const Tensor x = Tensor::from({2, 2, 2, 2}, {1, -1, 3, -2, 5, -3, 7, -4,  //
                                               0, 10, 2, 10, 4, 10, 6, 12});
  GlobalPool avg(GlobalPoolKind::kAvg2d), max(GlobalPoolKind::kMax2d);
  REQUIRE(avg.build({2, 2, 2}).ok());
  REQUIRE(max.build({2, 2, 2}).ok());
  Tensor y;
  LayerCache cache;
  avg.forward({}, {}, x, y, cache);
  CHECK(y.shape() == Shape{2, 2});
  CHECK(y.to_vector() == std::vector<float>{4, -2.5f, 3, 10.5f});
  max.forward({}, {}, x, y, cache);
  CHECK(y.to_vector() == std::vector<float>{7, -1, 6, 12});
  GlobalPool avg1(GlobalPoolKind::kAvg1d);
  REQUIRE(avg1.build({4, 2}).ok());
  avg1.forward({}, {}, x.reshaped({2, 4, 2}), y, cache);
  CHECK(y.to_vector() == std::vector<float>{4, -2.5f, 3, 10.5f});
}

TEST_CASE("global_max_pool2d: the gradient goes to the first maximum on ties") {
  GlobalPool max(GlobalPoolKind::kMax2d);
  REQUIRE(max.build({2, 2, 1}).ok());
  // Positions 1 and 3 tie at 5.
  const Tensor x = Tensor::from({1, 2, 2, 1}, {2, 5, -1, 5});
  Tensor y, dx(Shape{1, 2, 2, 1}, 1e6f);
  LayerCache cache;
  max.forward({}, {}, x, y, cache);
  max.backward({}, {}, {}, x, y, Tensor::from({1, 1}, {3}), &dx, cache);
  CHECK(dx.to_vector() == std::vector<float>{0, 3, 0, 0});
}

TEST_CASE("global_avg_pool2d: the gradient is spread evenly") {
  GlobalPool avg(GlobalPoolKind::kAvg2d);
  REQUIRE(avg.build({2, 2, 2}).ok());
  const Tensor x = test::random_tensor({1, 2, 2, 2}, 3);
  Tensor y, dx;
  LayerCache cache;
  avg.forward({}, {}, x, y, cache);
  avg.backward({}, {}, {}, x, y, Tensor::from({1, 2}, {4, -8}), &dx, cache);
  CHECK(dx.to_vector() == std::vector<float>{1, -2, 1, -2, 1, -2, 1, -2});
}

}  // namespace
}  // namespace dtrain
