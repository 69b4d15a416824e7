// Builds the input pipeline a DataSourceSpec describes:
//   source (idx | csv | synthetic | text | ...) -> skip/take -> shuffle -> repeat -> batch
//   -> scale -> prefetch (background thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/base/batch_plan.hpp"
#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

class TextVocabulary;
class TokenVocabulary;
struct TabularPreprocessing;

struct InputOptions {
  std::string base_dir;        // relative paths in the spec resolve against it
  int64_t global_batch = 0;    // rows this process reads per step (the caller's BatchPlan::per_process)
  uint64_t default_seed = 0;   // run.seed; used when spec.seed is not set
  std::string name = "data";   // the spec's key in the job ("data.train"), for messages
  int num_workers = 1;         // workers reading this input together (spec.shard splits the examples)
  int worker_index = 0;        // this worker, in [0, num_workers)
  // Elastic training after a lost worker: the rows of one batch over every
  // worker, which the survivors split as evenly as they can (0: global_batch
  // x num_workers, an equal share each).
  int64_t rows_over_workers = 0;
  // With it, where each worker's rows of such a batch begin (num_workers + 1
  // boundaries; empty: as even as the rows allow). A shorter last batch is
  // cut evenly.
  std::vector<int64_t> row_cuts{};
  // The batch as the input sees it: per_process = global_batch, over num_workers.
  BatchPlan batch_plan() const { return BatchPlan{global_batch, 1, num_workers}; }
  // The rows the input orders as one batch (BatchPlan::ordered).
  int64_t ordered_batch(bool rows_across_workers) const {
    return rows_across_workers && rows_over_workers > 0 ? rows_over_workers : batch_plan().ordered(rows_across_workers);
  }
  // Text sources: the vocabulary giving token ids (the one saved with the
  // model); null: a text source builds one from its own files.
  std::shared_ptr<const TextVocabulary> vocabulary = nullptr;
  // csv sources: the preprocessing fitted on data.train (the one saved with
  // the model); null: a csv source fits its own file.
  std::shared_ptr<const TabularPreprocessing> tabular = nullptr;
  // text_folder sources: the token vocabulary (the one saved with the
  // model); null: built from the training split of the source's folder.
  std::shared_ptr<const TokenVocabulary> tokens = nullptr;
  // The features the model reads: float32, or int32 token ids. A source of
  // float32 features (npy, npz, csv, tfrecord) is converted to int32 ids
  // batch by batch, each value checked to be a whole number in int32's range
  // (a kData error names the value's place in the data: value_place()).
  // Token sources give int32 already; asking float32 of them is left to the
  // caller to refuse.
  DType feature_dtype = DType::f32;
  // A model of several inputs: their names, in order (the first gives the
  // batches' features, the others their extra_features, each read from the
  // data by name; see SourceContext::inputs), and the dtypes of the others
  // (converted as feature_dtype is). Empty: one input.
  std::vector<std::string> input_names{};
  std::vector<DType> extra_feature_dtypes{};
  // A model of several outputs: their names and their labels' names in the
  // data, in order (the first gives the batches' labels, the others their
  // extra_labels; see SourceContext::outputs). Empty: one output.
  std::vector<std::string> output_names{};
  std::vector<std::string> label_names{};
};

// Loads the source (reading whole files: MNIST-sized data fits in memory) and
// returns the pipeline. Missing/malformed files give kData errors naming the
// file (and for CSV, line and column). A spec that does not fit the data
// (skip/take leaving no examples, unknown CSV column, global_batch <= 0) gives
// kConfig errors starting "<spec.where>: <options.name>: ".
// The returned Input runs at most one background thread (when spec.prefetch
// > 0), started by the first next(); it is used from one thread at a time.
Result<std::unique_ptr<Input>> make_input(const DataSourceSpec& spec, const InputOptions& options);

// input.locate(id, value), or where the input cannot say, the example's
// number in the source: "example 40 of the source" (a feature value adds
// ", position 2").
std::string value_place(const Input& input, int64_t id, const ExampleValue& value);

}  // namespace dtrain
