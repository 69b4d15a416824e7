// Mixed precision's step guard in every single-process strategy: a step
// whose gradients are not finite is skipped by every replica (the reduced
// gradient is non-finite everywhere when any replica's is), the next finite
// step applies; float32 has no guard (its NaN guard is the estimator's).
#include <doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "equivalence_util.hpp"

namespace dtrain::testing {
namespace {

// A deep copy (logical_state() may share storage with the live variables).
NamedTensors snapshot(Strategy& s) {
  NamedTensors out;
  for (const auto& [name, t] : s.logical_state()) out.emplace_back(name, t.clone());
  return out;
}

bool all_finite(const NamedTensors& state) {
  for (const auto& [name, t] : state) {
    for (float v : t.to_vector()) {
      if (!std::isfinite(v)) return false;
    }
  }
  return true;
}

TEST_CASE("mixed precision: a non-finite step is skipped by every replica, then training goes on") {
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {"one_device", 1, "cpu"}, {"towers", 2, "cpu"}, {"mirrored", 3, "cpu"}, {"mirrored", 2, "debug"}};
  for (const auto& c : cases) {
    const std::string& type = std::get<0>(c);
    const int n = std::get<1>(c);
    const std::string& kind = std::get<2>(c);
    INFO(fmt::format("{}({} x {})", type, n, kind));
    const JobSpec job = equivalence_job(kMlpLayers, kSgdMomentum, type, n, "mean", kind, "bfloat16");
    std::vector<Batch> batches = take_batches(job, 12, 2);
    // One example of the last replica's shard overflows: its gradient is
    // infinite or NaN, and so is the sum every replica applies.
    batches[0].features[11 * 64 + 5] = std::numeric_limits<float>::infinity();
    auto sut = build_strategy(job);
    const NamedTensors before = snapshot(*sut->strategy);
    sut->strategy->train_step(batches[0], 0, 0.05f);
    const NamedTensors after_bad = snapshot(*sut->strategy);
    CHECK(compare_states(after_bad, before).worst == 0.0);  // nothing moved, momentum included
    // Every replica kept its copy: predictions equal the untouched model's.
    const Tensor pred = sut->strategy->predict_step(batches[1]);
    auto fresh = build_strategy(job);
    CHECK(rel_diff(pred, fresh->strategy->predict_step(batches[1])) == 0.0);
    sut->strategy->train_step(batches[1], 1, 0.05f);
    const NamedTensors after_good = snapshot(*sut->strategy);
    CHECK(all_finite(after_good));
    CHECK(compare_states(after_good, before).worst > 1e-4);
  }
}

TEST_CASE("mixed precision: without it the same step poisons the variables (the control)") {
  const JobSpec job = equivalence_job(kMlpLayers, kSgdMomentum, "mirrored", 2, "mean", "cpu", "float32");
  std::vector<Batch> batches = take_batches(job, 12, 1);
  batches[0].features[11 * 64 + 5] = std::numeric_limits<float>::infinity();
  auto sut = build_strategy(job);
  sut->strategy->train_step(batches[0], 0, 0.05f);
  CHECK_FALSE(all_finite(sut->strategy->logical_state()));
}

}  // namespace
}  // namespace dtrain::testing
