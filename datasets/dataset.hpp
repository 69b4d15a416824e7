// The input pipeline's interface: a stream of batches with a checkpointable
// position. Built from a DataSourceSpec by make_input() (datasets/pipeline.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/profiler.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// A streaming input's exact position after one of its batches (see
// Input::state()); immutable once made, so batches may share it.
class InputState {
 public:
  virtual ~InputState() = default;
  virtual std::string text() const = 0;  // what checkpoints keep
};

struct Batch {
  Tensor features;            // (B, feature shape...): the model's (first) input
  Tensor labels;              // (B) class ids as floats, or (B, k) targets
  std::vector<int64_t> ids;   // example ids (index in the source), input order
  // Row of row 0 in the step's batch over every worker (shard: data gives
  // each worker its rows of one global batch); dropout keys rows by it.
  int64_t offset = 0;
  // The model's other inputs (model.inputs after the first), each (B, its
  // shape...), by the same rows as features; empty for a model of one input.
  std::vector<Tensor> extra_features{};
  // Streaming inputs: the input's position after this batch; null otherwise.
  std::shared_ptr<const InputState> state{};
  // The labels of the model's other outputs (model.outputs after the first),
  // each (B, its label shape...), by the same rows; empty for one output.
  std::vector<Tensor> extra_labels{};
  // (B) example weights (data.*.weight: Keras' sample_weight), by the same
  // rows; empty when the data gives none (every example weighs 1).
  Tensor weights{};
  int64_t size() const { return features.empty() ? 0 : features.dim(0); }
};

// Which value of an example a data error is about (Input::locate).
struct ExampleValue {
  bool label = false;  // a label; else a feature
  // A label's model output: 0 for Batch::labels, k for extra_labels[k - 1].
  size_t output = 0;
  // A feature's model input: 0 for Batch::features, k for extra_features[k - 1].
  size_t input = 0;
  // A feature's flat position in its example (as the batch gives it, after
  // any map); -1: the example as a whole.
  int64_t position = -1;
};

class Input {
 public:
  virtual ~Input() = default;
  // The next batch, std::nullopt at the end of the (non-repeating) input.
  // Data errors found while reading are returned as kData errors.
  virtual Result<std::optional<Batch>> next() = 0;
  // Batches delivered so far; restore(n) repositions so that the next batch
  // is the one an uninterrupted run would have delivered as batch n.
  virtual int64_t position() const = 0;
  virtual Status restore(int64_t batches_delivered) = 0;
  // Streaming inputs (data.*.stream), whose position is more than a count:
  // the exact position after the batches delivered so far, as text for a
  // checkpoint; "" for inputs that position() alone restores.
  virtual std::string state() const { return ""; }
  // Continues after `batches_delivered` batches from `state` (state() of an
  // input of the same spec) without reading what came before. Inputs
  // without a state ignore `state` and restore(batches_delivered).
  virtual Status restore_state(int64_t batches_delivered, const std::string& state) {
    (void)state;
    return restore(batches_delivered);
  }
  // Shape of one example's features / labels (without batch).
  virtual Shape feature_shape() const = 0;
  virtual Shape label_shape() const = 0;
  // The element type of the features: float32, or int32 token ids.
  virtual DType feature_dtype() const { return DType::f32; }
  // Shape and element type of each of extra_features (none for one input).
  virtual std::vector<Shape> extra_feature_shapes() const { return {}; }
  virtual std::vector<DType> extra_feature_dtypes() const { return {}; }
  // Shape of each of extra_labels (none for one output).
  virtual std::vector<Shape> extra_label_shapes() const { return {}; }
  // How the input resolved settings the caller may want to print (e.g. the
  // shard policy "auto" chose); "" when there is nothing to say. The input
  // itself prints nothing.
  virtual std::string describe() const { return ""; }
  // The names of the class ids of the (first) labels, when the data names
  // them (image_folder's folders); empty: the ids are all there is.
  virtual std::vector<std::string> class_names() const { return {}; }
  // Where `value` of example `id` (an entry of Batch::ids) is in the data,
  // for data errors: "train.csv:12" (the example), "train.csv:12:5 (column
  // \"species\")" (a label or feature field), "train-3.tfrecord: record 17
  // (feature \"label\")", "x.npz: array \"ids\", row 12, position 3"; ""
  // when the input cannot say (value_place() then names the example).
  // Thread-safe.
  virtual std::string locate(int64_t /*id*/, const ExampleValue& /*value*/) const { return ""; }
  // run.profile: where the pipeline records preparing each batch ("pipeline
  // batch", on the prefetch thread's track "input", else the caller's); null
  // stops it. Thread-safe. REQUIRES: the profiler outlives this Input.
  virtual void set_profiler(Profiler* profiler) { (void)profiler; }
};

}  // namespace dtrain
