// LossScale: the dynamic loss scale's schedule.
#include "engine/optim/loss_scale.hpp"

#include <algorithm>
#include <cmath>

namespace dtrain {

bool LossScale::update(bool finite) {
  if (!finite) {
    if (dynamic_) scale_ = std::max(kMin, scale_ * kBackoff);
    good_steps_ = 0;
    return false;
  }
  if (dynamic_ && ++good_steps_ >= kGrowthInterval) {
    scale_ *= kGrowth;
    good_steps_ = 0;
  }
  return true;
}

void LossScale::restore(double scale, int64_t good_steps) {
  scale_ = dynamic_ ? (std::isfinite(scale) ? std::max(kMin, scale) : kInitial) : 1.0;
  good_steps_ = dynamic_ ? std::max<int64_t>(0, good_steps) : 0;
}

}  // namespace dtrain
