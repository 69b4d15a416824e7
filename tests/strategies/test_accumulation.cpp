// Gradient accumulation (run.accumulation_steps): K micro-batches per replica
// shard, summed into one update, train like one step on the whole batch
// (one_device, K = 1) under one_device, towers and mirrored, on cpu and on
// debug devices (which fault on a missed transfer of the gradient sums).
// run.micro_batch_rows: micro-batches of fixed rows added in tree_sum's
// grouping give one_device's bits under towers and mirrored.
#include <doctest.h>
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "equivalence_util.hpp"

namespace dtrain::testing {
namespace {

constexpr int kSteps = 10;
constexpr double kTol = 1e-5;

JobSpec accumulating(JobSpec job, int64_t k) {
  job.run.accumulation_steps = k;
  return job;
}

// Trains `layers` with K = k under each (type, devices) and compares with
// one_device at K = 1 on the same batches of `batch` rows.
void check_accumulation(const char* layers, int64_t batch, int64_t k,
                        const std::vector<std::pair<std::string, int>>& runs, const std::string& device_kind = "cpu") {
  const JobSpec ref_job = equivalence_job(layers, kSgdMomentum, "one_device", 1, "mean");
  std::vector<Batch> batches = take_batches(ref_job, batch, kSteps + 1);
  const Batch probe = batches.back();
  batches.pop_back();
  const TrainRun ref = train_run(ref_job, batches, probe);
  CHECK(compare_states(ref.state, ref.initial).worst > 1e-2);
  for (const auto& entry : runs) {
    const auto& type = entry.first;
    const int n = entry.second;
    INFO(fmt::format("{}({} x {}) batch {} accumulation_steps {}", type, n, device_kind, batch, k));
    const TrainRun run =
        train_run(accumulating(equivalence_job(layers, kSgdMomentum, type, n, "mean", device_kind), k), batches, probe);
    const StateDiff d = compare_states(run.state, ref.state);
    REQUIRE(d.names_match);
    CHECK_MESSAGE(d.worst < kTol, fmt::format("worst tensor {}: relative difference {:.3g}", d.worst_name, d.worst));
    const OutputDiff o = compare_outputs(run.outputs, ref.outputs);
    CHECK(o.examples_match);
    CHECK_MESSAGE(o.loss < kTol, fmt::format("loss sums differ by {:.3g}", o.loss));
    CHECK_MESSAGE(o.metrics < kTol, fmt::format("metric states differ by {:.3g}", o.metrics));
  }
}

TEST_CASE("accumulation: 4 micro-batches equal one step on the batch (MLP and CNN with dropout)") {
  const std::vector<std::pair<std::string, int>> runs = {{"one_device", 1}, {"towers", 2}, {"mirrored", 2}};
  check_accumulation(kMlpLayers, 16, 4, runs);
  check_accumulation(kCnnLayers, 16, 4, runs);
  check_accumulation(kResidualLayers, 24, 3, {{"one_device", 1}, {"mirrored", 2}});
}

TEST_CASE("accumulation: a shard smaller than the micro-batches (a final short batch) still equals one step") {
  // 6 rows on 2 replicas: shards of 3 rows run as 3 micro-batches of one row.
  check_accumulation(kMlpLayers, 6, 4, {{"one_device", 1}, {"mirrored", 2}, {"towers", 2}});
}

TEST_CASE("accumulation: on debug devices") {
  check_accumulation(kCnnLayers, 12, 3, {{"one_device", 1}, {"towers", 2}, {"mirrored", 2}}, "debug");
}

TEST_CASE("accumulation: K separate steps on the micro-batches differ from one update (the comparison can fail)") {
  const JobSpec ref_job = equivalence_job(kMlpLayers, kSgdMomentum, "one_device", 1, "mean");
  const std::vector<Batch> batches = take_batches(ref_job, 16, 2);
  const Batch probe = batches.back();
  const TrainRun one = train_run(ref_job, {batches[0]}, probe);
  const TrainRun acc = train_run(accumulating(ref_job, 4), {batches[0]}, probe);
  CHECK(compare_states(acc.state, one.state).worst < kTol);
  // The same rows as 4 batches of 4 rows, one update each: far from one step.
  std::vector<Batch> quarters;
  for (int64_t q = 0; q < 4; ++q) {
    Batch b;
    b.features = batches[0].features.rows(4 * q, 4 * q + 4).clone();
    b.labels = batches[0].labels.rows(4 * q, 4 * q + 4).clone();
    quarters.push_back(std::move(b));
  }
  const TrainRun separate = train_run(ref_job, quarters, probe, 0.25);
  CHECK(compare_states(separate.state, one.state).worst > 1e-3);
}

JobSpec micro_batches_of(JobSpec job, int64_t rows) {
  job.run.micro_batch_rows = rows;
  return job;
}

// Trains `layers` with micro_batch_rows `rows` under one_device and each
// (type, devices) on the same batches of `batch` rows: every variable and
// slot must carry the same bits, and the loss sums agree.
void check_same_bits(const char* layers, int64_t batch, int64_t rows,
                     const std::vector<std::pair<std::string, int>>& runs, const std::string& device_kind = "cpu") {
  const JobSpec ref_job = micro_batches_of(equivalence_job(layers, kAdam, "one_device", 1, "mean"), rows);
  std::vector<Batch> batches = take_batches(ref_job, batch, kSteps + 1);
  const Batch probe = batches.back();
  batches.pop_back();
  const TrainRun ref = train_run(ref_job, batches, probe);
  CHECK(compare_states(ref.state, ref.initial).worst > 1e-2);
  for (const auto& entry : runs) {
    const auto& type = entry.first;
    const int n = entry.second;
    INFO(fmt::format("{}({} x {}) batch {} micro_batch_rows {}", type, n, device_kind, batch, rows));
    const TrainRun run = train_run(
        micro_batches_of(equivalence_job(layers, kAdam, type, n, "mean", device_kind), rows), batches, probe);
    const StateDiff d = compare_states(run.state, ref.state);
    REQUIRE(d.names_match);
    CHECK_MESSAGE(d.worst == 0, fmt::format("worst tensor {}: relative difference {:.3g}", d.worst_name, d.worst));
    const OutputDiff o = compare_outputs(run.outputs, ref.outputs);
    CHECK(o.examples_match);
    CHECK_MESSAGE(o.loss < 1e-12, fmt::format("loss sums differ by {:.3g}", o.loss));
    // Prediction is forward on the whole probe batch under one_device and on
    // shards elsewhere: oneDNN's AVX2 kernels round a row differently with
    // the batch's size (not the same computation, unlike the micro-batches).
    CHECK(rel_diff(run.predictions, ref.predictions) < 1e-6);
  }
}

TEST_CASE("micro_batch_rows: towers and mirrored give one_device's bits (MLP, CNN and a graph, with dropout)") {
  // 32 rows in micro-batches of 4: one_device adds 8, each of 2 replicas 4,
  // each of 4 replicas 2; then the replicas' sums in the same tree.
  const std::vector<std::pair<std::string, int>> runs = {{"towers", 2}, {"mirrored", 2}, {"mirrored", 4}};
  check_same_bits(kMlpLayers, 32, 4, runs);
  check_same_bits(kCnnLayers, 32, 4, runs);
  check_same_bits(kResidualLayers, 32, 4, {{"mirrored", 2}, {"towers", 4}});
}

TEST_CASE("micro_batch_rows: a count that is no power of two (one_device's 6 micro-batches, 3 or 6 replicas)") {
  // one_device adds its 6 micro-batches with the binary counter; 3 replicas
  // of 2 and 6 replicas of 1 add theirs with tree_sum over the replicas.
  check_same_bits(kCnnLayers, 24, 4, {{"mirrored", 3}, {"towers", 6}});
}

TEST_CASE("micro_batch_rows: on debug devices") {
  check_same_bits(kCnnLayers, 16, 4, {{"towers", 2}, {"mirrored", 2}}, "debug");
}

TEST_CASE("micro_batch_rows: without it, towers' and one_device's sums are grouped differently (the check can fail)") {
  const JobSpec ref_job = equivalence_job(kCnnLayers, kAdam, "one_device", 1, "mean");
  std::vector<Batch> batches = take_batches(ref_job, 32, kSteps + 1);
  const Batch probe = batches.back();
  batches.pop_back();
  const TrainRun ref = train_run(ref_job, batches, probe);
  const TrainRun towers = train_run(equivalence_job(kCnnLayers, kAdam, "towers", 2, "mean"), batches, probe);
  const double worst = compare_states(towers.state, ref.state).worst;
  CHECK(worst > 0);
  CHECK(worst < kTol);
}

}  // namespace
}  // namespace dtrain::testing
