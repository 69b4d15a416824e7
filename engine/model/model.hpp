// A model graph built once from ModelSpec: the layers in file order (which
// is a topological order: a layer reads only layers above it), their inputs,
// shapes and the list of logical variables. The Model holds no variable values and no
// activations: those live in per-replica state (ReplicaState) owned by the
// strategy, so one Model serves every replica of every strategy.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"
#include "engine/model/buffer_pool.hpp"
#include "engine/ops/context.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// One logical variable of the model, e.g. "conv2d/kernel" (3, 3, 1, 32).
struct VariableSpec {
  std::string name;
  Shape shape;
  InitializerSpec init;
  bool trainable = true;
};

// Everything one replica needs to run forward and backward: its variable
// values (its own copy, or views of a shared copy), gradients, activations and
// layer caches. Not thread-safe; one thread per replica.
struct ReplicaState {
  ops::Context ctx;                 // the replica's device and compute type: every tensor below lives there
  std::vector<Tensor> values;       // indexed like Model::variables()
  std::vector<Tensor> grads;        // same; allocated for trainable variables
  // Micro-batches (gradient accumulation, run.micro_batch_rows): the pending
  // partial sums of the earlier micro-batches' grads of one update, bottom
  // first, each indexed like grads (allocated by the strategy on first use).
  std::vector<std::vector<Tensor>> grad_sums;
  // activations[i] is the output of layer i, from its forward until its
  // last reader (forward's, or backward's when a backward reads it); then
  // its buffer goes back to `pool` and only its shape stays (released()).
  // A model output's stays until the next forward.
  std::vector<Tensor> activations;
  std::vector<LayerCache> caches;   // one per layer
  // output_grads[i]: gradient w.r.t. layer i's output, from its first
  // consumer's backward (last first) until layer i's own; its buffer comes
  // from `pool` and goes back to it (no allocation in the steady state).
  std::vector<Tensor> output_grads;
  // extra_grads[i][j]: layer i's gradient for its input j when that input's
  // gradient already holds another consumer's part (it is then added in).
  std::vector<std::vector<Tensor>> extra_grads;
  std::vector<char> grad_written;        // per layer, during backward
  // The buffers of activations and their gradients (Model::memory_plan).
  BufferPool pool;
  std::vector<const Tensor*> in_ptrs;    // scratch for a layer's inputs
  std::vector<Tensor*> dx_ptrs;          // scratch for a layer's input gradients
  std::vector<Tensor> handed;            // scratch: the pool's buffers handed to them
  // Where a synchronised batch norm sums its statistics over the replicas
  // (and workers) of a training step; null: this replica alone.
  CrossReplicaSum* cross_replica = nullptr;
  // The replica's shard of the batch on its device (reused step after step
  // when the replica is not on the host); extra_features: the model's inputs
  // after the first.
  Tensor features, labels;
  std::vector<Tensor> extra_features;
  std::vector<Tensor> extra_labels;  // the labels of the outputs after the first
  std::vector<Tensor> example_weights;  // per output: the shard's example weights (when weighted)
};

// One input of the model (model.input, or an entry of model.inputs).
struct ModelInput {
  std::string name;
  Shape shape;               // without batch
  DType dtype = DType::f32;  // float32, or int32 token ids
  std::string where;         // "job.yaml:4:5" of its key in model.inputs; "" for model.input
};

// One output of the model (model.outputs' entries, or the last layer).
struct ModelOutput {
  std::string name;   // the layer's name
  Shape shape;        // without batch
  std::string where;  // "job.yaml:9:5" of its key in model.outputs; "" for the shorthand
  size_t entry = 0;   // the layer entry whose activation it is
};

class Model {
 public:
  // Wires and builds every layer; an inconsistent model (conv2d on a flat
  // input, an unknown input name, a merge of different shapes, ...) gives one
  // kConfig error listing every problem, each with the layer's file:line:col.
  static Result<std::unique_ptr<Model>> build(const ModelSpec& spec);

  const std::vector<VariableSpec>& variables() const { return variables_; }
  // The model's inputs in file order (at least one); a batch gives the
  // first as its features and the others as its extra_features.
  const std::vector<ModelInput>& inputs() const { return inputs_; }
  size_t num_inputs() const { return inputs_.size(); }
  // The first (or only) input's shape, dtype (float32, or int32 for token
  // ids) and name.
  const Shape& input_shape() const { return inputs_[0].shape; }
  DType input_dtype() const { return inputs_[0].dtype; }
  // The first (or only) output's shape.
  const Shape& output_shape() const { return output_shape_; }
  // The outputs: model.outputs in file order, else the last layer alone.
  const std::vector<ModelOutput>& outputs() const { return outputs_; }
  size_t num_outputs() const { return outputs_.size(); }
  // Output j (B, outputs()[j].shape...) after forward, valid until the next.
  const Tensor& output(const ReplicaState& rs, size_t j) const { return rs.activations[outputs_[j].entry]; }
  size_t num_layers() const { return layers_.size(); }
  int64_t num_parameters() const;
  std::string summary() const;  // one line per layer: name, type, output shape, params
  // The expanded graph: one line per layer with its inputs, output shape and
  // parameter count (`dtrain validate --graph`).
  std::string graph_summary() const;
  const std::string& input_name() const { return inputs_[0].name; }

  // A kConfig error naming the first layer (its file:line:col), device and
  // compute type that ctx's backend cannot run (engine/ops/support.hpp).
  Status check_support(const ops::Context& ctx) const;

  // The activation and activation-gradient buffers of one replica running
  // forward and backward on `batch` rows, as ReplicaState::pool holds them
  // (engine/model/buffer_pool.hpp): live bytes after each layer's forward
  // and after its backward (a step after the first, when the model outputs'
  // buffers stay from the step before), the most live at once, and the
  // pool's size (what the replica holds for them; more than the peak where
  // buffers of one size are free while another size is wanted). Float32
  // activations only: layer caches (batch norm statistics, a fused relu's
  // masked gradient, bfloat16 copies), variables and optimizer slots are
  // not in it. A layer whose backward passes dy through as dx (dropout when
  // it drops nothing, position_embedding) is counted as writing its own: the
  // plan is then an upper bound.
  struct LayerMemory {
    size_t forward_live = 0;   // after this layer's forward
    size_t backward_live = 0;  // after this layer's backward
    bool kept = false;         // its activation is kept for backward
  };
  struct MemoryPlan {
    std::vector<LayerMemory> layers;
    size_t peak_live = 0;
    size_t peak_layer = 0;      // where it is reached
    bool peak_in_backward = false;
    size_t pool_bytes = 0;
    size_t without_plan = 0;    // one buffer per activation and per gradient, as before the plan
  };
  MemoryPlan memory_plan(int64_t batch) const;
  // memory_plan as `dtrain validate --graph` prints it: a line per layer and
  // the totals, in MiB.
  std::string memory_summary(int64_t batch) const;

  // Where value `position` (the flat position in one example) of model input
  // `input` (an index of inputs()) in row `row` of a batch is in the data:
  // "train.csv:14:3 (column \"city\")".
  using ValuePlace = std::function<std::string(size_t input, int64_t row, int64_t position)>;
  // Checks a batch's values against the layers that read them as they are in
  // the data (the first layer, and the next while those before it only
  // re-view the input; Layer::check_input): a kData error such as
  // "<place>: id 57 of model.input is out of range for layer \"embed\"
  // (input_dim 50: ids 0..49)", its place from `place` (null: "example 3,
  // position 5", the row in the batch). One pass over each input a layer
  // checks. features: host tensor (B, input_shape...) of input_dtype();
  // extra: the other inputs' host tensors, in the order of inputs(). Another
  // dtype than the input's is a kData error naming both.
  Status check_input(const Tensor& features, std::span<const Tensor> extra = {},
                     const ValuePlace& place = nullptr) const;

  // A ReplicaState on ctx.device with gradient and activation slots sized
  // for this model; values are left empty for the strategy to fill.
  ReplicaState make_replica_state(const ops::Context& ctx = ops::host_context()) const;

  // x: (B, input_shape...); extra: the other inputs (B, shape...), in the
  // order of inputs() (empty for a model of one input). Returns the model
  // output (B, output_shape...), which stays valid in `rs` until the next forward.
  const Tensor& forward(const ForwardContext& ctx, ReplicaState& rs, const Tensor& x,
                        std::span<const Tensor> extra = {}) const;
  // dlogits: (B, output_shape...), the gradient of the (scaled) loss. Writes
  // rs.grads for every trainable variable. REQUIRES: forward on the same x.
  // layer_done, when given, is called with each layer's index as soon as
  // that layer's gradients are final (last layer first), so a strategy can
  // start reducing them while backward goes on.
  void backward(const ForwardContext& ctx, ReplicaState& rs, const Tensor& x, const Tensor& dlogits,
                const std::function<void(size_t)>& layer_done = {}, std::span<const Tensor> extra = {}) const;
  // The same for a model of several outputs: doutputs[j] is the gradient
  // w.r.t. output j (B, outputs()[j].shape...); a layer that feeds an output
  // and other layers gets the sum of their gradients.
  void backward_outputs(const ForwardContext& ctx, ReplicaState& rs, const Tensor& x,
                        std::span<const Tensor> doutputs, const std::function<void(size_t)>& layer_done = {},
                        std::span<const Tensor> extra = {}) const;
  // The range [first, first + count) of variables() that layer i owns.
  std::pair<size_t, size_t> layer_variables(size_t i) const { return {layers_[i].first_var, layers_[i].num_vars}; }

  // A read-only view of layer i of the graph, for exporters (engine/export/).
  // inputs: layer indices (< i), or for model input k the value model_input(k)
  // (negative; is_model_input/input_index decode it).
  struct LayerView {
    const Layer& layer;
    const std::string& name;
    const std::string& place;  // "job.yaml:7:7: model.layers[0] (conv2d)"
    const std::vector<int>& inputs;
    const Shape& out_shape;
    size_t first_var, num_vars;
  };
  LayerView layer_view(size_t i) const {
    const Entry& e = layers_[i];
    return {*e.layer, e.name, e.place, e.inputs, e.out_shape, e.first_var, e.num_vars};
  }
  static int model_input(size_t k) { return -1 - static_cast<int>(k); }
  static bool is_model_input(int in) { return in < 0; }
  static size_t input_index(int in) { return static_cast<size_t>(-1 - in); }

 private:
  struct Entry {
    std::unique_ptr<Layer> layer;
    std::string name;
    std::string place;  // "job.yaml:7:7: model.layers[0] (conv2d)", for errors
    size_t first_var = 0, num_vars = 0;  // this layer's range in variables_
    Shape out_shape;
    std::vector<int> inputs;  // layer indices; model_input(k) for the model's input k
    bool token_ids = false;   // the output is the int32 model input, re-viewed (reshape/flatten)
  };
  // The buffer plan of an entry (plan_buffers, engine/model/memory_plan.cpp).
  struct BufferRole {
    bool view = false;    // runs no op: its output re-views its input, its dx re-views dy
    bool output = false;  // a model output: its activation is kept from forward to the loss and after
    bool keep = true;     // its activation is kept for a backward that reads it
    std::vector<size_t> free_after_forward;  // activations no one reads once this layer's forward ran
  };
  // Fills the buffer plan of every entry. REQUIRES: layers_ and outputs_ built.
  void plan_buffers();
  // The dtype rule of build(): an embedding reads int32 token ids (the model
  // input or a re-view of it), and only embeddings and re-views read ids.
  // Reports a violation through `report` (false); returns whether the
  // layer's output holds ids.
  static bool check_token_ids(const Model& model, const Layer& layer, const std::vector<int>& inputs,
                              const std::function<void(const std::string&)>& report);
  // Model input k in Entry::inputs: -1 for the first, -2 for the second, ...
  // (model_input, is_model_input and input_index above).
  // The tensor of entry input `in` during forward/backward.
  static const Tensor& input_tensor(int in, const ReplicaState& rs, const Tensor& x, std::span<const Tensor> extra) {
    return in >= 0 ? rs.activations[static_cast<size_t>(in)] : in == -1 ? x : extra[input_index(in) - 1];
  }
  const Shape& shape_of(int in) const {
    return is_model_input(in) ? inputs_[input_index(in)].shape : layers_[static_cast<size_t>(in)].out_shape;
  }
  const std::string& name_of(int in) const {
    return is_model_input(in) ? inputs_[input_index(in)].name : layers_[static_cast<size_t>(in)].name;
  }
  // Resolves spec.outputs (or the last layer) into outputs_; reports
  // unknown names. REQUIRES: layers_ built; value_of maps names to entries.
  void resolve_outputs(const ModelSpec& spec, const std::map<std::string, int>& value_of,
                       std::vector<std::string>& errors);
  std::vector<ModelInput> inputs_;
  std::vector<ModelOutput> outputs_;
  Shape output_shape_;
  std::vector<Entry> layers_;
  std::vector<BufferRole> roles_;  // indexed like layers_
  std::vector<VariableSpec> variables_;
};

}  // namespace dtrain
