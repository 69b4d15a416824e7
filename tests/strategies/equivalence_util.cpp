// Helpers for the strategy-equivalence tests (see equivalence_util.hpp).
#include "equivalence_util.hpp"

#include <doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "config_schema/job_loader.hpp"
#include "datasets/pipeline.hpp"
#include "engine/optim/optimizer.hpp"

namespace dtrain::testing {

const char* const kMlpLayers =
    "    - {type: flatten}\n"
    "    - {type: dense, units: 32, activation: relu}\n"
    "    - {type: dropout, rate: 0.25}\n"
    "    - {type: dense, units: 10}\n";
const char* const kCnnLayers =
    "    - {type: conv2d, filters: 8, kernel: 3, padding: same, activation: relu}\n"
    "    - {type: max_pool2d, size: 2}\n"
    "    - {type: dropout, rate: 0.25}\n"
    "    - {type: flatten}\n"
    "    - {type: dense, units: 10}\n";
const char* const kResidualLayers =
    "    - {name: c1, type: conv2d, filters: 4, kernel: 3, padding: same, activation: relu}\n"
    "    - {name: c2, type: conv2d, filters: 4, kernel: 3, padding: same}\n"
    "    - {name: r, type: add, inputs: [c1, c2], activation: relu}\n"
    "    - {name: p, type: max_pool2d, size: 2}\n"
    "    - {name: f, type: flatten}\n"
    "    - {name: skip, type: flatten, inputs: input}\n"
    "    - {name: cat, type: concatenate, inputs: [f, skip]}\n"
    "    - {type: dropout, rate: 0.25}\n"
    "    - {type: dense, units: 10}\n";
const char* const kSyncBnLayers =
    "    - {type: conv2d, filters: 4, kernel: 3, padding: same, use_bias: false}\n"
    "    - {name: bn, type: batch_norm, sync: true, momentum: 0.9}\n"
    "    - {type: activation, activation: relu}\n"
    "    - {name: skip, type: conv2d, filters: 4, kernel: 1, use_bias: false, inputs: input}\n"
    "    - {name: bn2, type: batch_norm, sync: true}\n"
    "    - {type: add, inputs: [activation, bn2], activation: relu}\n"
    "    - {type: flatten}\n"
    "    - {type: dense, units: 10}\n";
const char* const kSgdMomentum = "optimizer: {type: sgd, learning_rate: 0.05, momentum: 0.9}\n";
const char* const kAdam = "optimizer: {type: adam, learning_rate: 0.01}\n";
const char* const kPlainSgd = "optimizer: {type: sgd, learning_rate: 0.05}\n";

JobSpec equivalence_job(const char* layers, const char* optimizer, const std::string& type, int devices,
                        const std::string& reduction, const std::string& device_kind, const std::string& compute) {
  std::vector<std::string> names;
  for (int d = 0; d < devices; ++d) names.push_back(fmt::format("{}:{}", device_kind, d));
  const std::string text = fmt::format(
      "model:\n"
      "  input: {{shape: [8, 8, 1]}}\n"
      "  layers:\n{}"
      "  loss: sparse_softmax_cross_entropy\n"
      "  metrics: [accuracy, mean_loss]\n"
      "{}"
      "strategy: {{type: {}, devices: [{}], loss_reduction: {}}}\n"
      "data:\n"
      "  train:\n"
      "    format: synthetic\n"
      "    synthetic: {{num_examples: 500, shape: [8, 8, 1], num_classes: 10, seed: 11}}\n"
      "    batch_size: 12\n"
      "    prefetch: 0\n"
      "precision: {{compute: {}}}\n"
      "run: {{seed: 1234}}\n",
      layers, optimizer, type, fmt::join(names, ", "), reduction, compute);
  LoadOptions options;
  options.check_files = false;
  Result<JobSpec> job = load_job_from_string(text, "equivalence.yaml", "/nonexistent", options);
  INFO(text);
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? std::string() : job.error().message));
  return std::move(*job);
}

std::vector<Batch> take_batches(const JobSpec& job, int64_t global_batch, int count) {
  REQUIRE(job.data.train.has_value());
  auto input = make_input(*job.data.train, InputOptions{job.base_dir, global_batch, job.run.seed, "data.train"});
  REQUIRE_MESSAGE(input.ok(), (input.ok() ? std::string() : input.error().message));
  std::vector<Batch> out;
  for (int i = 0; i < count; ++i) {
    auto next = (*input)->next();
    REQUIRE(next.ok());
    REQUIRE(next->has_value());
    const Batch& b = **next;
    REQUIRE(b.size() == global_batch);
    out.push_back(Batch{b.features.clone(), b.labels.clone(), b.ids});
  }
  return out;
}

std::unique_ptr<StrategyUnderTest> build_strategy(const JobSpec& job) {
  auto out = std::make_unique<StrategyUnderTest>();
  auto program = make_program(job);
  REQUIRE_MESSAGE(program.ok(), (program.ok() ? std::string() : program.error().message));
  out->program = std::move(*program);
  auto strategy = make_strategy(job, out->program);
  REQUIRE_MESSAGE(strategy.ok(), (strategy.ok() ? std::string() : strategy.error().message));
  out->strategy = std::move(*strategy);
  const Status created = out->strategy->create_variables();
  REQUIRE_MESSAGE(created.ok(), (created.ok() ? std::string() : created.error().message));
  return out;
}

namespace {

NamedTensors deep_copy(const NamedTensors& state) {
  NamedTensors out;
  for (const auto& [name, t] : state) out.emplace_back(name, t.clone());
  return out;
}

}  // namespace

TrainRun train_run(const JobSpec& job, const std::vector<Batch>& batches, const Batch& probe, double lr_factor) {
  auto sut = build_strategy(job);
  TrainRun run;
  run.initial = deep_copy(sut->strategy->logical_state());
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto step = static_cast<int64_t>(i);
    const auto lr = static_cast<float>(learning_rate_at(job.optimizer, step) * lr_factor);
    run.outputs.push_back(sut->strategy->train_step(batches[i], step, lr));
    REQUIRE(std::isfinite(run.outputs.back().loss_sum));
  }
  run.state = deep_copy(sut->strategy->logical_state());
  run.predictions = sut->strategy->predict_step(probe).clone();
  return run;
}

double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
}

double rel_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.numel() == b.numel());
  const std::vector<float> av = a.to_vector(), bv = b.to_vector();
  return rel_diff(std::vector<double>(av.begin(), av.end()), std::vector<double>(bv.begin(), bv.end()));
}

StateDiff compare_states(const NamedTensors& a, const NamedTensors& ref) {
  StateDiff d;
  if (a.size() != ref.size()) {
    d.names_match = false;
    return d;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != ref[i].first || a[i].second.shape() != ref[i].second.shape()) {
      d.names_match = false;
      return d;
    }
    const double r = rel_diff(a[i].second, ref[i].second);
    if (std::isnan(d.worst)) continue;
    if (!(r <= d.worst)) {  // a NaN difference is the worst and stays so
      d.worst = r;
      d.worst_name = a[i].first;
    }
  }
  return d;
}

OutputDiff compare_outputs(const std::vector<StepOutput>& a, const std::vector<StepOutput>& ref) {
  OutputDiff d;
  REQUIRE(a.size() == ref.size());
  for (size_t i = 0; i < a.size(); ++i) {
    d.loss = std::max(d.loss, rel_diff(std::vector<double>{a[i].loss_sum}, std::vector<double>{ref[i].loss_sum}));
    if (a[i].metric_state.size() != ref[i].metric_state.size()) {
      d.metrics = std::numeric_limits<double>::infinity();
    } else {
      d.metrics = std::max(d.metrics, rel_diff(a[i].metric_state, ref[i].metric_state));
    }
    d.examples_match = d.examples_match && a[i].examples == ref[i].examples;
  }
  return d;
}

}  // namespace dtrain::testing
