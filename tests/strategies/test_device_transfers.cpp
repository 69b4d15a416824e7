// What a training step moves between the host and its devices, counted on
// the debug device: the replica's shard of the batch in (features, labels),
// the loss sum and the logits for the metrics out, and nothing else; the
// strategies' own copies are what their contract says.
#include <doctest.h>
#include <fmt/format.h>

#include "engine/optim/optimizer.hpp"
#include "engine/storage.hpp"
#include "equivalence_util.hpp"

namespace dtrain::testing {
namespace {

CopyCounts diff(const CopyCounts& a, const CopyCounts& b) {
  return {a.host_to_device - b.host_to_device, a.device_to_host - b.device_to_host,
          a.device_to_device - b.device_to_device};
}

CopyCounts one_step(const std::string& type, int devices) {
  const JobSpec job = equivalence_job(kMlpLayers, kSgdMomentum, type, devices, "mean", "debug");
  const std::vector<Batch> batches = take_batches(job, 12, 2);
  auto sut = build_strategy(job);
  sut->strategy->train_step(batches[0], 0, 0.05f);  // warm up (buffers)
  const CopyCounts before = copy_counts();
  sut->strategy->train_step(batches[1], 1, 0.05f);
  return diff(copy_counts(), before);
}

// kMlpLayers has 4 trainable variables (two dense kernels and biases).
constexpr int64_t kVars = 4;

TEST_CASE("transfers: one_device on debug:0 copies the batch in and the loss and logits out, per step") {
  const CopyCounts c = one_step("one_device", 1);
  CHECK(c.host_to_device == 2);  // features, labels
  CHECK(c.device_to_host == 2);  // loss sum, logits for the metrics
  CHECK(c.device_to_device == 0);
}

TEST_CASE("transfers: mirrored over debug:0..2 adds one device copy per variable per extra replica") {
  const CopyCounts c = one_step("mirrored", 3);
  CHECK(c.host_to_device == 3 * 2);
  CHECK(c.device_to_host == 3 * 2);
  // The all-reduce sums into replica 0 in place, then publishes the sum to
  // the two other replicas.
  CHECK(c.device_to_device == 2 * kVars);
}

TEST_CASE("transfers: towers over debug:0..1 keeps the variables on the host and copies them to each tower") {
  const CopyCounts c = one_step("towers", 2);
  // Per tower: the batch shard (2) and every variable refreshed before the
  // step and after the update (2 * kVars); the summed gradients come back to
  // the host once.
  CHECK(c.host_to_device == 2 * (2 + 2 * kVars));
  CHECK(c.device_to_host == 2 * 2 + kVars);
  CHECK(c.device_to_device == 0);
}

TEST_CASE("transfers: evaluation on debug:0 copies the batch in and the loss and logits out") {
  const JobSpec job = equivalence_job(kMlpLayers, kSgdMomentum, "one_device", 1, "mean", "debug");
  const Batch b = take_batches(job, 10, 1).front();
  auto sut = build_strategy(job);
  const CopyCounts before = copy_counts();
  sut->strategy->eval_step(b);
  const CopyCounts c = diff(copy_counts(), before);
  CHECK(c.host_to_device == 2);
  CHECK(c.device_to_host == 2);
}

}  // namespace
}  // namespace dtrain::testing
