// Gradient buckets and their all-reduce overlapping backward: the bucket plan
// of the mnist_cnn sample as shipped (a small first bucket, so that the dense
// layers' gradients are all-reduced while the convolutions are still in
// backward), and the order of events in a real backward of that model: the
// cross-worker reduction of the first bucket starts before backward reaches
// the first layer.
#include <doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "config_schema/job_loader.hpp"
#include "equivalence_util.hpp"
#include "strategies/all_reduce.hpp"
#include "strategies/program.hpp"
#include "strategies/replica_step.hpp"

namespace dtrain::testing {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

JobSpec mnist_cnn_sample() {
  Result<JobSpec> job = load_job(DTRAIN_SOURCE_ROOT "/sample_configs/mnist_cnn.yaml");
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? std::string() : job.error().message));
  return std::move(*job);
}

Program program_of(const JobSpec& job) {
  Result<Program> p = make_program(job);
  REQUIRE_MESSAGE(p.ok(), (p.ok() ? std::string() : p.error().message));
  return std::move(*p);
}

// The index of the layer that owns variable v.
size_t owner(const Model& model, size_t v) {
  for (size_t l = 0; l < model.num_layers(); ++l) {
    const auto [first, count] = model.layer_variables(l);
    if (v >= first && v < first + count) return l;
  }
  FAIL("variable without a layer");
  return 0;
}

double bytes_of(const Model& model, const std::vector<size_t>& vars) {
  double b = 0;
  for (size_t v : vars) b += static_cast<double>(num_elements(model.variables()[v].shape)) * sizeof(float);
  return b;
}

// Every trainable variable once, last variable first, and each bucket listed
// after the layer that owns its lowest-numbered variable.
void check_plan_invariants(const Model& model, const GradBuckets& b) {
  std::vector<size_t> order;
  for (const auto& bucket : b.vars) {
    CHECK(!bucket.empty());
    order.insert(order.end(), bucket.begin(), bucket.end());
  }
  std::vector<size_t> want;
  for (size_t v = model.variables().size(); v-- > 0;) {
    if (model.variables()[v].trainable) want.push_back(v);
  }
  CHECK(order == want);
  REQUIRE(b.after_layer.size() == model.num_layers());
  for (size_t i = 0; i < b.vars.size(); ++i) {
    const size_t l = owner(model, b.vars[i].back());
    CHECK(std::count(b.after_layer[l].begin(), b.after_layer[l].end(), i) == 1);
  }
}

TEST_CASE("make_buckets: the mnist_cnn sample gets a small first bucket that closes after its dense layers") {
  const JobSpec job = mnist_cnn_sample();
  const Program program = program_of(job);
  const Model& model = *program.model;
  // conv2d(0) max_pool(1) conv2d(2) max_pool(3) flatten(4) dense 128(5) relu(6) dropout(7) dense 10(8).
  REQUIRE(model.num_layers() == 9);
  // The whole model (1.7 MB) fits the default 25 MiB; one bucket would be
  // ready only when backward ends.
  REQUIRE(job.strategy.bucket_mb == 25.0);
  const GradBuckets b = make_buckets(model, job.strategy.bucket_mb * kMiB);
  check_plan_invariants(model, b);
  REQUIRE(b.vars.size() == 2);
  // Bucket 0: both dense layers (the 1.6 MB kernel closes it past 1 MiB),
  // complete after dense 128's backward, while both convolutions remain.
  std::set<size_t> layers0;
  for (size_t v : b.vars[0]) layers0.insert(owner(model, v));
  CHECK(layers0 == std::set<size_t>{5, 8});
  CHECK(bytes_of(model, b.vars[0]) >= kFirstBucketBytes);
  CHECK(b.after_layer[5] == std::vector<size_t>{0});
  // Bucket 1: both convolutions, complete when backward ends.
  std::set<size_t> layers1;
  for (size_t v : b.vars[1]) layers1.insert(owner(model, v));
  CHECK(layers1 == std::set<size_t>{0, 2});
  CHECK(b.after_layer[0] == std::vector<size_t>{1});
  for (size_t l : {1, 2, 3, 4, 6, 7, 8}) CHECK(b.after_layer[l].empty());
}

TEST_CASE("make_buckets: caps below the first-bucket size, and a variable larger than its cap") {
  const Program program = program_of(mnist_cnn_sample());
  const Model& model = *program.model;
  SUBCASE("one byte: one variable per bucket") {
    const GradBuckets b = make_buckets(model, 1);
    check_plan_invariants(model, b);
    CHECK(b.vars.size() == 8);  // kernel and bias of four layers
    for (const auto& bucket : b.vars) CHECK(bucket.size() == 1);
  }
  SUBCASE("64 KiB: a bucket closes once it holds its cap") {
    const double cap = 64 * 1024;
    const GradBuckets b = make_buckets(model, cap);
    check_plan_invariants(model, b);
    for (size_t i = 0; i < b.vars.size(); ++i) {
      std::vector<size_t> all_but_last(b.vars[i].begin(), b.vars[i].end() - 1);
      CHECK(bytes_of(model, all_but_last) < cap);  // it was still open before its last variable
      if (i + 1 < b.vars.size()) CHECK(bytes_of(model, b.vars[i]) >= cap);
    }
    // dense 10 and dense 128 (5.7 KB, then its 1.6 MB kernel) | conv 64 (74 KB) | conv 32.
    CHECK(b.vars.size() == 3);
  }
}

// Waits (bounded, for a failing run) until pred() holds under mu.
template <class Pred>
bool wait_for(std::mutex& mu, std::condition_variable& cv, Pred pred) {
  std::unique_lock<std::mutex> lock(mu);
  return cv.wait_for(lock, std::chrono::seconds(60), pred);
}

TEST_CASE("InProcessAllReduce: the first bucket's cross reduction starts while backward is still running") {
  const JobSpec job = mnist_cnn_sample();
  const Program program = program_of(job);
  const GradBuckets buckets = make_buckets(*program.model, job.strategy.bucket_mb * kMiB);
  REQUIRE(buckets.vars.size() == 2);

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> events;  // guarded by mu
  auto record = [&](std::string e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(std::move(e));
    }
    cv.notify_all();
  };
  auto happened = [&](const std::string& e) { return std::find(events.begin(), events.end(), e) != events.end(); };
  std::vector<Tensor> crossed(buckets.vars.size());
  ReplicaState rs = program.model->make_replica_state(program.context_on(kHost));
  std::vector<std::vector<Tensor>> slots;
  REQUIRE(initialize_variables(program, rs.ctx.device, rs.values, slots).ok());
  // The cross-worker stage of a cluster of one worker (a sum over one worker
  // leaves the gradients as they are): it records when it starts and ends,
  // and reads the bucket's gradients, which must be final and finite.
  InProcessAllReduce reducer(buckets, [&](size_t bucket) {
    record("cross " + std::to_string(bucket) + " start");
    // The gradients are read here, on the communication thread, while
    // backward writes other layers' (host memory: cpu:0).
    double sum = 0;
    for (size_t v : buckets.vars[bucket]) {
      const Tensor& g = rs.grads[v];
      for (int64_t i = 0; i < g.numel(); ++i) sum += static_cast<double>(g[i]) * g[i];
    }
    record("cross " + std::to_string(bucket) + " end");
    return std::isfinite(sum) ? Status::Ok() : Status(data_error("a gradient is not finite"));
  });

  const std::vector<Batch> batches = take_batches(job, 16, 1);
  ReplicaState* states[] = {&rs};
  reducer.begin_step(states);
  run_replica(program, rs, batches[0], 0, 16, 0, true, 1.0f / 16, [&](size_t layer) {
    if (layer == 1) {
      // The last layer before the first convolution's backward: bucket 0 was
      // complete after dense 128; its reduction must already be under way.
      CHECK_MESSAGE(wait_for(mu, cv, [&] { return happened("cross 0 start"); }),
                    "bucket 0 was not reduced while backward ran");
    }
    record("layer " + std::to_string(layer) + " done");
    for (size_t b : buckets.after_layer[layer]) reducer.arrive(b);
  });
  // wait_bucket returns once its bucket (and every earlier one) is reduced:
  // the optimizer's turn for bucket 0 while bucket 1 may still be crossing.
  const auto waits_start = std::chrono::steady_clock::now();
  reducer.wait_bucket(0, 0);
  {
    std::lock_guard<std::mutex> lock(mu);
    CHECK(happened("cross 0 end"));
  }
  reducer.wait_bucket(1, 0);
  {
    std::lock_guard<std::mutex> lock(mu);
    CHECK(happened("cross 1 end"));
  }
  reducer.wait_all(0);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - waits_start).count();
  CHECK(!reducer.error());
  const auto at = [&](const std::string& e) { return std::find(events.begin(), events.end(), e) - events.begin(); };
  std::lock_guard<std::mutex> lock(mu);
  INFO(fmt::format("{}", fmt::join(events, ", ")));
  // Backward ran last layer first and each cross started after its bucket's layer.
  for (size_t l = 1; l < 9; ++l) {
    CHECK(at("layer " + std::to_string(l) + " done") < at("layer " + std::to_string(l - 1) + " done"));
  }
  CHECK(at("layer 5 done") < at("cross 0 start"));
  CHECK(at("cross 0 start") < at("layer 0 done"));
  CHECK(at("cross 0 end") < at("cross 1 start"));
  CHECK(at("layer 0 done") < at("cross 1 start"));
  // Exposed: the time replica 0 was blocked in the waits above, no more.
  CHECK(reducer.exposed_seconds() >= 0);
  CHECK(reducer.exposed_seconds() <= waited);
}

}  // namespace
}  // namespace dtrain::testing
