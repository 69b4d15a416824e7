// The mixed-precision step guard: dynamic loss scaling for float16 (PyTorch
// GradScaler's and Keras LossScaleOptimizer's defaults) and the skip of a
// step whose gradients are not finite (float16 and bfloat16). Every replica
// and worker runs the same LossScale on the same agreed flags, so all skip
// the same steps and hold the same scale.
#pragma once

#include <cstdint>

namespace dtrain {

class LossScale {
 public:
  static constexpr double kInitial = 65536.0;     // 2^16
  static constexpr int64_t kGrowthInterval = 2000;  // finite steps in a row before doubling
  static constexpr double kGrowth = 2.0, kBackoff = 0.5, kMin = 1.0;

  // dynamic: float16 (scale starts at 2^16 and adapts); else the scale is 1
  // for good (bfloat16 and float32 need none) and only the skip remains.
  explicit LossScale(bool dynamic) : dynamic_(dynamic), scale_(dynamic ? kInitial : 1.0) {}

  bool dynamic() const { return dynamic_; }
  // The factor on d(loss): gradients come out multiplied by it.
  double scale() const { return scale_; }
  // Finite steps in a row since the last change of the scale.
  int64_t good_steps() const { return good_steps_; }

  // After a step's gradients are known (finite: everywhere, agreed by every
  // replica and worker). Returns true when the update is to be applied;
  // false when it is skipped. Dynamic: a non-finite step halves the scale
  // (never below 1) and restarts the count; kGrowthInterval finite steps in
  // a row double it.
  bool update(bool finite);

  // Checkpointed state; restore() of a scale below 1 or a negative count
  // clamps them (a hand-edited checkpoint must not break training).
  void restore(double scale, int64_t good_steps);

 private:
  bool dynamic_;
  double scale_;
  int64_t good_steps_ = 0;
};

}  // namespace dtrain
