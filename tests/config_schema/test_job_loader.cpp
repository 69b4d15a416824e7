// load_job: defaults, layer naming, data paths, round trip of the resolved
// YAML, model hash, check_for_command, and errors reading the job file.
#include <doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "config_schema/job_json.hpp"
#include "job_test_util.hpp"
#include "engine/layers/batch_norm.hpp"
#include "engine/layers/conv2d.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/dropout.hpp"
#include "engine/layers/pool2d.hpp"
#include "engine/layers/registry.hpp"
#include "engine/layers/reshape.hpp"

namespace dtrain {
namespace {

namespace fs = std::filesystem;
using testing::kMinimalJob;
using testing::load_error;
using testing::load_text;
using testing::options_with_env;

JobSpec load_ok(const std::string& yaml, const LoadOptions& options = options_with_env()) {
  Result<JobSpec> r = load_text(yaml, options);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  return r.value();
}

// A job that sets every field to something other than its default.
const char* kFullJob = R"(model:
  input: {shape: [28, 28, 1]}
  layers:
    - {type: conv2d, name: c1, filters: 8, kernel: [3, 5], strides: 2, padding: same, dilation: [1, 2],
       activation: gelu, use_bias: false, kernel_initializer: he_normal, bias_initializer: {type: constant, value: 0.25}}
    - {type: batch_norm, momentum: 0.9, epsilon: 0.01}
    - {type: activation, activation: tanh}
    - {type: avg_pool2d, size: [2, 3], strides: [1, 1], padding: valid}
    - {type: max_pool2d, size: 3}
    - {type: reshape, target_shape: [12, 1]}
    - {type: flatten}
    - {type: dropout, rate: 0.3}
    - {type: dense, units: 5, activation: softmax, kernel_initializer: ones, bias_initializer: ones}
  loss: softmax_cross_entropy
  metrics: [accuracy, mean_loss, precision]
optimizer:
  type: adamw
  learning_rate: 0.003
  schedule: {type: piecewise_constant, boundaries: [100, 200], values: [0.1, 0.01, 0.001], decay_steps: 10,
             decay_rate: 0.5, staircase: true, alpha: 0.1, warmup_steps: 5}
  momentum: 0.5
  nesterov: true
  beta1: 0.8
  beta2: 0.99
  epsilon: 1.0e-8
  weight_decay: 0.001
  rho: 0.8
  initial_accumulator_value: 0.2
  clip_by_global_norm: 5
strategy: {type: collective, devices: [cpu:0, cpu:1], loss_reduction: sum, communication: ring, bucket_mb: 4}
cluster:
  chief: [host0:2222]
  worker: [host1:2222, host2:2222]
  ps: [host3:2222]
  evaluator: [host4:2222]
  task: {type: worker, index: 1}
  timeout_secs: 30
data:
  train: {format: idx, images: mnist/train-images.gz, labels: /abs/labels.gz, batch_size_per_replica: 16,
          shuffle: 100, seed: 3, repeat: false, drop_remainder: true, scale: 0.00392156862745098, skip: 2,
          take: 50, prefetch: 0}
  eval: {format: csv, path: "weird $${x}: name.csv", header: false, delimiter: ";", label_column: 4,
         columns: [a, 2], feature_shape: [2, 2], batch_size: 10, repeat: true}
  predict: {format: synthetic, synthetic: {num_examples: 7, shape: [3], num_classes: 2, seed: 9}}
run:
  model_dir: /tmp/run dir
  max_steps: 77
  save_checkpoints_secs: 30.5
  keep_checkpoint_max: 2
  keep_checkpoint_every_n_hours: 0.25
  save_summary_steps: 0
  histogram_steps: 25
  summary_images: 0
  log_step_count_steps: 7
  seed: 1234
  deterministic: true
  slurm_requeue: false
  accumulation_steps: 4
eval: {steps: 3, throttle_secs: 1.5, start_delay_secs: 2, early_stopping: {mode: max, patience_evals: 4}}
)";

TEST_CASE("job_loader: a minimal job gets the defaults of job_spec.hpp") {
  const JobSpec job = load_ok(kMinimalJob);
  const JobSpec d;
  CHECK(job.source_path == "job.yaml");
  CHECK(job.base_dir == "/data/jobs");
  CHECK(job.model.input_shape == std::vector<int64_t>{784});
  REQUIRE(job.model.layers.size() == 1);
  const LayerSpec& l = job.model.layers[0];
  CHECK(l.name == "dense");
  CHECK(l.where == "job.yaml:4:7");
  CHECK(l.activation.empty());
  const auto& dense = layer_options<DenseSpec>(l);
  CHECK(dense.use_bias);
  CHECK(dense.kernel_initializer.type == "glorot_uniform");
  CHECK(dense.bias_initializer.type == "zeros");
  CHECK(job.model.loss == d.model.loss);
  CHECK(job.model.metrics.empty());
  CHECK(job.optimizer.type == "sgd");
  CHECK(job.optimizer.learning_rate == d.optimizer.learning_rate);
  CHECK(job.optimizer.schedule.type == "constant");
  CHECK_FALSE(job.optimizer.clip_by_global_norm.has_value());
  CHECK(job.strategy.type == "one_device");
  CHECK(job.strategy.devices.empty());  // auto
  CHECK_FALSE(job.strategy.num_gpus.has_value());
  CHECK(job.cluster.tasks().empty());
  CHECK(!job.cluster.task);
  CHECK(job.cluster.cluster_timeout_secs == 60);
  CHECK_FALSE(job.data.train.has_value());
  CHECK_FALSE(job.data.eval.has_value());
  CHECK(job.run.model_dir == "runs/default");
  CHECK(job.run.max_steps == 1000);
  CHECK(job.run.save_checkpoints_steps == std::optional<int64_t>(500));
  CHECK_FALSE(job.run.slurm_requeue.has_value());  // auto
  CHECK_FALSE(job.run.save_checkpoints_secs.has_value());
  CHECK(job.run.seed == 42);
  CHECK(job.run.histogram_steps == 0);
  CHECK(job.run.summary_images == 3);
  CHECK_FALSE(job.eval.steps.has_value());
  CHECK(job.eval.throttle_secs == 60);
}

TEST_CASE("job_loader: defaults that depend on the role or on other fields") {
  const JobSpec job = load_ok(std::string(kMinimalJob) +
                              "data:\n  train: {format: synthetic}\n  eval: {format: synthetic}\n"
                              "  predict: {format: synthetic}\nrun: {save_checkpoints_secs: 60}\n");
  CHECK(job.data.train->repeat);
  CHECK_FALSE(job.data.eval->repeat);
  CHECK_FALSE(job.data.predict->repeat);
  CHECK(job.data.train->where == "job.yaml:6:10");
  CHECK(job.data.train->batch_size == 32);
  CHECK(job.data.train->synthetic.shape == std::vector<int64_t>{28, 28, 1});
  CHECK_FALSE(job.run.save_checkpoints_steps.has_value());
  CHECK(job.run.save_checkpoints_secs == std::optional<double>(60));
}

TEST_CASE("job_loader: sizes, pool strides and Keras layer names") {
  const JobSpec job = load_ok(
      "model:\n  input: {shape: [28, 28, 1]}\n  layers:\n"
      "    - {type: conv2d, filters: 4, kernel: 3}\n"
      "    - {type: max_pool2d}\n"
      "    - {type: conv2d, filters: 4, kernel: [1, 2], strides: [2, 1]}\n"
      "    - {type: max_pool2d, size: 3}\n"
      "    - {type: conv2d, name: conv2d_1, filters: 4, kernel: 1}\n"
      "    - {type: conv2d, filters: 4, kernel: 1}\n"
      "    - {type: flatten}\n");
  const auto& ls = job.model.layers;
  REQUIRE(ls.size() == 7);
  auto conv = [&](size_t i) { return layer_options<Conv2dSpec>(ls[i]); };
  auto pool = [&](size_t i) { return layer_options<Pool2dSpec>(ls[i]); };
  CHECK(conv(0).kernel == std::vector<int64_t>{3, 3});
  CHECK(conv(0).strides == std::vector<int64_t>{1, 1});
  CHECK(conv(0).dilation == std::vector<int64_t>{1, 1});
  CHECK(pool(1).size == std::vector<int64_t>{2, 2});
  CHECK(pool(1).strides == std::vector<int64_t>{2, 2});
  CHECK(conv(2).kernel == std::vector<int64_t>{1, 2});
  CHECK(conv(2).strides == std::vector<int64_t>{2, 1});
  CHECK(pool(3).strides == std::vector<int64_t>{3, 3});
  std::vector<std::string> names;
  for (const LayerSpec& l : ls) names.push_back(l.name);
  // conv2d_1 is taken by an explicit name, so the generated names skip it.
  CHECK(names == std::vector<std::string>{"conv2d", "max_pool2d", "conv2d_2", "max_pool2d_1", "conv2d_1", "conv2d_3", "flatten"});
}

TEST_CASE("job_loader: every field can be set from YAML") {
  const JobSpec job = load_ok(kFullJob);
  const LayerSpec& l0 = job.model.layers[0];
  const auto& c = layer_options<Conv2dSpec>(l0);
  CHECK(l0.name == "c1");
  CHECK(c.kernel == std::vector<int64_t>{3, 5});
  CHECK(c.strides == std::vector<int64_t>{2, 2});
  CHECK(c.padding == "same");
  CHECK(c.dilation == std::vector<int64_t>{1, 2});
  CHECK(l0.activation == "gelu");
  CHECK_FALSE(c.use_bias);
  CHECK(c.kernel_initializer.type == "he_normal");
  CHECK(c.bias_initializer.type == "constant");
  CHECK(c.bias_initializer.value == 0.25f);
  CHECK(layer_options<BatchNormSpec>(job.model.layers[1]).momentum == 0.9f);
  CHECK(layer_options<BatchNormSpec>(job.model.layers[1]).epsilon == 0.01f);
  CHECK(job.model.layers[2].activation == "tanh");
  CHECK(layer_options<Pool2dSpec>(job.model.layers[3]).size == std::vector<int64_t>{2, 3});
  CHECK(layer_options<Pool2dSpec>(job.model.layers[3]).strides == std::vector<int64_t>{1, 1});
  CHECK(layer_options<ReshapeSpec>(job.model.layers[5]).target_shape == std::vector<int64_t>{12, 1});
  CHECK(layer_options<DropoutSpec>(job.model.layers[7]).rate == 0.3f);
  CHECK(layer_options<DenseSpec>(job.model.layers[8]).units == 5);
  CHECK(job.model.metrics == std::vector<std::string>{"accuracy", "mean_loss", "precision"});
  const OptimizerSpec& o = job.optimizer;
  CHECK(o.type == "adamw");
  CHECK(o.schedule.boundaries == std::vector<int64_t>{100, 200});
  CHECK(o.schedule.values == std::vector<double>{0.1, 0.01, 0.001});
  CHECK(o.schedule.staircase);
  CHECK(o.schedule.warmup_steps == 5);
  CHECK(o.nesterov);
  CHECK(o.epsilon == 1e-8);
  CHECK(o.clip_by_global_norm == std::optional<double>(5));
  REQUIRE(job.strategy.devices.size() == 2);
  CHECK(job.strategy.devices[0].device == Device{DeviceKind::cpu, 0});
  CHECK(job.strategy.devices[1].name() == "cpu:1");
  CHECK(job.strategy.devices[1].where == "job.yaml:30:47");  // parsed at load, with the entry's place
  CHECK(job.strategy.communication == "ring");
  CHECK(job.strategy.bucket_mb == 4);
  CHECK(job.cluster.worker == std::vector<std::string>{"host1:2222", "host2:2222"});
  CHECK(job.cluster.tasks().size() == 4);
  REQUIRE(job.cluster.task);
  CHECK(job.cluster.task->type == "worker");
  CHECK(job.cluster.task->index == 1);
  CHECK(job.cluster.cluster_timeout_secs == 30);
  const DataSourceSpec& t = *job.data.train;
  CHECK(t.images == "/data/jobs/mnist/train-images.gz");
  CHECK(t.labels == "/abs/labels.gz");
  CHECK(t.batch_size_per_replica == std::optional<int64_t>(16));
  CHECK(t.seed == std::optional<uint64_t>(3));
  CHECK_FALSE(t.repeat);
  CHECK(t.take == std::optional<int64_t>(50));
  CHECK(t.prefetch == 0);
  const DataSourceSpec& e = *job.data.eval;
  CHECK(e.path == "/data/jobs/weird ${x}: name.csv");
  CHECK_FALSE(e.header);
  CHECK(e.delimiter == ";");
  CHECK(e.label_column == "4");
  CHECK(e.columns == std::vector<CsvColumnSpec>{"a", "2"});
  CHECK(e.repeat);
  CHECK(job.data.predict->synthetic.num_examples == 7);
  CHECK(job.data.predict->synthetic.seed == 9);
  CHECK(job.run.model_dir == "/tmp/run dir");
  CHECK(job.run.save_checkpoints_secs == std::optional<double>(30.5));
  CHECK_FALSE(job.run.save_checkpoints_steps.has_value());
  CHECK(job.run.deterministic);
  CHECK(job.run.slurm_requeue == std::optional<bool>(false));
  CHECK(job.eval.steps == std::optional<int64_t>(3));
  CHECK(job.eval.start_delay_secs == 2);
  CHECK(job.run.keep_checkpoint_every_n_hours == std::optional<double>(0.25));
  CHECK(job.run.accumulation_steps == 4);
  CHECK(job.run.histogram_steps == 25);
  CHECK(job.run.summary_images == 0);
  REQUIRE(job.eval.early_stopping.has_value());
  CHECK(job.eval.early_stopping->metric == "loss");  // defaults fill what is not given
  CHECK(job.eval.early_stopping->mode == "max");
  CHECK(job.eval.early_stopping->patience_evals == 4);
  CHECK(job.eval.early_stopping->min_delta == 0);
}

TEST_CASE("job_loader: the resolved YAML loads back to the same job") {
  for (const std::string& text : {std::string(kMinimalJob), std::string(kFullJob)}) {
    const JobSpec first = load_ok(text);
    const JobSpec second = load_ok(first.resolved_yaml);
    CHECK(second.resolved_yaml == first.resolved_yaml);
    CHECK(second.model_hash == first.model_hash);
    CHECK(resolved_json(second) == resolved_json(first));
  }
}

// The sequence formats: text (files as a glob or a list, resolved against the
// job file's directory; its options) and synthetic_sequence; their options
// appear in the resolved YAML of those formats only, and it loads back.
TEST_CASE("job_loader: text and synthetic_sequence sources") {
  const JobSpec job = load_ok(std::string(kMinimalJob) +
                              "data:\n"
                              "  train: {format: text, files: [corpus/*.txt, /abs/extra.txt], unit: byte,\n"
                              "          sequence_length: 64, stride: 16, holdout: 0.25}\n"
                              "  eval: {format: text, files: corpus/*.txt, sequence_length: 64, holdout: 0.25, "
                              "split: holdout}\n"
                              "  predict: {format: synthetic_sequence, synthetic_sequence: {task: reverse, "
                              "vocab_size: 7, sequence_length: 9, num_examples: 11, seed: 5}}\n");
  const DataSourceSpec& t = *job.data.train;
  CHECK(t.files == std::vector<std::string>{"/data/jobs/corpus/*.txt", "/abs/extra.txt"});
  CHECK(t.unit == "byte");
  CHECK(t.sequence_length == 64);
  CHECK(t.stride == std::optional<int64_t>(16));
  CHECK(t.holdout == 0.25);
  CHECK(t.split == "train");
  const DataSourceSpec& e = *job.data.eval;
  CHECK(e.files == std::vector<std::string>{"/data/jobs/corpus/*.txt"});
  CHECK(e.unit == "char");
  CHECK_FALSE(e.stride.has_value());
  CHECK(e.split == "holdout");
  const SyntheticSequenceSpec& q = job.data.predict->synthetic_sequence;
  CHECK(q.task == "reverse");
  CHECK(q.vocab_size == 7);
  CHECK(q.sequence_length == 9);
  CHECK(q.num_examples == 11);
  CHECK(q.seed == 5);
  const std::string& yaml = job.resolved_yaml;
  CHECK(yaml.find("    files: [\"/data/jobs/corpus/*.txt\", /abs/extra.txt]\n") != std::string::npos);
  CHECK(yaml.find("    files: \"/data/jobs/corpus/*.txt\"\n") != std::string::npos);
  CHECK(yaml.find("    unit: byte\n    sequence_length: 64\n    stride: 16\n    holdout: 0.25\n    split: train\n") !=
        std::string::npos);
  CHECK(yaml.find("    synthetic_sequence:\n      task: reverse\n") != std::string::npos);
  const JobSpec again = load_ok(yaml);
  CHECK(again.resolved_yaml == yaml);
  // Other formats show none of these options.
  CHECK(load_ok(kMinimalJob).resolved_yaml.find("sequence_length") == std::string::npos);
}

TEST_CASE("job_loader: the resolved YAML of a minimal job, with every default") {
  const JobSpec job = load_ok(std::string(kMinimalJob) + "data:\n  train: {format: idx, images: a.gz, labels: b.gz}\n");
  CHECK(job.resolved_yaml == R"(model:
  input:
    shape: [784]
  layers:
    - type: dense
      name: dense
      units: 10
      activation: linear
      use_bias: true
      kernel_initializer: glorot_uniform
      bias_initializer: zeros
  loss: sparse_softmax_cross_entropy
  metrics: []
optimizer:
  type: sgd
  learning_rate: 0.01
  schedule:
    type: constant
    decay_steps: 1000
    decay_rate: 0.96
    staircase: false
    boundaries: []
    values: []
    alpha: 0.0
    warmup_steps: 0
  momentum: 0.0
  nesterov: false
  beta1: 0.9
  beta2: 0.999
  epsilon: 1e-07
  weight_decay: 0.01
  rho: 0.9
  initial_accumulator_value: 0.1
  clip_by_global_norm: null
strategy:
  type: one_device
  devices: auto
  num_gpus: null
  loss_reduction: mean
  communication: auto
  bucket_mb: 25.0
  mode: async
  partition:
    max_shards: 1
    min_shard_mb: 0.25
  elastic:
    min_workers: 0
    max_workers: 0
cluster:
  chief: []
  worker: []
  ps: []
  evaluator: []
  task: null
  timeout_secs: 60.0
data:
  train:
    format: idx
    images: /data/jobs/a.gz
    labels: /data/jobs/b.gz
    header: true
    delimiter: ","
    label_column: ""
    columns: []
    feature_shape: []
    compression: auto
    on_error: fail
    features: {}
    features_array: images
    labels_array: labels
    synthetic:
      num_examples: 1024
      shape: [28, 28, 1]
      num_classes: 10
      seed: 0
    batch_size: 32
    batch_size_per_replica: null
    shuffle: 0
    seed: null
    repeat: true
    drop_remainder: false
    scale: 1.0
    skip: 0
    take: null
    prefetch: 2
    shard: auto
    interleave: null
    map: []
    num_parallel_calls: 1
    stream: auto
    max_buffer_mb: null
    cache: none
precision:
  compute: float32
  matmul: highest
run:
  model_dir: runs/default
  max_steps: 1000
  save_checkpoints_steps: 500
  save_checkpoints_secs: null
  keep_checkpoint_max: 5
  keep_checkpoint_every_n_hours: null
  save_summary_steps: 100
  histogram_steps: 0
  summary_images: 3
  log_step_count_steps: 100
  seed: 42
  deterministic: false
  slurm_requeue: auto
  threads: auto
  accumulation_steps: 1
  micro_batch_rows: null
eval:
  steps: null
  throttle_secs: 60.0
  start_delay_secs: 0.0
  early_stopping: null
)");
}

TEST_CASE("job_loader: strings that YAML would misread are quoted, and ${ is escaped") {
  const JobSpec job = load_ok(std::string(kMinimalJob) +
                              "run: {model_dir: \"123\"}\n"
                              "data:\n  train: {format: csv, path: \"a: b\", label_column: \"true\", delimiter: \"#\"}\n"
                              "  eval: {format: csv, path: \"$${HOME}/x\", label_column: \"\"}\n");
  CHECK(job.data.eval->path == "/data/jobs/${HOME}/x");
  CHECK(job.resolved_yaml.find("model_dir: \"123\"\n") != std::string::npos);
  CHECK(job.resolved_yaml.find("path: \"/data/jobs/a: b\"\n") != std::string::npos);
  CHECK(job.resolved_yaml.find("label_column: \"true\"\n") != std::string::npos);
  CHECK(job.resolved_yaml.find("delimiter: \"#\"\n") != std::string::npos);
  CHECK(job.resolved_yaml.find("path: \"/data/jobs/$${HOME}/x\"\n") != std::string::npos);
  const JobSpec again = load_ok(job.resolved_yaml);
  CHECK(again.data.eval->path == "/data/jobs/${HOME}/x");
  CHECK(again.run.model_dir == "123");
  CHECK(again.data.train->label_column == "true");
}

TEST_CASE("job_loader: model_hash covers the model section only") {
  const std::string base = std::string(kMinimalJob) + "optimizer: {learning_rate: 0.1}\n";
  const JobSpec a = load_ok(base);
  CHECK(a.model_hash.size() == 16);
  CHECK(a.model_hash.find_first_not_of("0123456789abcdef") == std::string::npos);
  // Outside the model: unchanged.
  CHECK(load_ok(base, options_with_env({}, {"optimizer.learning_rate=0.5", "run.max_steps=3"})).model_hash == a.model_hash);
  // Same model written differently (block style, defaults spelled out): unchanged.
  CHECK(load_ok("model:\n  layers:\n    - type: dense\n      units: 10\n      name: dense\n      activation: linear\n"
                "  input:\n    shape: [784]\n  loss: sparse_softmax_cross_entropy\n")
            .model_hash == a.model_hash);
  // A layer changed: a different hash.
  CHECK(load_ok(base, options_with_env({}, {"model.layers[0].units=11"})).model_hash != a.model_hash);
  CHECK(load_ok(base, options_with_env({}, {"model.layers[0].name=out"})).model_hash != a.model_hash);
  CHECK(load_ok(base, options_with_env({}, {"model.input.shape=[785]"})).model_hash != a.model_hash);
}

TEST_CASE("job_loader: FNV-1a 64 matches the published test vectors") {
  CHECK(fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE("job_loader: check_for_command names what a command needs") {
  const JobSpec bare = load_ok(kMinimalJob);
  Status s = check_for_command(bare, "train");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kConfig);
  CHECK(s.error().message ==
        "job.yaml: data.train: required by \"dtrain train\" but missing; expected a data.train section with format "
        "idx, csv or synthetic");
  s = check_for_command(bare, "evaluate");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message ==
        "job.yaml: data.eval: required by \"dtrain evaluate\" but missing; expected a data.eval section with format "
        "idx, csv or synthetic");
  CHECK(check_for_command(bare, "predict").ok());
  CHECK(check_for_command(bare, "validate").ok());
  const JobSpec with_data = load_ok(std::string(kMinimalJob) + "data: {train: {format: synthetic}, eval: {format: synthetic}}\n");
  CHECK(check_for_command(with_data, "train").ok());
  CHECK(check_for_command(with_data, "evaluate").ok());
  s = check_for_command(with_data, "trian");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kRuntime);
}

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("dtrain_cfg_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

TEST_CASE("job_loader: data files resolve against the job file's directory and must exist") {
  TempDir dir;
  fs::create_directories(dir.path / "mnist");
  std::ofstream(dir.path / "mnist" / "images.gz") << "x";
  const std::string job = std::string(kMinimalJob) +
                          "data:\n  train:\n    format: idx\n    images: mnist/images.gz\n    labels: mnist/labels.gz\n"
                          "  eval: {format: csv, path: mnist}\n";
  LoadOptions options = options_with_env();
  options.check_files = true;
  Result<JobSpec> r = load_job_from_string(job, "job.yaml", dir.path.string(), options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kData);
  const std::string root = dir.path.string();
  CHECK(r.error().message ==
        "job.yaml:9:13: data.train.labels: no such file \"" + root + "/mnist/labels.gz\" (resolved from "
        "\"mnist/labels.gz\" relative to the job file's directory)\n"
        "job.yaml:10:29: data.eval.path: \"" + root + "/mnist\" (resolved from \"mnist\" relative to the job file's "
        "directory) is a directory; expected a file");
  // A data error together with a config error is a config error (exit 2).
  r = load_job_from_string(job + "run: {max_steps: 0}\n", "job.yaml", root, options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kConfig);
  // Once the files exist the job loads, with absolute paths.
  std::ofstream(dir.path / "mnist" / "labels.gz") << "y";
  std::ofstream(dir.path / "eval.csv") << "a,b\n";
  options.overrides = {"data.eval.path=eval.csv"};
  r = load_job_from_string(job, "job.yaml", root, options);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  CHECK(r->data.train->labels == root + "/mnist/labels.gz");
  CHECK(r->data.eval->path == root + "/eval.csv");
}

TEST_CASE("job_loader: load_job reads the file, names it as given, resolves next to it") {
  TempDir dir;
  const fs::path file = dir.path / "job.yaml";
  std::ofstream(file) << kMinimalJob << "data: {train: {format: idx, images: i.gz, labels: l.gz}}\n";
  LoadOptions options = options_with_env();
  Result<JobSpec> r = load_job(file.string(), options);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  CHECK(r->source_path == file.string());
  CHECK(r->base_dir == dir.path.string());
  CHECK(r->data.train->images == (dir.path / "i.gz").string());
  CHECK(r->model.layers[0].where == file.string() + ":4:7");

  r = load_job((dir.path / "nope.yaml").string(), options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kConfig);
  CHECK(r.error().message == (dir.path / "nope.yaml").string() + ": cannot read the job file: No such file or directory");
  r = load_job(dir.path.string(), options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == dir.path.string() + ": cannot read the job file: it is a directory");
}

}  // namespace
}  // namespace dtrain
