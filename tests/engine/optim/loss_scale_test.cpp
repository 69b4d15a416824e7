// The mixed-precision step guard's schedule: PyTorch GradScaler's and Keras
// LossScaleOptimizer's defaults (2^16, x2 after 2000 finite steps, x0.5 and
// the step skipped on a non-finite one, never below 1).
#include <doctest.h>

#include <cmath>

#include "engine/optim/loss_scale.hpp"

namespace dtrain {
namespace {

TEST_CASE("loss scale: float16's dynamic scale grows after 2000 finite steps and halves on a non-finite one") {
  LossScale s(true);
  CHECK(s.scale() == 65536.0);
  for (int i = 0; i < 1999; ++i) CHECK(s.update(true));
  CHECK(s.scale() == 65536.0);
  CHECK(s.good_steps() == 1999);
  CHECK(s.update(true));
  CHECK(s.scale() == 131072.0);
  CHECK(s.good_steps() == 0);
  CHECK_FALSE(s.update(false));  // skipped
  CHECK(s.scale() == 65536.0);
  for (int i = 0; i < 1000; ++i) s.update(true);
  CHECK_FALSE(s.update(false));  // the count restarts
  CHECK(s.good_steps() == 0);
  CHECK(s.scale() == 32768.0);
  for (int i = 0; i < 40; ++i) s.update(false);
  CHECK(s.scale() == 1.0);  // never below 1
}

TEST_CASE("loss scale: bfloat16 keeps the scale at 1 and only skips") {
  LossScale s(false);
  CHECK(s.scale() == 1.0);
  for (int i = 0; i < 5000; ++i) CHECK(s.update(true));
  CHECK(s.scale() == 1.0);
  CHECK_FALSE(s.update(false));
  CHECK(s.scale() == 1.0);
  s.restore(1024.0, 7);
  CHECK(s.scale() == 1.0);
}

TEST_CASE("loss scale: restore takes a checkpoint's state and clamps nonsense") {
  LossScale s(true);
  s.restore(512.0, 1999);
  CHECK(s.scale() == 512.0);
  CHECK(s.update(true));
  CHECK(s.scale() == 1024.0);
  s.restore(0.25, -3);
  CHECK(s.scale() == 1.0);
  CHECK(s.good_steps() == 0);
  s.restore(std::nan(""), 0);
  CHECK(s.scale() == 65536.0);
}

}  // namespace
}  // namespace dtrain
