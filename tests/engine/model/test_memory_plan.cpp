// The activation buffer plan: BufferPool's rules, the plan of a residual
// network against the pool's measured bytes after real forward and backward
// passes, what is freed when, and that the results do not depend on it
// (every step's values equal those of fresh buffers for each pass).
#include <doctest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "engine/model/buffer_pool.hpp"
#include "engine/model/model.hpp"
#include "engine/rng.hpp"
#include "tests/engine/model/model_test_util.hpp"

namespace dtrain {
namespace {

using namespace model_testing;

TEST_CASE("buffer pool: a buffer given back is taken again for the same size, never while another tensor views it") {
  BufferPool pool;
  Tensor a = pool.take({4, 8}, DType::f32, kHost);
  const void* where = a.raw();
  CHECK(pool.buffers_made() == 1);
  CHECK(pool.bytes_held() == 4 * 8 * sizeof(float));
  pool.give(a);
  CHECK(a.empty());
  CHECK(a.shape() == Shape{4, 8});  // the shape stays for a backward that reads it
  CHECK(a.numel() == 32);
  CHECK(pool.bytes_in_use() == 0);
  // Same element count, another shape: the same storage, re-viewed.
  Tensor b = pool.take({32}, DType::f32, kHost);
  CHECK(b.raw() == where);
  CHECK(b.shape() == Shape{32});
  CHECK(pool.buffers_made() == 1);
  // Another size: a new buffer.
  Tensor c = pool.take({3}, DType::f32, kHost);
  CHECK(pool.buffers_made() == 2);
  // A view keeps b's storage for itself: the pool does not take it back.
  Tensor view = b.reshaped({2, 16});
  pool.give(b);
  CHECK(b.empty());
  CHECK(pool.free_buffers() == 0);
  Tensor d = pool.take({32}, DType::f32, kHost);
  CHECK(d.raw() != where);
  CHECK(pool.buffers_made() == 3);
  view = Tensor();  // its storage is gone with it
  CHECK(pool.bytes_held() == (32 + 3) * sizeof(float));
  pool.give(c);
  pool.give(d);
  CHECK(pool.free_buffers() == 2);
  CHECK(pool.bytes_in_use() == 0);
}

TEST_CASE("buffer pool: free buffers that no pass took for two passes are freed") {
  BufferPool pool;
  Tensor big = pool.take({100}, DType::f32, kHost);
  pool.give(big);
  Tensor small = pool.take({10}, DType::f32, kHost);
  pool.give(small);
  pool.new_pass();
  Tensor again = pool.take({10}, DType::f32, kHost);  // small is used, big is not
  pool.give(again);
  pool.new_pass();
  CHECK(pool.free_buffers() == 2);
  pool.new_pass();  // big: unused in the last two passes
  CHECK(pool.free_buffers() == 1);
  CHECK(pool.bytes_held() == 10 * sizeof(float));
}

// A residual network with every kind of buffer: a view (flatten), a value
// read by two layers (the block input: its gradient is summed), a merge that
// reads no input in backward, relus that read only their outputs, batch
// norms that read only their inputs, and a dropout.
const char* kResidual = R"(
model:
  input: {shape: [8, 8, 3]}
  layers:
    - {name: stem, type: conv2d, filters: 4, kernel: 3, padding: same, use_bias: false}
    - {name: stem_bn, type: batch_norm}
    - {name: stem_relu, type: activation, activation: relu}
    - {name: c1, type: conv2d, filters: 4, kernel: 3, padding: same}
    - {name: bn1, type: batch_norm}
    - {name: r1, type: activation, activation: relu}
    - {name: c2, type: conv2d, filters: 4, kernel: 3, padding: same}
    - {name: bn2, type: batch_norm}
    - {name: add, type: add, inputs: [stem_relu, bn2], activation: relu}
    - {name: drop, type: dropout, rate: 0.25}
    - {name: flat, type: flatten}
    - {name: out, type: dense, units: 5}
  loss: sparse_softmax_cross_entropy
optimizer: {type: sgd, learning_rate: 0.1}
data:
  train: {format: synthetic, synthetic: {num_examples: 64, num_classes: 5, shape: [8, 8, 3]}, batch_size: 16}
)";

void fill_values(const Model& m, ReplicaState& rs) {
  for (size_t v = 0; v < m.variables().size(); ++v) {
    const CounterRng rng(7, v);
    Tensor t(m.variables()[v].shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = rng.uniform(static_cast<uint64_t>(i)) - 0.5f;
    rs.values[v] = t;
  }
}

Tensor input(int64_t batch, uint64_t seed) {
  const CounterRng rng(seed, 0);
  Tensor x({batch, 8, 8, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = rng.uniform(static_cast<uint64_t>(i));
  return x;
}

TEST_CASE("memory plan: the pool holds what the plan says after forward and backward of a residual network") {
  auto model = model_of(kResidual, "residual.yaml");
  REQUIRE_MESSAGE(model.ok(), (model.ok() ? "" : model.error().message));
  const Model& m = **model;
  const int64_t batch = 16;
  const Model::MemoryPlan plan = m.memory_plan(batch);
  ReplicaState rs = m.make_replica_state();
  fill_values(m, rs);
  Tensor dlogits({batch, 5}, 0.1f);
  for (int step = 1; step <= 3; ++step) {
    INFO("step " << step);
    ForwardContext fc{true, 1, step, 0, &ops::host_context()};
    const Tensor x = input(batch, 10 + static_cast<uint64_t>(step));
    m.forward(fc, rs, x);
    CHECK(rs.pool.bytes_in_use() == plan.layers.back().forward_live);
    // Freed after their last reader: bn1 (r1 reads only its output), bn2 and
    // add (the add and its relu read no input in backward); stem_relu stays
    // (c1 reads it).
    const size_t bn1 = 4, bn2 = 7, add = 8, stem_relu = 2, drop = 10;  // add/relu is 9
    CHECK(rs.activations[bn1].empty());
    CHECK(rs.activations[bn1].shape() == Shape{batch, 8, 8, 4});
    CHECK(rs.activations[bn2].empty());
    CHECK(rs.activations[add].empty());
    CHECK_FALSE(rs.activations[stem_relu].empty());
    CHECK_FALSE(plan.layers[bn1].kept);
    CHECK(plan.layers[stem_relu].kept);
    // The dropout's output is freed, but the flatten's view of it (which
    // the dense layer's backward reads) keeps its storage.
    CHECK(rs.activations[drop].empty());
    CHECK_FALSE(rs.activations[drop + 1].empty());
    CHECK(plan.layers[drop + 1].kept);
    m.backward(fc, rs, x, dlogits);
    // Only the model output's buffer stays between steps.
    CHECK(rs.pool.bytes_in_use() == plan.layers.front().backward_live);
    CHECK(rs.pool.bytes_in_use() == static_cast<size_t>(batch * 5) * sizeof(float));
    CHECK(rs.pool.bytes_held() == plan.pool_bytes);
    CHECK(rs.pool.peak_bytes() == plan.pool_bytes);
  }
  // Steady state: the second and third steps made no buffer.
  const int64_t made = rs.pool.buffers_made();
  ForwardContext fc{true, 1, 4, 0, &ops::host_context()};
  const Tensor x = input(batch, 20);
  m.forward(fc, rs, x);
  m.backward(fc, rs, x, dlogits);
  CHECK(rs.pool.buffers_made() == made);
  // The plan holds less than a buffer per activation and per gradient.
  CHECK(plan.peak_live <= plan.pool_bytes);
  CHECK(plan.pool_bytes * 2 < plan.without_plan);
}

TEST_CASE("memory plan: pooled buffers give the values fresh buffers give, step after step") {
  auto model = model_of(kResidual, "residual.yaml");
  REQUIRE(model.ok());
  const Model& m = **model;
  const int64_t batch = 16;
  ReplicaState pooled = m.make_replica_state();
  fill_values(m, pooled);
  Tensor dlogits({batch, 5});
  for (int64_t i = 0; i < dlogits.numel(); ++i) dlogits[i] = 0.01f * static_cast<float>(i % 7) - 0.03f;
  for (int step = 1; step <= 3; ++step) {
    INFO("step " << step);
    ForwardContext fc{true, 1, step, 0, &ops::host_context()};
    const Tensor x = input(batch, 30 + static_cast<uint64_t>(step));
    // The same pass on a state made for it alone: every buffer new.
    ReplicaState fresh = m.make_replica_state();
    for (size_t v = 0; v < pooled.values.size(); ++v) fresh.values[v] = pooled.values[v].clone();
    const Tensor y_fresh = m.forward(fc, fresh, x).clone();
    m.backward(fc, fresh, x, dlogits);
    const Tensor y = m.forward(fc, pooled, x).clone();
    m.backward(fc, pooled, x, dlogits);
    CHECK(y.to_vector() == y_fresh.to_vector());
    for (size_t v = 0; v < pooled.grads.size(); ++v) {
      INFO(m.variables()[v].name);
      CHECK(pooled.grads[v].to_vector() == fresh.grads[v].to_vector());
    }
    // An update between steps, so each step reads other values.
    for (size_t v = 0; v < pooled.values.size(); ++v) {
      if (pooled.grads[v].empty()) continue;  // batch norm's moving statistics
      for (int64_t i = 0; i < pooled.values[v].numel(); ++i) pooled.values[v][i] -= 0.1f * pooled.grads[v][i];
    }
  }
}

// Two outputs, one of them read by no later layer but not the last layer:
// its gradient buffer comes from the pool at the start of every backward.
const char* kTwoHeads = R"(
model:
  input: {shape: [8]}
  layers:
    - {name: trunk, type: dense, units: 16, activation: relu}
    - {name: cls, type: dense, units: 4}
    - {name: reg, type: dense, units: 2, inputs: trunk}
  outputs:
    cls: {loss: sparse_softmax_cross_entropy, labels: classes}
    reg: {loss: mean_squared_error, labels: targets}
optimizer: {type: sgd, learning_rate: 0.1}
)";

TEST_CASE("memory plan: a model of two outputs computes the same gradients with pooled buffers, step after step") {
  auto model = model_of(kTwoHeads, "heads.yaml");
  REQUIRE_MESSAGE(model.ok(), (model.ok() ? "" : model.error().message));
  const Model& m = **model;
  const int64_t batch = 6;
  ReplicaState pooled = m.make_replica_state();
  fill_values(m, pooled);
  std::vector<Tensor> douts{Tensor({batch, 4}, 0.05f), Tensor({batch, 2}, -0.2f)};
  for (int step = 1; step <= 3; ++step) {
    INFO("step " << step);
    ForwardContext fc{true, 1, step, 0, &ops::host_context()};
    const CounterRng rng(40 + static_cast<uint64_t>(step), 0);
    Tensor x({batch, 8});
    for (int64_t i = 0; i < x.numel(); ++i) x[i] = rng.uniform(static_cast<uint64_t>(i)) - 0.5f;
    ReplicaState fresh = m.make_replica_state();
    for (size_t v = 0; v < pooled.values.size(); ++v) fresh.values[v] = pooled.values[v].clone();
    m.forward(fc, fresh, x);
    m.backward_outputs(fc, fresh, x, douts);
    m.forward(fc, pooled, x);
    CHECK(m.output(pooled, 0).to_vector() == m.output(fresh, 0).to_vector());
    m.backward_outputs(fc, pooled, x, douts);
    for (size_t v = 0; v < pooled.grads.size(); ++v) {
      INFO(m.variables()[v].name);
      CHECK(pooled.grads[v].to_vector() == fresh.grads[v].to_vector());
      for (int64_t i = 0; i < pooled.values[v].numel(); ++i) pooled.values[v][i] -= 0.1f * pooled.grads[v][i];
    }
  }
}

TEST_CASE("memory plan: the sample ResNet-20 holds under a third of a buffer per activation and gradient") {
  std::ifstream in(std::string(DTRAIN_SOURCE_ROOT) + "/sample_configs/resnet20_synthetic.yaml");
  REQUIRE(in.good());
  const std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto model = model_of(yaml, "resnet20_synthetic.yaml");
  REQUIRE(model.ok());
  const Model::MemoryPlan plan = (**model).memory_plan(128);
  // 128 rows: a 32x32x16 float32 activation is 8 MiB.
  const double mib = 1024.0 * 1024.0;
  CHECK(static_cast<double>(plan.without_plan) / mib == doctest::Approx(660.1).epsilon(0.001));
  CHECK(static_cast<double>(plan.peak_live) / mib < 200.0);
  CHECK(plan.pool_bytes * 3 < plan.without_plan);
  const std::string summary = (**model).memory_summary(128);
  CHECK(summary.find("conv2_block1_1_bn") != std::string::npos);
  CHECK(summary.find("planned peak") != std::string::npos);
}

}  // namespace
}  // namespace dtrain
