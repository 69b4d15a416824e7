// Sequence outputs under the strategies: a model with logits (B, T, C) and
// labels (B, T) (synthetic_sequence reverse) trains under towers(N) and
// mirrored(N) like one_device; the loss is the mean over the batch and every
// position of every example whatever the split (each replica sums its
// examples' per-position means, the sum is divided by the global batch), both
// in the loss reported and in the gradient applied.
#include <doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "config_schema/job_loader.hpp"
#include "datasets/pipeline.hpp"
#include "engine/optim/optimizer.hpp"
#include "equivalence_util.hpp"

namespace dtrain::testing {
namespace {

constexpr int64_t kT = 6, kC = 5;

// Input [6] int32 token ids -> embedding (6, 3) -> (6, 1, 3) -> conv2d over 3
// neighbours -> conv2d 1x1 to 5 classes -> logits (6, 5); data: synthetic_sequence reverse, labels (6).
JobSpec sequence_job(const std::string& type, int devices, bool dropout, const char* optimizer) {
  std::vector<std::string> names;
  for (int d = 0; d < devices; ++d) names.push_back(fmt::format("cpu:{}", d));
  const std::string text = fmt::format(
      "model:\n"
      "  input: {{shape: [{t}], dtype: int32}}\n"
      "  layers:\n"
      "    - {{type: embedding, input_dim: {c}, output_dim: 3}}\n"
      "    - {{type: reshape, target_shape: [{t}, 1, 3]}}\n"
      "    - {{type: conv2d, filters: 8, kernel: [3, 1], padding: same, activation: relu}}\n"
      "{drop}"
      "    - {{type: conv2d, filters: {c}, kernel: 1}}\n"
      "    - {{type: reshape, target_shape: [{t}, {c}]}}\n"
      "  loss: sparse_softmax_cross_entropy\n"
      "  metrics: [accuracy, mean_loss]\n"
      "{opt}"
      "strategy: {{type: {type}, devices: [{devices}], loss_reduction: mean}}\n"
      "data:\n"
      "  train:\n"
      "    format: synthetic_sequence\n"
      "    synthetic_sequence: {{task: reverse, vocab_size: {c}, sequence_length: {t}, num_examples: 400, seed: 3}}\n"
      "    batch_size: 12\n"
      "    prefetch: 0\n"
      "run: {{seed: 99}}\n",
      fmt::arg("t", kT), fmt::arg("c", kC), fmt::arg("drop", dropout ? "    - {type: dropout, rate: 0.25}\n" : ""),
      fmt::arg("opt", optimizer), fmt::arg("type", type), fmt::arg("devices", fmt::join(names, ", ")));
  LoadOptions options;
  options.check_files = false;
  Result<JobSpec> job = load_job_from_string(text, "sequence.yaml", "/nonexistent", options);
  INFO(text);
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? std::string() : job.error().message));
  return std::move(*job);
}

Tensor find_variable(const NamedTensors& state, const std::string& name) {
  for (const auto& [n, t] : state) {
    if (n == name) return t.clone();
  }
  FAIL("no " << name << " in logical_state()");
  return Tensor();
}

TEST_CASE("sequence equivalence: towers and mirrored train a (B, T, C) model like one_device") {
  for (const int64_t global_batch : {12, 10}) {
    const JobSpec ref_job = sequence_job("one_device", 1, true, kSgdMomentum);
    std::vector<Batch> batches = take_batches(ref_job, global_batch, 11);
    REQUIRE(batches[0].features.shape() == Shape{global_batch, kT});
    REQUIRE(batches[0].labels.shape() == Shape{global_batch, kT});
    const Batch probe = batches.back();
    batches.pop_back();
    const TrainRun ref = train_run(ref_job, batches, probe);
    CHECK(compare_states(ref.state, ref.initial).worst > 1e-2);
    for (const std::string type : {"towers", "mirrored"}) {
      for (const int n : {2, 3}) {
        INFO(fmt::format("{}({}) global batch {}", type, n, global_batch));
        const TrainRun run = train_run(sequence_job(type, n, true, kSgdMomentum), batches, probe);
        const StateDiff d = compare_states(run.state, ref.state);
        REQUIRE(d.names_match);
        CHECK_MESSAGE(d.worst < 1e-5, fmt::format("worst tensor {}: relative difference {:.3g}", d.worst_name, d.worst));
        const OutputDiff o = compare_outputs(run.outputs, ref.outputs);
        CHECK(o.examples_match);
        CHECK(o.loss < 1e-5);
        CHECK(o.metrics < 1e-5);
        CHECK(rel_diff(run.predictions, ref.predictions) < 1e-5);
      }
    }
  }
}

// From predict_step's probabilities p (B, T, C) at the initial variables: the
// loss sum of a step is sum_i mean_t -log p[i, t, y], the accuracy state
// counts B*T positions, and one plain-SGD step moves the output bias by
// -lr / B * sum_i mean_t (p[i, t, :] - onehot(y[i, t])).
TEST_CASE("sequence equivalence: the loss and its gradient average over the batch and every position, split or not") {
  const std::vector<std::pair<const char*, int>> strategies = {{"one_device", 1}, {"towers", 2}, {"mirrored", 2},
                                                               {"mirrored", 3}};
  for (const auto& strategy : strategies) {
    const auto& type = strategy.first;
    const int n = strategy.second;
    INFO(fmt::format("{}({})", type, n));
    const JobSpec job = sequence_job(type, n, false, kPlainSgd);
    const Batch b = take_batches(job, 10, 1).front();
    auto sut = build_strategy(job);
    const Tensor probs = sut->strategy->predict_step(b);
    REQUIRE(probs.shape() == Shape{10, kT, kC});
    double want_loss = 0;
    std::vector<double> want_step(kC, 0.0);
    const auto lr = static_cast<float>(learning_rate_at(job.optimizer, 0));
    for (int64_t i = 0; i < 10; ++i) {
      for (int64_t t = 0; t < kT; ++t) {
        const auto y = static_cast<int64_t>(b.labels[i * kT + t]);
        want_loss -= std::log(static_cast<double>(probs[(i * kT + t) * kC + y])) / kT;
        for (int64_t k = 0; k < kC; ++k) {
          const double g = probs[(i * kT + t) * kC + k] - (y == k ? 1.0 : 0.0);
          want_step[static_cast<size_t>(k)] -= lr * g / kT / 10.0;
        }
      }
    }
    const Tensor before = find_variable(sut->strategy->logical_state(), "conv2d_1/bias");
    const StepOutput out = sut->strategy->train_step(b, 0, lr);
    const Tensor after = find_variable(sut->strategy->logical_state(), "conv2d_1/bias");
    CHECK(out.examples == 10);
    CHECK(out.loss_sum == doctest::Approx(want_loss).epsilon(1e-5));
    REQUIRE(out.metric_state.size() == 4);   // accuracy [correct, count], mean_loss [sum, examples]
    CHECK(out.metric_state[1] == 10 * kT);  // every position counts once
    CHECK(out.metric_state[3] == 10);
    std::vector<double> step(kC);
    for (int64_t k = 0; k < kC; ++k) step[static_cast<size_t>(k)] = double{after[k]} - double{before[k]};
    CHECK(rel_diff(step, want_step) < 1e-4);
  }
}

}  // namespace
}  // namespace dtrain::testing
