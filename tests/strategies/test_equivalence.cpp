// Strategy equivalence (DESIGN.md "Invariants"): towers(N) and mirrored(N)
// train, evaluate and predict like one_device on the same seed and global
// batch, within float32 summation-order tolerance, for either loss_reduction
// and for global batches the replicas do not divide; on cpu:N devices and on
// debug:N devices (whose memory faults on any host access outside a kernel,
// so a missed transfer in a strategy crashes these tests), against
// one_device on cpu:0.
#include <doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "engine/optim/optimizer.hpp"
#include "equivalence_util.hpp"

namespace dtrain::testing {
namespace {

constexpr int kSteps = 20;
constexpr double kStateTol = 1e-5;   // per tensor of logical_state()
constexpr double kOutputTol = 1e-5;  // StepOutput loss sums and metric states
constexpr double kEvalTol = 1e-6;    // eval_step and predict_step after restore
const std::vector<std::string> kTypes = {"towers", "mirrored"};

struct Case {
  int64_t global_batch;
  std::vector<int> devices;
};

struct Worst {
  double state = 0, loss = 0, predictions = 0;
  std::string where;  // of the worst state difference
};

// Trains one_device and every (type, devices) of `cases` for kSteps steps on
// the same batches, per loss_reduction, and compares states and outputs.
// `sgd_sum_lr_over_batch`: sum runs use lr / global batch so that SGD stays in
// the regime of the mean runs (Adam is scale-invariant and needs no change).
void check_equivalence(const char* label, const char* layers, const char* optimizer, const std::vector<Case>& cases,
                       bool sgd_sum_lr_over_batch, const std::string& device_kind = "cpu",
                       const std::vector<std::string>& types = kTypes, const std::string& compute = "float32",
                       double state_tol = kStateTol, double output_tol = kOutputTol) {
  std::map<std::string, Worst> worst;
  for (const Case& c : cases) {
    for (const std::string reduction : {"sum", "mean"}) {
      const JobSpec ref_job = equivalence_job(layers, optimizer, "one_device", 1, reduction, "cpu", compute);
      std::vector<Batch> batches = take_batches(ref_job, c.global_batch, kSteps + 1);
      const Batch probe = batches.back();  // predicted after training, not trained on
      batches.pop_back();
      const double lr_factor =
          sgd_sum_lr_over_batch && reduction == "sum" ? 1.0 / static_cast<double>(c.global_batch) : 1.0;
      const TrainRun ref = train_run(ref_job, batches, probe, lr_factor);
      // Training moved every variable far beyond the tolerance: agreement is not trivial.
      CHECK(compare_states(ref.state, ref.initial).worst > 1e-2);
      // Reducing with the other reduction's scale ends far beyond the
      // tolerance, so a strategy that reduces with the wrong scale fails below.
      const std::string other = reduction == "sum" ? "mean" : "sum";
      const TrainRun wrong = train_run(equivalence_job(layers, optimizer, "one_device", 1, other, "cpu", compute),
                                       batches, probe, lr_factor);
      CHECK(compare_states(wrong.state, ref.state).worst > 1e-3);

      for (const std::string& type : types) {
        for (const int n : c.devices) {
          if (type == "one_device" && n != 1) continue;
          const std::string where = fmt::format("{}: {}({} x {}) loss_reduction {} global batch {}", label, type, n,
                                                device_kind, reduction, c.global_batch);
          INFO(where);
          const TrainRun run = train_run(equivalence_job(layers, optimizer, type, n, reduction, device_kind, compute),
                                         batches, probe, lr_factor);
          const StateDiff init = compare_states(run.initial, ref.initial);
          CHECK(init.names_match);
          CHECK_MESSAGE(init.worst == 0.0, fmt::format("initial {} differs by {:.3g}", init.worst_name, init.worst));
          const StateDiff d = compare_states(run.state, ref.state);
          REQUIRE(d.names_match);
          CHECK_MESSAGE(d.worst < state_tol,
                        fmt::format("worst tensor {}: relative difference {:.3g}", d.worst_name, d.worst));
          const OutputDiff o = compare_outputs(run.outputs, ref.outputs);
          CHECK(o.examples_match);
          CHECK_MESSAGE(o.loss < output_tol, fmt::format("loss sums differ by {:.3g}", o.loss));
          CHECK_MESSAGE(o.metrics < output_tol, fmt::format("metric states differ by {:.3g}", o.metrics));
          REQUIRE(run.predictions.shape() == ref.predictions.shape());
          const double p = rel_diff(run.predictions, ref.predictions);
          CHECK_MESSAGE(p < output_tol, fmt::format("predictions after training differ by {:.3g}", p));
          Worst& w = worst[type];
          if (!(d.worst <= w.state)) {
            w.state = d.worst;
            w.where = where + ", " + d.worst_name;
          }
          w.loss = std::max(w.loss, o.loss);
          w.predictions = std::max(w.predictions, p);
        }
      }
    }
  }
  for (const auto& [type, w] : worst) {
    MESSAGE(fmt::format("{} worst relative differences: state {:.3g} ({}); loss sums {:.3g}; predictions {:.3g}",
                        type, w.state, w.where, w.loss, w.predictions));
  }
}

TEST_CASE("equivalence: towers and mirrored train the MLP like one_device (sgd, momentum 0.9)") {
  check_equivalence("mlp sgd", kMlpLayers, kSgdMomentum, {{12, {1, 2, 3, 4}}, {10, {1, 2, 3, 4}}}, true);
}

TEST_CASE("equivalence: towers and mirrored train the CNN like one_device (sgd, momentum 0.9)") {
  check_equivalence("cnn sgd", kCnnLayers, kSgdMomentum, {{12, {1, 2, 3, 4}}, {10, {1, 2, 3, 4}}}, true);
}

TEST_CASE("equivalence: towers and mirrored train a residual graph like one_device (sgd, momentum 0.9)") {
  check_equivalence("residual sgd", kResidualLayers, kSgdMomentum, {{12, {1, 2, 3, 4}}, {10, {1, 3}}}, true);
}

// Synchronised batch norm: statistics (and their gradients) over the global
// batch, so the strategies equal one_device; moving statistics included.
TEST_CASE("equivalence: with sync batch norm, towers and mirrored train like one_device") {
  check_equivalence("sync bn sgd", kSyncBnLayers, kSgdMomentum, {{12, {1, 2, 3, 4}}, {10, {1, 3}}}, true);
  // (SGD: Adam divides by the root of near-zero second moments, which blows
  // float32 summation-order noise in the skip branch up to 3e-5.)
  check_equivalence("sync bn on debug", kSyncBnLayers, kSgdMomentum, {{12, {2, 3}}}, true, "debug",
                    {"one_device", "towers", "mirrored"});
}

TEST_CASE("equivalence: without sync, batch norm under mirrored(3) differs from one_device (the test above can fail)") {
  std::string plain = kSyncBnLayers;
  for (size_t at = plain.find("sync: true"); at != std::string::npos; at = plain.find("sync: true")) {
    plain.replace(at, 10, "sync: false");
  }
  const JobSpec ref_job = equivalence_job(plain.c_str(), kSgdMomentum, "one_device", 1, "mean");
  std::vector<Batch> batches = take_batches(ref_job, 12, kSteps + 1);
  const Batch probe = batches.back();
  batches.pop_back();
  const TrainRun ref = train_run(ref_job, batches, probe);
  const TrainRun mirrored = train_run(equivalence_job(plain.c_str(), kSgdMomentum, "mirrored", 3, "mean"), batches, probe);
  CHECK(compare_states(mirrored.state, ref.state).worst > 1e-3);
}

TEST_CASE("equivalence: towers and mirrored train the MLP like one_device (adam)") {
  check_equivalence("mlp adam", kMlpLayers, kAdam, {{12, {1, 2, 3, 4}}, {10, {1, 2, 3, 4}}}, false);
}

// loss_reduction is defined over the global batch for every strategy: one
// plain-SGD step of a linear model (no dropout) changes the output bias by
// -lr * d(loss)/d(bias), where d(sum of losses)/d(bias) = sum over the global
// batch of (softmax(logits) - onehot(label)), computed here from
// predict_step at the initial variables.
TEST_CASE("equivalence: loss_reduction scales the gradient of the global batch's loss sum") {
  const char* linear = "    - {type: flatten}\n    - {type: dense, units: 10}\n";
  const std::vector<std::pair<const char*, int>> strategies = {{"one_device", 1}, {"towers", 3}, {"mirrored", 3}};
  for (const auto& strategy : strategies) {
    const auto& type = strategy.first;
    const int n = strategy.second;
    for (const std::string reduction : {"sum", "mean"}) {
      const JobSpec job = equivalence_job(linear, kPlainSgd, type, n, reduction);
      INFO(fmt::format("{}({}) loss_reduction {}", type, n, reduction));
      const Batch b = take_batches(job, 10, 1).front();
      auto sut = build_strategy(job);
      const Tensor probs = sut->strategy->predict_step(b);
      REQUIRE(probs.shape() == Shape{10, 10});
      const double scale = reduction == "sum" ? 1.0 : 1.0 / 10.0;
      std::vector<double> expected_step(10, 0.0);
      const auto lr = static_cast<float>(learning_rate_at(job.optimizer, 0));
      for (int64_t i = 0; i < 10; ++i) {
        for (int64_t k = 0; k < 10; ++k) {
          const double g = probs[i * 10 + k] - (static_cast<int64_t>(b.labels[i]) == k ? 1.0 : 0.0);
          expected_step[static_cast<size_t>(k)] -= lr * scale * g;
        }
      }
      auto find_bias = [](const NamedTensors& state) {
        for (const auto& [name, t] : state) {
          if (name == "dense/bias") return t.clone();
        }
        FAIL("no dense/bias in logical_state()");
        return Tensor();
      };
      const Tensor before = find_bias(sut->strategy->logical_state());
      sut->strategy->train_step(b, 0, lr);
      const Tensor after = find_bias(sut->strategy->logical_state());
      std::vector<double> step(10);
      for (int64_t k = 0; k < 10; ++k) step[static_cast<size_t>(k)] = double{after[k]} - double{before[k]};
      CHECK(rel_diff(step, expected_step) < 1e-4);
    }
  }
}

TEST_CASE("equivalence: one_device, towers and mirrored on debug devices train the CNN like one_device on cpu:0") {
  check_equivalence("cnn sgd on debug", kCnnLayers, kSgdMomentum, {{12, {1, 2, 3}}, {10, {1, 3}}}, true, "debug",
                    {"one_device", "towers", "mirrored"});
}

TEST_CASE("equivalence: one_device, towers and mirrored on debug devices train a residual graph like cpu:0") {
  check_equivalence("residual sgd on debug", kResidualLayers, kSgdMomentum, {{12, {1, 3}}}, true, "debug",
                    {"one_device", "towers", "mirrored"});
}

TEST_CASE("equivalence: towers and mirrored on debug devices train the MLP like one_device on cpu:0 (adam)") {
  check_equivalence("mlp adam on debug", kMlpLayers, kAdam, {{12, {2, 3}}}, false, "debug");
}

// bfloat16 on both sides: each bf16 rounding is per element and the same in
// every replica, so only float32 summation order differs, as in float32
// (measured: 3.7e-7 worst, like float32). A 1e-7 difference in a weight can
// still move its bfloat16 copy by one step (2^-8 relative) on another CPU or
// oneDNN kernel; one such element moves its tensor by about 2^-9/sqrt(n), so
// the tolerance is 1e-4, ten times float32's.
TEST_CASE("equivalence: in bfloat16, towers and mirrored on cpu and debug devices train like one_device in bfloat16") {
  check_equivalence("cnn bf16", kCnnLayers, kSgdMomentum, {{12, {2, 3}}}, true, "cpu", kTypes, "bfloat16", 1e-4, 1e-4);
  check_equivalence("mlp bf16 on debug", kMlpLayers, kAdam, {{12, {1, 3}}}, false, "debug",
                    {"one_device", "towers", "mirrored"}, "bfloat16", 1e-4, 1e-4);
}

void check_restore(const std::string& device_kind) {
  for (const auto& entry : {std::pair{"mlp", kMlpLayers}, std::pair{"cnn", kCnnLayers}}) {
    const char* label = entry.first;
    const auto& layers = entry.second;
    const JobSpec ref_job = equivalence_job(layers, kSgdMomentum, "one_device", 1, "mean");
    const std::vector<Batch> batches = take_batches(ref_job, 12, kSteps);
    const Batch eval = take_batches(ref_job, 10, 30).back();  // examples 290..299, not trained on
    auto ref = build_strategy(ref_job);
    for (int64_t s = 0; s < kSteps; ++s) {
      ref->strategy->train_step(batches[static_cast<size_t>(s)], s,
                                static_cast<float>(learning_rate_at(ref_job.optimizer, s)));
    }
    CheckpointData ckpt;
    ckpt.global_step = kSteps;
    for (const auto& [name, t] : ref->strategy->logical_state()) ckpt.tensors.emplace_back(name, t.clone());
    const StepOutput want = ref->strategy->eval_step(eval);
    const Tensor want_pred = ref->strategy->predict_step(eval);
    REQUIRE(want.examples == 10);
    REQUIRE(want_pred.shape() == Shape{10, 10});

    for (const std::string& type : kTypes) {
      INFO(fmt::format("{}: {}(3 x {})", label, type, device_kind));
      auto sut = build_strategy(equivalence_job(layers, kSgdMomentum, type, 3, "mean", device_kind));
      // Before restore the fresh variables evaluate differently: restore matters.
      CHECK(rel_diff(std::vector<double>{sut->strategy->eval_step(eval).loss_sum}, {want.loss_sum}) > 1e-3);
      const Status restored = sut->strategy->restore(ckpt);
      REQUIRE(restored.ok());
      const StateDiff state = compare_states(sut->strategy->logical_state(), ckpt.tensors);
      CHECK(state.names_match);
      CHECK_MESSAGE(state.worst == 0.0, fmt::format("restored {} differs by {:.3g}", state.worst_name, state.worst));

      const StepOutput got = sut->strategy->eval_step(eval);
      CHECK(got.examples == 10);
      CHECK(rel_diff(std::vector<double>{got.loss_sum}, {want.loss_sum}) < kEvalTol);
      REQUIRE(got.metric_state.size() == want.metric_state.size());
      CHECK(rel_diff(got.metric_state, want.metric_state) < kEvalTol);

      const Tensor pred = sut->strategy->predict_step(eval);
      REQUIRE(pred.shape() == want_pred.shape());
      CHECK(rel_diff(pred, want_pred) < kEvalTol);
      for (int64_t i = 0; i < 10; ++i) {  // input order: row i is example i's prediction
        CHECK_MESSAGE(rel_diff(pred.rows(i, i + 1), want_pred.rows(i, i + 1)) < kEvalTol, fmt::format("row {}", i));
      }
    }
  }
}

TEST_CASE("equivalence: towers(3) and mirrored(3) evaluate and predict like one_device after restore") {
  check_restore("cpu");
}

// Checkpoint portability onto debug devices: a cpu:0 checkpoint restores into
// every debug copy and evaluates identically.
TEST_CASE("equivalence: towers(3) and mirrored(3) on debug devices restore a cpu checkpoint and evaluate like it") {
  check_restore("debug");
}

}  // namespace
}  // namespace dtrain::testing
