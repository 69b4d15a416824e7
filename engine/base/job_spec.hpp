// The typed job: what config_schema/ produces from a job file after
// validation with defaults filled in. Every option of a section but model has
// a row in a field table (engine/base/job_fields.cpp), the one place its
// name, bounds and documentation are written; model's are in
// config_schema/job.schema.json and the layer table.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/device.hpp"
#include "engine/base/fields.hpp"
#include "engine/base/initializer_spec.hpp"

namespace dtrain {

struct LayerSpec {
  std::string type;            // a type of engine/layers/registry.cpp's table
  std::string name;            // optional; default "<type>", "<type>_1", ... (Keras naming)
  std::string where;           // "job.yaml:12:7" of this layer's node, for error messages
  // Names of the layers (or model inputs) this one reads; empty: the layer
  // above (the model's input for the first layer). inputs_where[i] is where
  // inputs[i] was written ("" when made by a block's expansion).
  std::vector<std::string> inputs;
  std::vector<std::string> inputs_where;
  // For a layer copied from a block: which copy, e.g. "in conv3_block1
  // (block basic, filters=32, stride=2)"; shown as a note with its errors.
  std::string note;
  std::string origin;          // "model.layers[3]" / "model.blocks.basic.layers[2]"; "": model.layers[<index>]
  // "" | relu | gelu | tanh | sigmoid | softmax: applied to the layer's
  // output (dense, conv2d, add), or the activation layer's function.
  std::string activation;
  // The type's own options struct (engine/layers/<layer>.hpp, e.g.
  // DenseSpec), read by its field table; layer_options<T>(spec) reads it.
  OptionsBox options;
};

// One model input after the first (model.inputs' second and later entries).
struct ModelInputSpec {
  std::string name;                // how layers' inputs: and the data refer to it
  std::vector<int64_t> shape;      // without batch
  std::string dtype = "float32";   // float32 | int32
  std::string where;               // "job.yaml:5:5" of its key
};

// One output of the model with its loss (model.outputs' entries).
// model.class_weight (or an output's): per class id, the factor of an
// example's training loss (Keras' class_weight); classes not listed weigh 1.
// balanced: n / (classes x count of the class) over the training labels
// (scikit-learn's compute_class_weight("balanced")).
struct ClassWeightSpec {
  bool balanced = false;
  std::vector<std::pair<int64_t, double>> weights;  // (class id, weight), in file order
  std::string where;                                // "job.yaml:12:3" of the value
  bool given() const { return balanced || !weights.empty(); }
};

struct ModelOutputSpec {
  std::string name;                   // the layer it is (its key)
  std::string loss;                   // as ModelSpec::loss
  std::string labels;                 // the npz array the labels come from (default: name)
  double weight = 1.0;                // total loss = sum of weight x this output's loss
  std::vector<std::string> metrics;   // as ModelSpec::metrics
  std::string where;                  // "job.yaml:9:5" of its key
  ClassWeightSpec class_weight{};     // as ModelSpec::class_weight
};

struct ModelSpec {
  // The first (or only) input: model.input, or model.inputs' first entry.
  std::vector<int64_t> input_shape;  // without batch, e.g. [28, 28, 1]
  std::string input_name = "input";  // how layers' inputs: refer to the model's input
  std::string input_dtype = "float32";  // float32 | int32 (token ids, read by an embedding)
  std::string input_where;              // "job.yaml:4:5" of model.inputs' first key ("" for model.input)
  // model.inputs' other entries, in file order; each example of the data
  // then gives one tensor per input, found by the input's name.
  std::vector<ModelInputSpec> extra_inputs;
  std::vector<LayerSpec> layers;
  std::string loss = "sparse_softmax_cross_entropy";  // | softmax_cross_entropy | sigmoid_cross_entropy | mean_squared_error
  std::vector<std::string> metrics;  // accuracy | mean_loss | precision | recall | mean_absolute_error
  ClassWeightSpec class_weight;      // of the one-output shorthand
  // model.outputs in file order; empty: one output, the last layer, with
  // loss and metrics above (the shorthand).
  std::vector<ModelOutputSpec> outputs;
};

struct ScheduleSpec {
  std::string type = "constant";  // constant | exponential_decay | piecewise_constant | cosine_decay
  int64_t decay_steps = 1000;     // exponential_decay, cosine_decay
  double decay_rate = 0.96;       // exponential_decay
  bool staircase = false;         // exponential_decay
  std::vector<int64_t> boundaries;  // piecewise_constant
  std::vector<double> values;       // piecewise_constant (boundaries.size() + 1)
  double alpha = 0.0;             // cosine_decay: final lr fraction
  int64_t warmup_steps = 0;       // linear warmup from 0 before any schedule
};

struct OptimizerSpec {
  std::string type = "sgd";  // sgd | adam | adamw | rmsprop | adagrad
  double learning_rate = 0.01;
  ScheduleSpec schedule;
  double momentum = 0.0;     // sgd, rmsprop
  bool nesterov = false;     // sgd
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-7;  // adam/adamw (epsilon also rmsprop/adagrad)
  double weight_decay = 0.01;     // adamw (decoupled)
  double rho = 0.9;               // rmsprop
  double initial_accumulator_value = 0.1;  // adagrad
  std::optional<double> clip_by_global_norm;
};

// One entry of strategy.devices, parsed when the job loads.
struct DeviceSpec {
  Device device;
  std::string where;  // "job.yaml:7:13" of the entry ("" when made in code)
  std::string name() const { return device.str(); }
};

struct StrategySpec {
  std::string type = "one_device";  // one_device | towers | mirrored | collective | parameter_server
  std::vector<DeviceSpec> devices;  // empty: "auto" (one CPU device, resolved by the strategy table)
  std::optional<int64_t> num_gpus;
  std::string loss_reduction = "mean";  // mean | sum
  std::string communication = "auto";   // auto | ring | nccl
  double bucket_mb = 25.0;
  std::string mode = "async";           // parameter_server: async | sync
  int64_t partition_max_shards = 1;     // parameter_server: shards per variable, at most
  double partition_min_shard_mb = 0.25; // parameter_server: a shard holds at least this much
  // collective: training goes on over the surviving workers when one is
  // lost, while at least this many training tasks remain (0: not elastic, a
  // lost worker stops the cluster).
  int64_t elastic_min_workers = 0;
  // collective: workers beyond the cluster spec may join the running
  // training while the group has fewer than this many (0: only the spec's).
  int64_t elastic_max_workers = 0;
};

struct SyntheticSpec {
  int64_t num_examples = 1024;
  std::vector<int64_t> shape{28, 28, 1};
  int64_t num_classes = 10;
  uint64_t seed = 0;
};

// data.*.synthetic_sequence: a seeded sequence task (datasets/sequence_tasks.cpp).
struct SyntheticSequenceSpec {
  std::string task = "is_sorted";  // is_sorted | reverse
  int64_t vocab_size = 16;         // tokens are ids 0 .. vocab_size-1
  int64_t sequence_length = 16;
  int64_t num_examples = 4096;
  uint64_t seed = 0;
};

// One tf.Example feature of a tfrecord source (data.*.features.<name>).
// The schema leaves the features mapping open; to_jobspec records a malformed
// entry in `problem` and the tfrecord loader reports it as a kConfig error.
struct FeatureSpec {
  std::string name;                 // the key in the Example's feature map
  std::string where;                // "job.yaml:22:14" of this feature's node
  std::string dtype;                // float | int64 | bytes
  std::string decode;               // bytes: raw_uint8 (the bytes are pixels of `shape`) | png ([h, w, c])
  std::vector<int64_t> shape;       // values per example; [] = one value; -1 = null (a jpeg's varying height, width)
  bool variable = false;            // up to num_elements(shape) values, padded with default_value
  std::optional<double> default_value;  // fills a missing feature or pads a variable one
  std::string problem;              // non-empty: what is wrong with this entry
};

// One entry of data.*.map: an operation applied to each example when its
// batch is gathered (datasets/map_ops.hpp says what each does). `op` is the
// entry's one key; an entry with none or several records that in `problem`,
// reported by the pipeline as a kConfig error at `where`.
struct MapOpSpec {
  std::string where;            // "job.yaml:30:9" of the entry
  std::string op;               // normalize | cast | one_hot | random_crop | random_flip | random_brightness |
                                // random_contrast | random_resized_crop | resize_center_crop
  std::vector<double> mean, std;  // normalize: per channel (last dimension), or one value for all
  std::string dtype;            // cast: uint8 | int8 | int32
  int64_t depth = 0;            // one_hot
  int64_t padding = 0;          // random_crop
  std::string mode;             // random_flip: horizontal
  double max_delta = 0;         // random_brightness
  double lower = 0, upper = 0;  // random_contrast
  std::vector<int64_t> size;    // random_resized_crop, resize_center_crop: [height, width] of the result
  std::vector<double> scale_range{0.08, 1.0};      // random_resized_crop: area fraction (key scale)
  std::vector<double> ratio{3.0 / 4.0, 4.0 / 3.0};  // random_resized_crop: width / height
  int64_t resize = 0;           // resize_center_crop: the shorter side before the crop
  bool fast_jpeg = true;        // random_resized_crop, resize_center_crop: DCT-scaled, fast-DCT window decode
  std::string problem;          // non-empty: what is wrong with this entry
};

// One entry of a csv source's `columns`: a feature column and how its
// values become features. A plain name or index in the job is an entry of
// type number with no fill.
struct CsvColumnSpec {
  CsvColumnSpec() = default;
  CsvColumnSpec(std::string column) : name(std::move(column)) {}  // NOLINT: a plain name reads as one
  CsvColumnSpec(const char* column) : name(column) {}               // NOLINT
  std::string name;              // header name, or 0-based index as a string
  std::string type = "number";   // number | category | text
  // A missing value (one of data.*.na_values) becomes: number: mean | median |
  // a number; category: most_frequent | a value. "" (not given): a missing
  // number is an error; a missing category is the unknown category.
  std::string fill;
  std::optional<int64_t> max_categories;  // category: keep the most frequent; the rest are unknown
  std::string encoding = "one_hot";  // category: one_hot (1 + categories features) | id (one feature, the id)
  std::string input;             // model.inputs' name it feeds ("": the model's only input)
  std::string where;             // "job.yaml:12:9" of the entry
  bool operator==(const CsvColumnSpec& o) const {
    return name == o.name && type == o.type && fill == o.fill && max_categories == o.max_categories &&
           encoding == o.encoding && input == o.input;
  }
};

// data.*.interleave: files read cycle_length at a time, block_length examples each.
struct InterleaveSpec {
  int64_t cycle_length = 1;
  int64_t block_length = 1;
};

struct DataSourceSpec {
  std::string where;        // "job.yaml:20:9" of this node
  std::string format;       // idx | csv | synthetic | synthetic_sequence | tfrecord | npy | npz | text | image_folder | text_folder
  std::string images;       // idx: path (may be .gz); resolved relative to the job file
  std::string labels;       // idx
  std::string path;         // csv
  bool header = true;       // csv
  std::string delimiter = ",";
  std::string label_column; // csv: name (with header) or index as a string; "" = last column
  std::vector<CsvColumnSpec> columns;  // csv feature columns; empty = all but the label, as numbers
  // csv: the field texts that mean "missing" (compared after trimming spaces).
  std::vector<std::string> na_values{"", "NA", "N/A", "NaN", "nan", "null", "NULL", "?"};
  std::vector<int64_t> feature_shape;  // csv: reshape of each row's features; empty = flat
  // tfrecord, text: globs (or plain paths) resolved relative to the job file;
  // read in the order given, each glob's matches sorted by name.
  std::vector<std::string> files;
  std::string compression = "auto";  // tfrecord: none | gzip | auto (gzip magic bytes)
  std::string on_error = "fail";     // tfrecord: fail | skip (corrupt records)
  std::vector<FeatureSpec> features; // tfrecord: in the order written; all but the label are concatenated
  std::string label_feature;         // tfrecord: the feature that holds the label
  std::string features_array = "images";  // npz: array name of the features
  std::string labels_array = "labels";    // npz: array name of the labels
  // csv: the column (name or index) of per-example weights; npz: the array
  // (N) of them. "" = every example weighs 1.
  std::string weight;
  std::string unit = "char";           // text: char (UTF-8 characters) | byte
  int64_t sequence_length = 0;         // text: tokens per example (0 = not given: an error for text)
  std::optional<int64_t> stride;       // text: tokens between window starts; default sequence_length
  double holdout = 0.0;                // text: fraction of the text, at its end, held out
  std::string split = "train";         // text, image_folder, text_folder: train (the text before the held-out part) | holdout
  std::string dir;                     // image_folder, text_folder: the folder of class folders
  // image_folder, text_folder: class folders in id order; empty = sorted sub-folders.
  // csv: the names a label column of names holds, in id order; empty = sorted.
  std::vector<std::string> classes;
  std::vector<int64_t> image_size{256, 256};  // image_folder: [height, width]
  std::string tokenizer = "word";      // text_folder: word | char | sentencepiece
  int64_t max_length = 0;              // text_folder: token ids per example (0 = not given: an error)
  std::optional<int64_t> max_tokens;   // text_folder: the vocabulary's cap, <pad> and <unk> included; null = none
  int64_t min_count = 1;               // text_folder: a token's fewest occurrences to be in the vocabulary
  std::string sentencepiece_model;     // text_folder, tokenizer sentencepiece: the .model file
  std::string color_mode = "rgb";      // image_folder: rgb | grayscale | rgba
  SyntheticSpec synthetic;
  SyntheticSequenceSpec synthetic_sequence;
  int64_t batch_size = 32;
  std::optional<int64_t> batch_size_per_replica;
  int64_t shuffle = 0;      // shuffle buffer size; 0 = no shuffling
  std::optional<uint64_t> seed;  // shuffle seed; default run.seed
  bool repeat = true;       // train default true; eval/predict default false
  bool drop_remainder = false;
  double scale = 1.0;       // features multiplied by scale (idx pixels: 1/255 is typical)
  int64_t skip = 0;
  std::optional<int64_t> take;
  int64_t prefetch = 2;     // batches prepared ahead on a background thread; 0 = none
  std::string shard = "auto";  // auto | file | data | off (across InputOptions::num_workers)
  std::optional<InterleaveSpec> interleave;  // null: files one after another
  std::vector<MapOpSpec> map;  // applied in order to each example
  int64_t num_parallel_calls = 1;  // threads gathering and mapping a batch; 0 = auto
  // Read, decode and batch as training goes (datasets/stream_input.hpp) or
  // read whole: true | false | nullopt = auto, resolved by
  // datasets/stream_choice.hpp (tfrecord streams, other formats are read whole).
  std::optional<bool> stream;
  std::optional<int64_t> max_buffer_mb;  // streamed: cap on what the pipeline holds; null = none
  std::string cache = "none";       // streamed: none | memory (the encoded records, read once)
};

struct DataSpec {
  std::optional<DataSourceSpec> train, eval, predict;
};

struct PrecisionSpec {
  std::string compute = "float32";  // float32 | bfloat16 | float16
  std::string matmul = "highest";   // highest | tf32
  std::string compute_where;        // "job.yaml:30:12" of precision.compute, "" when defaulted
};

// run.warm_start (Estimator's WarmStartSettings): initial values for the
// variables `vars` selects, from another run's checkpoint.
struct WarmStartSpec {
  std::string from;                  // a checkpoint file or a model_dir (its latest checkpoint); absolute
  std::string vars = ".*";           // ECMAScript regex, full match over the new model's variable names
  std::vector<std::pair<std::string, std::string>> rename;  // new-model name -> checkpoint name, file order
  bool slots = false;                // also copy the copied variables' optimizer slots
  std::string where, from_where, vars_where;  // "job.yaml:L:C" of run.warm_start, .from and .vars
  std::vector<std::pair<std::string, std::string>> rename_where;  // per rename entry: places of its key and value
};

// run.profile: the window of steps [start_step, start_step + steps) traced.
struct ProfileSpec {
  int64_t start_step = 10;
  int64_t steps = 20;
};

struct RunSpec {
  std::string model_dir = "runs/default";
  int64_t max_steps = 1000;
  std::optional<int64_t> save_checkpoints_steps;  // default 500 when neither is given
  std::optional<double> save_checkpoints_secs;
  int64_t keep_checkpoint_max = 5;
  std::optional<double> keep_checkpoint_every_n_hours;  // null: only the newest keep_checkpoint_max
  int64_t save_summary_steps = 100;
  int64_t histogram_steps = 0;  // weight and gradient histograms every this many steps; 0 = off
  int64_t summary_images = 3;   // sample input images written at the start of training (image jobs)
  int64_t log_step_count_steps = 100;
  uint64_t seed = 42;
  bool deterministic = false;
  std::optional<bool> slurm_requeue;  // run.slurm_requeue; nullopt = "auto"
  int64_t threads = 0;  // compute threads; 0 = auto (OMP_NUM_THREADS, else the thread budget)
  std::optional<WarmStartSpec> warm_start;
  std::optional<ProfileSpec> profile;
  // Gradient accumulation: each replica's shard of a batch runs as this many
  // micro-batches whose gradients are summed before the one update.
  int64_t accumulation_steps = 1;
  // Micro-batches of this many rows whose gradients every strategy adds in
  // one fixed order (nullopt: off; see the schema's description).
  std::optional<int64_t> micro_batch_rows;
};

// eval.early_stopping: stop once `metric` has not improved by more than
// min_delta for patience_evals evaluations in a row.
struct EarlyStoppingSpec {
  std::string metric = "loss";  // loss or one of model.metrics
  std::string mode = "min";     // min | max
  int64_t patience_evals = 3;
  double min_delta = 0;
};

struct EvalSpec {
  std::optional<int64_t> steps;  // null = the whole eval input
  std::optional<EarlyStoppingSpec> early_stopping;
  double throttle_secs = 60;
  double start_delay_secs = 0;
};

// The job file's `export` section: exports during training (LatestExporter,
// BestExporter) into model_dir/export/<step>/.
struct ExportSpec {
  std::string format = "onnx";
  std::string every = "eval";          // eval | final
  int64_t keep = 5;
  std::optional<std::string> best_by;  // a metric name ("loss", or one of model.metrics); null: every export
  std::string where;                   // "job.yaml:30:1" of the section, for errors
};

// cluster.task: which task of the cluster this process is.
struct ClusterTaskSpec {
  std::string type;  // chief | worker | ps | evaluator
  int64_t index = 0;
};

// The job file's `cluster` section (TF_CONFIG layout); empty when absent.
// Resolution against TF_CONFIG and Slurm happens in engine/, not here.
struct ClusterConfig {
  std::vector<std::string> chief, worker, ps, evaluator;  // "host:port"s of each task type
  std::optional<ClusterTaskSpec> task;                    // nullopt: not given in the job file
  double cluster_timeout_secs = 60;
  // The task types that list addresses, by name ("chief", "worker", ...).
  std::map<std::string, std::vector<std::string>> tasks() const {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [type, addresses] : {std::pair{"chief", &chief}, std::pair{"worker", &worker},
                                          std::pair{"ps", &ps}, std::pair{"evaluator", &evaluator}})
      if (!addresses->empty()) out[type] = *addresses;
    return out;
  }
};

struct JobSpec {
  std::string source_path;     // the job file as given
  std::string base_dir;        // directory of the job file (relative data paths resolve here)
  ModelSpec model;
  OptimizerSpec optimizer;
  StrategySpec strategy;
  ClusterConfig cluster;
  DataSpec data;
  PrecisionSpec precision;
  RunSpec run;
  EvalSpec eval;
  std::optional<ExportSpec> export_spec;  // the `export` section; absent: no export during training
  std::string resolved_yaml;   // the resolved job with defaults, as printed by `dtrain validate`
  std::string model_hash;      // hex hash of the model-shaping part (model.*), for checkpoints
};

// The field tables of the job's sections (engine/base/job_fields.cpp): the
// loader reads, the resolved job writes and the schema describes every
// section but model from these rows alone.
std::span<const Field> schedule_fields();   // ScheduleSpec
std::span<const Field> optimizer_fields();  // OptimizerSpec
std::span<const Field> early_stopping_fields();  // EarlyStoppingSpec
std::span<const Field> eval_fields();       // EvalSpec
std::span<const Field> precision_fields();  // PrecisionSpec
std::span<const Field> strategy_fields();   // StrategySpec
std::span<const Field> cluster_fields();    // ClusterConfig
std::span<const Field> run_fields();        // RunSpec
std::span<const Field> export_fields();     // ExportSpec
std::span<const Field> data_fields();       // DataSpec
std::span<const Field> data_source_fields();  // DataSourceSpec ($defs/data_source)
// A data source's description and the conditions between its fields, as JSON
// text merged into $defs/data_source.
const char* data_source_schema_extra();
// The operations of data.*.map, one row each over MapOpSpec (an entry's key
// is the row's name).
std::span<const Field> map_op_fields();
std::span<const Field> csv_column_fields();  // CsvColumnSpec (an entry of data.*.columns)
// The sections of JobSpec, as its fields: every one but model.
std::span<const Field> job_section_fields();

}  // namespace dtrain
