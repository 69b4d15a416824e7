// The layer interface. Layers are immutable after build() and hold no
// per-call state: everything a backward pass needs is kept in a LayerCache
// owned by the caller (one per replica), and parameters are passed in. This is
// what lets a strategy run the same Layer on several replicas at once, each
// with its own copy of the variables (mirrored) or a shared one (towers).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/initializer_spec.hpp"
#include "engine/ops/context.hpp"
#include "engine/profiler.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// A variable a layer needs. Shapes follow TensorFlow/Keras conventions:
// dense kernel (in, out); conv2d kernel (kh, kw, in, out); bias (out).
struct ParamSpec {
  std::string name;  // local name, e.g. "kernel"; the model prefixes "dense_1/"
  Shape shape;
  InitializerSpec init;
  bool trainable = true;
};

// What Layer::check_input's messages name: the layer, the model input that
// x holds, and where each of x's values is in the data.
struct InputCheck {
  std::string layer;  // the layer's name in the job, e.g. "embed"
  std::string input;  // "model.input" or "model.inputs.city"
  // x's flat element index -> its place: "train.csv:14:3 (column \"city\")";
  // null: "example B, position P" (B the row of the batch, P the flat
  // position in the example).
  std::function<std::string(int64_t index)> place = nullptr;
  std::string place_of(const Tensor& x, int64_t index) const {
    if (place) return place(index);
    const int64_t batch = x.rank() == 0 ? 1 : x.dim(0);
    const int64_t per = batch <= 0 ? 1 : std::max<int64_t>(1, x.numel() / batch);
    return "example " + std::to_string(index / per) + ", position " + std::to_string(index % per);
  }
};

// Sums vectors over every replica (and worker) training one step: what a
// synchronised batch norm needs for statistics over the global batch.
// Every replica of the step calls all_reduce the same number of times, with
// the same lengths, in the same order; each call returns once all have
// made it, with `values` holding the sum (the same bits everywhere).
class CrossReplicaSum {
 public:
  virtual ~CrossReplicaSum() = default;
  virtual void all_reduce(std::span<double> values) = 0;
};

struct ForwardContext {
  bool training = false;
  uint64_t seed = 0;           // run.seed
  int64_t step = 0;            // global step being computed
  int64_t example_offset = 0;  // global index (within the step's global batch) of row 0
  // The replica's device and compute type; every tensor of the call lives there.
  const ops::Context* ops = &ops::host_context();
  // Null: this replica's batch is the global batch (one_device, evaluation).
  CrossReplicaSum* cross_replica = nullptr;
  // run.profile's window: each layer's forward and backward are recorded
  // here (on the calling thread's track); null when not profiling.
  Profiler* profiler = nullptr;
};

// Per-replica, per-layer scratch kept between forward and backward.
struct LayerCache {
  std::vector<Tensor> saved;
  std::vector<int32_t> ints;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string type() const = 0;
  // The ops this layer runs (names of engine/ops/support.hpp), checked against
  // a replica's backend and compute type when the model is set up for it.
  virtual std::vector<std::string_view> ops() const { return {}; }
  // Shapes exclude the batch dimension. Returns the output shape, or an error
  // that says what input this layer expected (e.g. conv2d on a flat input).
  virtual Result<Shape> build(const Shape& input) = 0;
  // Offers to apply an elementwise activation as part of this layer's own
  // output (a oneDNN post-op). Returns true when the layer took it; the model
  // then adds no separate activation layer. Called before build().
  virtual bool fuse_activation(const std::string& /*activation*/) { return false; }
  // Valid after build().
  virtual std::vector<ParamSpec> params() const { return {}; }
  // x: (B, input...). y is (re)allocated by the layer as (B, output...).
  // params are mutable so batch_norm can update its moving statistics.
  virtual void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                       LayerCache& cache) const = 0;
  // Checks the values of a batch that reaches this layer straight from the
  // data (the model's input, possibly re-viewed by reshape/flatten): x is a
  // host tensor (B, input...). Returns a kData error for a value the layer
  // cannot take (an embedding's token id out of range), starting with the
  // value's place (at.place_of) and naming the value, the input and the layer.
  // The estimator calls it before each step, so a bad value is reported
  // rather than computed with; forward itself never reads out of bounds.
  virtual Status check_input(const Tensor& /*x*/, const InputCheck& /*at*/) const { return Status::Ok(); }
  // True for a layer that reads integer token ids (embedding). The model
  // feeds it only an int32 model input (directly or re-viewed by
  // reshape/flatten) and feeds that input to no other layer that computes.
  virtual bool takes_token_ids() const { return false; }
  // dy: (B, output...). Writes (overwrites) grads[i] for every trainable
  // param i (grads[i] for non-trainable params is left alone) and, when dx is
  // non-null, the input gradient (B, input...).
  virtual void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                        const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                        const LayerCache& cache) const = 0;
  // Which values backward reads besides dy, its cache and its params: its
  // inputs' (x, xs) and its output's (y). The model frees an activation
  // that no backward reads once forward is past its last reader and passes
  // a tensor of the same shape without storage (Tensor::released()) in its
  // place. True unless the layer's backward is known not to read them.
  virtual bool backward_reads_inputs() const { return true; }
  virtual bool backward_reads_output() const { return true; }

  // Several inputs (merge layers, attention over query and key/value). The
  // model graph calls these; a one-input layer keeps the defaults, which
  // pass its single input through. kAnyArity: two or more.
  static constexpr int kAnyArity = -1;
  virtual int arity() const { return 1; }
  virtual Result<Shape> build_inputs(std::span<const Shape> inputs) { return build(inputs[0]); }
  virtual void forward_inputs(const ForwardContext& ctx, std::span<Tensor> params, std::span<const Tensor* const> xs,
                              Tensor& y, LayerCache& cache) const {
    forward(ctx, params, *xs[0], y, cache);
  }
  // dxs[i] (null when not needed) receives the gradient w.r.t. xs[i].
  virtual void backward_inputs(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                               std::span<const Tensor* const> xs, const Tensor& y, const Tensor& dy,
                               std::span<Tensor* const> dxs, const LayerCache& cache) const {
    backward(ctx, params, grads, *xs[0], y, dy, dxs[0], cache);
  }
};

// A layer of several inputs implements only the *_inputs methods; the model
// never calls the one-input ones on it.
class MultiInputLayer : public Layer {
 public:
  Result<Shape> build(const Shape& input) final;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const final;
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const final;
};

}  // namespace dtrain
