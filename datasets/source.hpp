// Example sources (idx, csv, synthetic, text, ...): a whole data set loaded
// once (or, for synthetic_sequence, computed per example), from which the
// pipeline gathers batches by example index.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "datasets/dataset.hpp"
#include "datasets/pipeline.hpp"
#include "datasets/tabular.hpp"
#include "datasets/text_vocab.hpp"
#include "datasets/tokenizer.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// An immutable, fully loaded data set. Thread safety: every method is const and
// reads only state fixed at construction, so any thread may call gather().
class ExampleSource {
 public:
  virtual ~ExampleSource() = default;
  virtual int64_t size() const = 0;            // number of examples
  virtual Shape feature_shape() const = 0;     // one example's features, e.g. [28, 28, 1]
  virtual Shape label_shape() const = 0;       // [] for class ids, [k] for targets
  // The shapes of gather()'s extra_features (the model's inputs after the
  // first, SourceContext::inputs); empty for sources of one features tensor.
  virtual std::vector<Shape> extra_feature_shapes() const { return {}; }
  // The label shapes of the model's outputs after the first
  // (SourceContext::label_names); empty for sources of one labels tensor.
  virtual std::vector<Shape> extra_label_shapes() const { return {}; }
  // What to call the data in messages: the file name, or "synthetic data".
  virtual std::string describe() const = 0;
  // The examples `indices` (each in [0, size())), in that order:
  //   features (B, feature_shape...) multiplied by `scale`,
  //   labels   (B, label_shape...), ids = indices,
  //   extra_features (B, extra_feature_shapes()[k]...) multiplied by `scale`,
  //   extra_labels (B, extra_label_shapes()[k]...).
  virtual Batch gather(const std::vector<int64_t>& indices, float scale) const = 0;
  // The first example of each file the examples come from, ascending, starting
  // with 0 (file f holds examples file_starts()[f] .. the next start - 1, the
  // last file up to size() - 1). Used by file sharding and interleave.
  virtual std::vector<int64_t> file_starts() const { return {0}; }
  // The element type of gather()'s features: float32, or kTokenDType
  // (datasets/token_ids.hpp) for sources of token ids.
  virtual DType feature_dtype() const { return DType::f32; }
  // Input::class_names() of the source's labels.
  virtual std::vector<std::string> class_names() const { return {}; }
  // Input::locate() of `value` of example `id` (in [0, size())), before any
  // map: feature positions index gather()'s example.
  virtual std::string locate(int64_t /*id*/, const ExampleValue& /*value*/) const { return ""; }
  // Whether gather() gives Batch::weights (data.*.weight).
  virtual bool has_weights() const { return false; }
  // What the source found that start-up should print (the text source's
  // vocabulary and unigram entropy); "" when nothing.
  virtual std::string summary() const { return ""; }
};

using SourcePtr = std::shared_ptr<const ExampleSource>;

// ExampleSource::locate() of a source made of tensors (make_tensor_source).
using ExampleLocator = std::function<std::string(int64_t id, const ExampleValue& value)>;

struct SourceContext {
  std::string base_dir;  // relative paths in the spec resolve against it
  std::string prefix;    // starts kConfig messages: "job.yaml:20:9: data.train: "
  VocabularyPtr vocabulary = nullptr;  // text: the token ids to use (null: built from the source's files)
  // The model's input names when it has several (model.inputs): the source
  // gives each example one tensor per input, found by name (npz arrays,
  // tf.Example features); empty: one input, the source's usual features.
  std::vector<std::string> inputs{};
  // The model's outputs when it has several (model.outputs): their names and
  // the names of their labels in the data (npz arrays); empty: one output,
  // the source's usual labels.
  std::vector<std::string> outputs{};
  std::vector<std::string> label_names{};
  // csv: the preprocessing fitted on data.train (model_dir/preprocessing.json);
  // null: fitted on the source's own file.
  std::shared_ptr<const TabularPreprocessing> tabular = nullptr;
  // predict: the label column may be absent; gather()'s labels are zeros.
  bool without_labels = false;
  // text_folder: the token vocabulary saved with the model (null: built from
  // the training split of the source's own folder).
  std::shared_ptr<const TokenVocabulary> tokens = nullptr;
};

// A kConfig error ("<prefix>format idx gives ...") when the model has several
// inputs (`inputs`, as SourceContext::inputs) and spec's format cannot give
// a tensor per input by name; OK otherwise. load_source() checks it first;
// callers use it to refuse a job before any data is read.
Status check_source_inputs(const DataSourceSpec& spec, const std::vector<std::string>& inputs,
                           const std::string& prefix);

// A kConfig error when spec gives a weight (data.*.weight) and its format
// cannot give example weights.
Status check_source_weights(const DataSourceSpec& spec, const std::string& prefix);
// A kData error naming `where` and the example when a weight (N) is not
// finite or is negative.
Status check_example_weights(const Tensor& weights, const std::string& where);

// The same for several outputs (`outputs`, as SourceContext::outputs): a
// kConfig error when spec's format cannot give labels per output by name.
Status check_source_outputs(const DataSourceSpec& spec, const std::vector<std::string>& outputs,
                            const std::string& prefix);

// Loaders, one per format (one file each). Malformed files give kData errors
// naming the file; a spec that does not fit good data (unknown column, bad
// reshape) gives kConfig errors starting with ctx.prefix.
Result<SourcePtr> load_idx_source(const DataSourceSpec& spec, const SourceContext& ctx);
Result<SourcePtr> load_csv_source(const DataSourceSpec& spec, const SourceContext& ctx);
// What a csv source learns from its file (datasets/tabular.hpp): the feature
// columns, each category column's vocabulary, fills, the label's class names.
Result<TabularPreprocessing> fit_csv_source(const DataSourceSpec& spec, const SourceContext& ctx);
Result<SourcePtr> make_synthetic_source(const DataSourceSpec& spec, const SourceContext& ctx);
Result<SourcePtr> make_sequence_task_source(const DataSourceSpec& spec, const SourceContext& ctx);

// The one table from format name to loader: "idx", "csv", "synthetic",
// "synthetic_sequence", "tfrecord", "npy", "npz", "text", "image_folder", "text_folder".
// Unknown formats give a kConfig error listing the known ones.
Result<SourcePtr> load_source(const DataSourceSpec& spec, const SourceContext& ctx);

// One example's feature and label shapes (without batch).
struct ExampleShapes {
  Shape features, labels;
  DType features_dtype = DType::f32;  // kTokenDType for sources of token ids
};

// The shapes of the examples of `spec` when the spec alone gives them
// (formats synthetic, synthetic_sequence, text), without reading any data;
// nullopt for formats whose shapes come from their files, and for a spec
// whose loader would reject it anyway (it reports why).
std::optional<ExampleShapes> declared_shapes(const DataSourceSpec& spec);
std::optional<ExampleShapes> synthetic_shapes(const DataSourceSpec& spec);
std::optional<ExampleShapes> sequence_task_shapes(const DataSourceSpec& spec);
std::optional<ExampleShapes> text_shapes(const DataSourceSpec& spec);

// `path` if absolute or `base_dir` is empty, else base_dir/path.
std::string resolve_source_path(const std::string& path, const std::string& base_dir);

// A source over data already in memory: features (N, feature shape...) and
// labels (N) or (N, k). Used by the synthetic and csv loaders and by tests.
// REQUIRES: features.dim(0) == labels.dim(0).
SourcePtr make_tensor_source(Tensor features, Tensor labels, std::string name);
// The same, its examples coming from files that start at `file_starts`
// (ExampleSource::file_starts(): ascending, the first 0), for loaders that
// read several files, so that shard: file and interleave can use them.
SourcePtr make_tensor_source(Tensor features, Tensor labels, std::string name, std::vector<int64_t> file_starts);
// The same for several inputs: features[0] is gather()'s features, the
// others its extra_features. REQUIRES: every tensor has labels.dim(0) rows.
SourcePtr make_tensor_source(std::vector<Tensor> features, Tensor labels, std::string name,
                             std::vector<int64_t> file_starts);
// The same for several outputs: labels[0] is gather()'s labels, the others
// its extra_labels; `weights` (N) or empty: gather()'s Batch::weights;
// `class_names` and `summary`: the source's class_names() and summary().
// REQUIRES: every tensor has the same number of rows.
SourcePtr make_tensor_source(std::vector<Tensor> features, std::vector<Tensor> labels, std::string name,
                             std::vector<int64_t> file_starts, Tensor weights = {},
                             std::vector<std::string> class_names = {}, std::string summary = "",
                             ExampleLocator locate = nullptr);

// Rows of concatenated inputs, `rows` (N, sum of the shapes' sizes) in
// row-major order, as one tensor (N, shape...) per shape.
std::vector<Tensor> split_inputs(const std::vector<float>& rows, int64_t n, const std::vector<Shape>& shapes);

// make_input() over a source already loaded: the pipeline stages of `spec`
// (skip, take, shuffle, repeat, batch, scale, prefetch) on `source`.
Result<std::unique_ptr<Input>> make_pipeline(SourcePtr source, const DataSourceSpec& spec, const InputOptions& options);

}  // namespace dtrain
