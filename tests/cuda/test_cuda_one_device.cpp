// one_device on gpu:0 against one_device on cpu:0 (the strategy invariant),
// for the MLP and the CNN:
// the same job, seed and batches give the same variables, loss sums, metric
// states and predictions within float32 summation-order tolerance, a steady
// step makes no cudaMalloc, and a step moves only the batch in and the loss
// and logits out. Skipped, saying why, without a GPU.
#include <doctest.h>
#include <fmt/format.h>

#include "engine/storage.hpp"
#include "tests/cuda/backend_test_util.hpp"
#include "tests/strategies/equivalence_util.hpp"

namespace dtrain::testing {
namespace {

// cuBLASLt sums in another order than oneDNN: the variables drift apart by
// a few float32 roundings per step (relative 1e-6 per step after 8 steps is
// far below this; a wrong gradient or a missed update is far above it).
constexpr double kStateTol = 1e-4, kOutputTol = 1e-4;
// Metric states count predictions: an argmax flips where two logits lie
// within float32 rounding of each other, and one flip in a step of 32
// examples moves that step's state by about 0.03.
constexpr double kMetricTol = 0.05;
constexpr int kSteps = 8;
// The CNN adds cuDNN's convolution sums (in yet another order) and a
// max-pool's argmax or a relu's mask can flip where two values lie within
// rounding, which moves that example's gradient: 1e-3
// still fails a wrong gradient (order 1) or a missed update (order lr / |v|).
constexpr double kCnnStateTol = 1e-3;

// Trains `layers` 8 steps with each optimizer on cpu:0 and on gpu:0 from the
// same seed and batches, and compares variables, outputs and predictions.
void check_gpu_equals_cpu(const char* layers, double state_tol) {
  for (const char* optimizer : {kAdam, kSgdMomentum}) {
    INFO("optimizer: " << optimizer);
    const JobSpec cpu_job = equivalence_job(layers, optimizer, "one_device", 1, "mean", "cpu");
    std::vector<Batch> batches = take_batches(cpu_job, 32, kSteps + 1);
    const Batch probe = batches.back();
    batches.pop_back();
    const TrainRun ref = train_run(cpu_job, batches, probe);
    CHECK(compare_states(ref.state, ref.initial).worst > 1e-2);  // training moved the variables
    const TrainRun run = train_run(equivalence_job(layers, optimizer, "one_device", 1, "mean", "gpu"), batches,
                                   probe);
    const StateDiff init = compare_states(run.initial, ref.initial);
    REQUIRE(init.names_match);
    CHECK_MESSAGE(init.worst == 0.0, fmt::format("initial {} differs by {:.3g}", init.worst_name, init.worst));
    const StateDiff d = compare_states(run.state, ref.state);
    REQUIRE(d.names_match);
    CHECK_MESSAGE(d.worst < state_tol, fmt::format("after {} steps the worst variable {} differs by {:.3g} "
                                                   "(relative; allowed {})",
                                                   kSteps, d.worst_name, d.worst, state_tol));
    const OutputDiff o = compare_outputs(run.outputs, ref.outputs);
    CHECK(o.examples_match);
    CHECK_MESSAGE(o.loss < kOutputTol, fmt::format("loss sums differ by {:.3g}", o.loss));
    CHECK_MESSAGE(o.metrics < kMetricTol, fmt::format("metric states differ by {:.3g}", o.metrics));
    const double p = rel_diff(run.predictions, ref.predictions);
    CHECK_MESSAGE(p < kOutputTol, fmt::format("predictions after training differ by {:.3g}", p));
  }
}

TEST_CASE("cuda one_device: gpu:0 trains the MLP (dense, relu, dropout, adam / sgd momentum) as cpu:0 does") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  check_gpu_equals_cpu(kMlpLayers, kStateTol);
}

TEST_CASE("cuda one_device: gpu:0 trains the CNN (conv2d + relu, max_pool2d, dropout, flatten, dense) as cpu:0 does") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  check_gpu_equals_cpu(kCnnLayers, kCnnStateTol);
}

TEST_CASE("cuda one_device: a steady gpu:0 step makes no cudaMalloc and copies only the batch, loss and logits") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  // The CNN's steps take cuDNN's workspace, the KRSC weights and padded
  // inputs from the caching allocator too.
  const char* layers = nullptr;
  SUBCASE("mlp") { layers = kMlpLayers; }
  SUBCASE("cnn") { layers = kCnnLayers; }
  REQUIRE(layers != nullptr);
  const JobSpec job = equivalence_job(layers, kAdam, "one_device", 1, "mean", "gpu");
  const std::vector<Batch> batches = take_batches(job, 32, 3);
  auto sut = build_strategy(job);
  sut->strategy->train_step(batches[0], 0, 0.01f);  // warm: buffers, cuBLASLt and cuDNN workspace
  const gpu::MemoryStats before = gpu::memory_stats(gputest_backend::kGpu0);
  const CopyCounts copies = copy_counts();
  sut->strategy->train_step(batches[1], 1, 0.01f);
  sut->strategy->train_step(batches[2], 2, 0.01f);
  const gpu::MemoryStats after = gpu::memory_stats(gputest_backend::kGpu0);
  const CopyCounts now = copy_counts();
  CHECK_MESSAGE(after.cuda_mallocs == before.cuda_mallocs,
                (after.cuda_mallocs - before.cuda_mallocs) << " cudaMalloc calls in two steady steps");
  CHECK(after.cuda_frees == before.cuda_frees);
  CHECK(now.host_to_device - copies.host_to_device == 2 * 2);  // features, labels
  CHECK(now.device_to_host - copies.device_to_host == 2 * 2);  // loss sum, logits for the metrics
  CHECK(now.device_to_device == copies.device_to_device);
}

}  // namespace
}  // namespace dtrain::testing
