// The Estimator: train (resuming from model_dir), evaluate, predict and local
// train_and_evaluate for one job, through the job's strategy. One Estimator
// per process; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "datasets/pipeline.hpp"
#include "datasets/source.hpp"
#include "datasets/tabular.hpp"
#include "datasets/text_vocab.hpp"
#include "datasets/tokenizer.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/summary_writer.hpp"
#include "engine/metrics/eval_report.hpp"
#include "engine/base/status.hpp"
#include "engine/threads.hpp"
#include "estimator/hooks/training_hook.hpp"
#include "estimator/logger.hpp"
#include "estimator/run_record.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

class EarlyStopping;
struct TrainingSetup;

struct EstimatorOptions {
  LogFormat log_format = LogFormat::kAuto;
  std::FILE* log = stderr;
  // This process's membership of a multi-task cluster; null for a local run.
  // Only the chief then reads and writes model_dir; an evaluator task runs
  // evaluate_continuously().
  ClusterRuntime* cluster = nullptr;
  // Called by the chief when training stopped because a task received SIGUSR1
  // (a batch scheduler's warning), once `checkpoint` is saved and before the
  // other tasks exit (dtrain train: requeue the Slurm job). Returns what to
  // log: {message, is_warning}; an empty message logs nothing.
  std::function<std::pair<std::string, bool>(const std::string& checkpoint)> on_requeue_signal;
  // --threads: compute threads, over run.threads and OMP_NUM_THREADS
  // (engine/threads.hpp); nullopt when not given.
  std::optional<int> threads;
};

// `dtrain data bench`: what to read (estimator/input_bench.cpp).
struct InputBenchOptions {
  std::string role = "train";  // "train" or "eval": which of the job's data sources
  int64_t batches = 20;        // batches timed; 0: until the input ends (a repeating input is refused)
  int64_t warmup = 2;          // batches read and checked before the clock starts
};

// What bench_input measured over the timed batches (the warm-up excluded).
struct InputBenchResult {
  std::string stream;        // streamed or read whole, and why (datasets/stream_choice.hpp; "" if none)
  std::string description;   // the input's start-up line (Input::describe(); "" if none)
  std::string threads;       // the compute and input thread counts, as training logs them
  int64_t global_batch = 0;  // the batch size asked of the input
  Shape feature_shape;       // one example's features, checked against the model input
  int64_t warmup_batches = 0;
  int64_t batches = 0, examples = 0;
  double seconds = 0;              // wall time of the timed batches
  double feature_bytes = 0;        // bytes of the features delivered in them
  double check_seconds = 0;        // of `seconds`, the time spent checking the batches
  bool float_features = true;      // float32 features; false: int32 token ids (no mean or std)
  double feature_mean = 0, feature_std = 0;  // over every value of the timed batches (float features)
  bool ended = false;              // the input ended before `batches` (or --batches 0)
};

struct EvalResult {
  int64_t global_step = 0;
  int64_t examples = 0;
  std::vector<std::pair<std::string, double>> metrics;  // "loss" first, then job's metrics
  std::string checkpoint;
  std::vector<OutputReport> reports;  // one per model output: per class, confusion matrix, ...
};

// Where the vocabulary of text data is kept: model_dir/vocab.json.
std::string vocabulary_path(const JobSpec& job);
// model_dir/token_vocab.json: the token vocabulary of text_folder data.
std::string token_vocabulary_path(const JobSpec& job);
// text_folder data's token vocabulary: the one saved in model_dir when a
// checkpoint exists beside it (*built = false), else built from data.train's
// training split (*built = true); a kConfig error when data.train is not a
// text_folder to build it from.
Result<TokenVocabularyPtr> load_text_folder_vocabulary(const JobSpec& job, bool* built);
// Before the model is built (Estimator::setup, dtrain validate): every
// embedding of `input_dim: auto` in job.model.layers gets the size of the
// job's vocabulary (text_folder: load_text_folder_vocabulary(), into *tokens
// and *tokens_built when not null; text: model_dir/vocab.json when a
// checkpoint exists or data.train is not text, else data.train's files; csv:
// the largest id count of the columns of the model input the embedding reads,
// text vocabularies and category ids, from load_csv_preprocessing()), and
// every dense of `units: auto` the number of classes (text: that vocabulary
// size; text_folder, else image_folder: its class folders, listed without
// reading a file; csv: the label's class names). Returns the lines saying
// what was chosen ("" when nothing was auto; what finds no such data stays
// auto, and make_embedding / make_dense say what is missing).
Result<std::string> resolve_auto_vocabulary_sizes(JobSpec& job, TokenVocabularyPtr* tokens = nullptr,
                                                  bool* tokens_built = nullptr);
// model_dir/preprocessing.json: what csv columns learnt from data.train.
std::string preprocessing_path(const JobSpec& job);
// What csv columns learnt: the preprocessing saved in model_dir when a
// checkpoint exists beside it (*from = its path), else fitted on data.train
// when it is csv (*from = "data.train's file"); null when neither.
Result<TabularPtr> load_csv_preprocessing(const JobSpec& job, std::string* from);

// The shapes of data.train and data.eval that the job alone gives (formats
// synthetic, synthetic_sequence, text) against the model's input shape and
// its loss: a kConfig error at the data source's place, e.g.
// "job.yaml:20:9: data.train: sparse_softmax_cross_entropy: labels [64] do not
// fit model output [10]: ...". Run when the job loads, before any data is
// read; other formats are checked when their files are read.
Status check_declared_data_shapes(const JobSpec& job, const Program& program);

// A kConfig error "<prefix>examples have shape ... but model.input.shape is
// ..." or the same for the element type (token ids into a float32 input, or
// float features into an int32 one), with the fix; Ok when they match.
// `input`: which of the model's inputs (model.inputs()) the examples are for.
Status check_example_features(const std::string& prefix, const Shape& shape, DType dtype, const Model& model,
                              size_t input = 0);
// check_example_features for every input of the model: the input's features
// and each of its extra_features.
Status check_input_features(const std::string& prefix, const Input& input, const Model& model);
// The options' feature_dtype, input_names and extra_feature_dtypes for `model`.
void set_model_inputs(InputOptions& options, const Model& model);

class Estimator {
 public:
  static Result<std::unique_ptr<Estimator>> create(const JobSpec& job, const EstimatorOptions& options);
  ~Estimator();

  // Trains to run.max_steps from the latest checkpoint in model_dir (none:
  // from run.warm_start when given, saved as model.ckpt-0). With
  // evaluate_during (train_and_evaluate) and data.eval present, evaluates after
  // checkpoint saves as eval.throttle_secs allows, and always after the last step.
  // run.profile: traces its window of steps (estimator/profile_report.hpp).
  // With eval.early_stopping too (estimator/early_stopping.hpp), returns Ok
  // once the metric stopped improving: locally after the evaluation that
  // decides (its checkpoint saved); in a cluster, every training task at the
  // same step once the chief sees the evaluator's decision (coordination key
  // train/early_stop), the chief saving that step. A model_dir whose
  // eval/metrics-<step>.json history already says stop trains nothing.
  Status train(bool evaluate_during);
  // Evaluates a checkpoint (default: the latest) on data.eval; writes eval
  // summaries and model_dir/eval/metrics-<step>.json (+ metrics.json).
  Result<EvalResult> evaluate(const std::optional<std::string>& checkpoint);
  // The evaluator task of a cluster: follows model_dir, evaluates each new
  // checkpoint once, in step order (one deleted by keep_checkpoint_max before
  // its turn is reported as skipped), and returns after the checkpoint of
  // run.max_steps. Checkpoints with eval/metrics-<step>.json are done already.
  // With eval.early_stopping it decides, from those files and each new
  // evaluation, and sets the coordination key train/early_stop (the reason)
  // for the chief; it then goes on until the final checkpoint.
  Status evaluate_continuously();
  // After evaluate(): r's report on the log, as a table (plain and auto log
  // formats) or as one "eval_report" event (json). stdout keeps the metrics'
  // "name: value" lines only, for scripts.
  void log_eval_report(const EvalResult& r);
  // model_dir/eval/metrics-<step>.json.
  std::string eval_json_path(int64_t step) const;
  // Writes predictions for the examples of input_path (.npy, IDX, or CSV of
  // features) to output_path (.npy or .csv).
  Status predict(const std::string& input_path, const std::string& output_path,
                 const std::optional<std::string>& checkpoint);
  // Writes the inference graph of the model with a checkpoint's values
  // (default: the latest) to out_path; format: "onnx" (estimator/export.cpp).
  Status export_model(const std::string& format, const std::string& out_path,
                      const std::optional<std::string>& checkpoint);
  // Reads the job's data.<role> input, built as train() (role "train") or
  // evaluate() ("eval") build it, without training: `warmup` batches, then
  // `batches` timed ones. Each batch must have the global batch's rows (fewer
  // only for the last of an input that ends), one example's features of the
  // model input's shape, every feature value finite and its labels fit the
  // model (a kData error names the batch and the example ids otherwise). Input
  // errors are the loaders' own (kConfig / kData). Reads no checkpoint and
  // writes nothing: a text data.train builds its vocabulary from its files (as
  // a first train does), data.eval takes evaluate()'s.
  Result<InputBenchResult> bench_input(const InputBenchOptions& options);

 private:
  Estimator(const JobSpec& job, const EstimatorOptions& options);
  Status setup();
  // Chooses the compute thread count (--threads > run.threads >
  // OMP_NUM_THREADS > the thread budget), sets it and logs it with the input
  // pipeline's threads.
  void choose_compute_threads();
  Result<CheckpointData> read_compatible_checkpoint(const std::string& path) const;
  Status restore_from(const CheckpointData& ckpt);
  // write_onnx of the model with ckpt's values (checked against the model).
  // Beside an exported model: what its input and output mean (scale,
  // normalize, whether the graph holds them; class names; a csv job's
  // columns; a text job's vocabulary), as P.preprocessing.json for P.onnx.
  // Returns the file written, "" when there is nothing to say.
  Result<std::string> write_export_preprocessing(const std::string& onnx_path);
  Status export_checkpoint(const CheckpointData& ckpt, const std::string& checkpoint_path,
                           const std::string& out_path) const;
  // The job's export: section during train (estimator/exporters.cpp): after
  // an evaluation (eval; null when there was none) of last_checkpoint_, or
  // at the final step, exports it into model_dir/export/<step>/ when the
  // section asks for it (every, best_by) and deletes exports beyond keep.
  Status export_after(const EvalResult* eval, bool final_step);
  int64_t last_export_step_ = -1;
  // `checkpoint`, or else the latest in model_dir (a config error when there is none).
  Result<std::string> checkpoint_or_latest(const std::optional<std::string>& checkpoint) const;
  // Restores `checkpoint` (default: the latest in model_dir); returns its path.
  Result<std::string> restore_for_inference(const std::optional<std::string>& checkpoint);
  // input_state: Input::state() ("" for inputs that the position restores).
  Status save(int64_t input_position, const std::string& input_state = "");
  // A stop signal received before training's first step (while the job
  // loaded, the data was read, the cluster formed; stop_signals.hpp): every
  // task agrees, as after a step, the chief requeues a Slurm job on SIGUSR1,
  // and train() returns this kStopped error. Ok when none came.
  Status stop_before_first_step(bool multi_worker, bool chief);
  // Everything train() does before its first step (estimator/train_setup.cpp):
  // model_dir, the vocabulary, restore or warm start, the cluster's start
  // state, the input; sets t.nothing_to_train when there is no step to take.
  Status prepare_training(bool evaluate_during, TrainingSetup& t);
  // The loop's hooks in their order (estimator/hooks/): they refer to `t`,
  // this Estimator's logger, writer and strategy, which outlive them.
  HookList make_training_hooks(TrainingSetup& t);
  Status train_steps(bool evaluate_during);  // train() but for the run record
  // After a step at which training stops for a stop signal (`stop_signal`:
  // this task's, or -1 for another task's): the chief requeues a Slurm job on
  // SIGUSR1, every task waits for the chief's checkpoint, the ps tasks are
  // stopped; returns the kStopped error that says so.
  Status stop_after_step(int stop_signal, bool multi_worker, bool chief);
  // Elastic training, after the strategy's membership_lost(): regroups over
  // the survivors and puts global_step_ and the input back at the step to
  // redo (estimator/elastic_training.cpp).
  Status regroup_after_loss(TrainingSetup& t);
  // Elastic training, in a worker lost earlier and started again: joins the
  // running group instead of sync_start (its state, step and input position
  // from rank 0).
  Status join_running_training(TrainingSetup& t, int64_t global_rows);
  // Elastic training, after a regroup that made this worker the chief (the
  // one that hosted the coordination service was lost): it takes over
  // model_dir (stale temporaries, the latest checkpoint, run.json, the train
  // summaries) and the chief's hooks.
  Status take_chief_duties(TrainingSetup& t, HookList& hooks);
  void log_conv_algorithms();
  // When a task received SIGUSR1: options_.on_requeue_signal for `checkpoint`, logged.
  void requeue(const std::string& checkpoint);
  // run.warm_start (a run with no checkpoint of its own): restores the
  // warm-started state through the strategy and logs what was copied and
  // every variable left to its initializer.
  Status warm_start();
  Result<EvalResult> run_evaluation(const std::string& checkpoint_name);
  // The input of `spec` (data.<role>) as training and evaluation read it:
  // InputOptions for the model's inputs and outputs, `batch` rows per step,
  // this worker's share when `split_over_workers`, text sources' `vocabulary`;
  // then its features and labels checked against the model. The source's
  // stream decision (datasets/stream_choice.hpp) goes to `stream_line` when
  // given, else to the log the first time each source is opened.
  Result<std::unique_ptr<Input>> open_input(const DataSourceSpec& spec, const char* role, int64_t batch,
                                            VocabularyPtr vocabulary, bool split_over_workers,
                                            std::string* stream_line = nullptr);
  Status write_eval_outputs(const EvalResult& r);
  // predict --input of image files: decoded as data.train (an image_folder)
  // reads its images: image_size, color_mode and scale; `class_names` gets
  // its classes. A config error for a job whose data.train is not one.
  Result<Tensor> read_predict_images(const std::vector<std::string>& files, std::vector<std::string>& class_names);
  // class_weight: balanced: counts the classes of data.train's labels (all
  // of them, one pass, in every task alike), sets the outputs' weights and
  // logs them; nothing when no output asks for it.
  Status resolve_balanced_class_weights(const DataSourceSpec& train_spec, int64_t batch);
  // eval.early_stopping's metric (REQUIRES: the job has early_stopping), and
  // its value in `r` (NaN when absent).
  const std::string& early_metric() const { return job_.eval.early_stopping->metric; }
  static double metric_value(const EvalResult& r, const std::string& metric);
  // Training stops early: writes model_dir/eval/early_stopping.json and the
  // eval scalar early_stopping/stopped = 1 at the stopping evaluation's step.
  Status record_early_stop(const EarlyStopping& early);
  // A data error when a layer cannot take a value of the features (an
  // embedding's id out of range) or a sparse loss meets a label outside
  // [0, classes): "<spec.where>: data.train: train.csv:14:3 (column
  // \"city\"): id 57 of model.input is out of range for layer \"embed\"
  // (input_dim 50: ids 0..49)". `input` (that gave the batch) names the place
  // of the bad value in the data (value_place()).
  Status check_batch(const Batch& b, const DataSourceSpec& spec, const char* role, const Input& input) const;
  // The rows of a step of source d under the strategy (engine/base/batch_plan.hpp);
  // a config error when a replica would get none.
  Result<BatchPlan> batch_plan(const DataSourceSpec& d, const char* role) const;
  // Text data (estimator/vocabulary.cpp). Training: builds vocabulary_ from
  // data.train's files and checks that the model's output has a class for
  // each id; the chief then saves it to vocabulary_path() or, when a saved
  // one exists, requires it to be the same (kConfig errors otherwise).
  Status prepare_training_vocabulary(bool chief);
  // Evaluation: vocabulary_, else the saved one, else one built from data.train.
  Result<VocabularyPtr> evaluation_vocabulary();
  // data.eval's unit against vocabulary_'s (kConfig error).
  Status check_vocabulary_units() const;
  // Every id of vocabulary_ is a class of the model output (kConfig error).
  Status check_vocabulary_fits_model(const DataSourceSpec& spec, const char* role) const;
  // csv data (estimator/preprocessing.cpp). Training: fits data.train's
  // columns (categories, fills, class names) into tabular_; the chief saves
  // it to preprocessing_path(), or, resuming from a checkpoint, reads the
  // saved one instead (a kConfig error when the job's columns differ).
  Status prepare_training_tabular(bool chief);
  // Evaluation and predict: tabular_, else the saved one, else one fitted
  // on data.train; null when data.train's columns learn nothing (numbers
  // only), so that a csv source reads its own columns.
  Result<TabularPtr> evaluation_tabular();
  // text_folder data (estimator/token_vocabulary.cpp): the token vocabulary:
  // token_vocab_, else the one saved in model_dir when a checkpoint exists
  // beside it (a file of a run that failed before its first checkpoint binds
  // nothing), else built from data.train's training split (a kConfig error
  // when data.train is not a text_folder to build it from).
  Result<TokenVocabularyPtr> text_folder_vocabulary();
  // Training: text_folder_vocabulary(); the chief saves one it built.
  Status prepare_training_token_vocabulary(bool chief);
  // open_input: a text_folder source's vocabulary into `options`.
  Status attach_token_vocabulary(const DataSourceSpec& spec, InputOptions& options);
  // dtrain::resolve_auto_vocabulary_sizes on job_ (keeping a text_folder
  // vocabulary it loads in token_vocab_), its lines logged.
  Status resolve_auto_vocabulary_sizes();
  // predict --input of .txt files: tokenized as data.train (a text_folder)
  // tokenizes them, with its vocabulary; `class_names` gets its classes.
  Result<Tensor> read_predict_texts(const std::vector<std::string>& files, std::vector<std::string>& class_names);
  // predict --input rows.csv: the file's rows read as data.train's columns
  // (a label column is optional), as a source (its gather() gives the
  // features, and for several model inputs the columns of each; its locate()
  // names a row's line); `class_names` gets data.train's.
  Result<SourcePtr> read_predict_csv(const std::string& file, std::vector<std::string>& class_names);

  JobSpec job_;
  EstimatorOptions options_;
  Logger log_;
  Program program_;
  std::unique_ptr<Strategy> strategy_;
  ThreadChoice threads_;  // the compute threads and who chose them
  std::string threads_line_;  // the start-up line about them, until log_threads() prints it
  void log_threads();         // prints threads_line_ once
  int64_t global_step_ = 0;
  int64_t restored_input_position_ = 0;
  // Elastic training after a lost worker: the global batch the survivors
  // split (0: each worker's batch_size, as at the start).
  int64_t elastic_global_rows_ = 0;
  std::vector<int64_t> elastic_row_cuts_;  // and where each survivor's rows begin
  std::string restored_input_state_;  // a streaming input's exact position; "" otherwise
  std::vector<std::string> stream_told_;  // the sources ("data.eval") whose stream decision was logged
  std::string last_checkpoint_;
  RunRecord run_record_;  // model_dir/run.json (the chief of a training run)
  bool warm_started_ = false;  // train() started from run.warm_start
  bool stopped_by_requeue_signal_ = false;  // train() stopped because a task of the cluster received SIGUSR1
  VocabularyPtr vocabulary_;  // of text data; null until needed
  TabularPtr tabular_;        // of csv data that learns from data.train; null until needed or when none
  TokenVocabularyPtr token_vocab_;  // of text_folder data; null until needed
  bool token_vocab_built_ = false;  // token_vocab_ was built from the data (not read from model_dir)
  std::unique_ptr<SummaryWriter> train_writer_, eval_writer_;
};

}  // namespace dtrain
