// Validation messages, pinned in full: the wording users see for each kind of
// mistake, with file:line:col, the field path and "did you mean".
#include <doctest.h>

#include "job_test_util.hpp"

namespace dtrain {
namespace {

using testing::kMinimalJob;
using testing::load_error;

std::string with(const std::string& extra) { return std::string(kMinimalJob) + extra; }

TEST_CASE("validate: enum values, with did-you-mean") {
  CHECK(load_error(with("strategy: {type: mirorred}\n")) ==
        "job.yaml:5:18: strategy.type: \"mirorred\" is not one of one_device, towers, mirrored, collective, "
        "parameter_server (did you mean \"mirrored\"?)");
  CHECK(load_error(with("strategy: {loss_reduction: average}\n")) ==
        "job.yaml:5:28: strategy.loss_reduction: \"average\" is not one of mean, sum");
  CHECK(load_error(with("strategy: {loss_reduction: 3}\n")) ==
        "job.yaml:5:28: strategy.loss_reduction: expected one of mean, sum, got 3");
}

TEST_CASE("validate: unknown keys at every depth, with did-you-mean") {
  CHECK(load_error("model:\n  layers:\n    - {type: dense, unts: 10}\n  input: {shape: [1]}\n") ==
        "job.yaml:3:7: model.layers[0].units: required key is missing; expected \"auto\" or an integer >= 1\n"
        "job.yaml:3:21: model.layers[0].unts: unknown key; expected one of type, name, inputs, units, activation, use_bias, "
        "kernel_initializer, bias_initializer (did you mean \"units\"?)");
  CHECK(load_error(with("optimizer: {schedule: {type: constant, warmup: 10}}\n")) ==
        "job.yaml:5:40: optimizer.schedule.warmup: unknown key; expected one of type, decay_steps, decay_rate, "
        "staircase, boundaries, values, alpha, warmup_steps");
  CHECK(load_error(with("evaluation: {steps: 3}\n")) ==
        "job.yaml:5:1: evaluation: unknown key; expected one of model, optimizer, strategy, cluster, data, precision, run, eval, export");
  CHECK(load_error(with("cluster: {task: {type: worker, idx: 0}}\n")) ==
        "job.yaml:5:32: cluster.task.idx: unknown key; expected one of type, index");
}

TEST_CASE("validate: wrong types say what was expected and what was given") {
  CHECK(load_error("model:\n  input: {shape: [1]}\n  layers: [{type: dense, units: ten}]\n") ==
        "job.yaml:3:33: model.layers[0].units: expected \"auto\" or an integer >= 1, got \"ten\"");
  CHECK(load_error(with("run: {max_steps: 2.5, deterministic: 1, model_dir: [a]}\n")) ==
        "job.yaml:5:18: run.max_steps: expected an integer >= 1, got 2.5\n"
        "job.yaml:5:38: run.deterministic: expected true or false, got 1\n"
        "job.yaml:5:52: run.model_dir: expected a non-empty string, got a list of 1 item");
  CHECK(load_error(with("run: {slurm_requeue: yes}\n")) ==
        "job.yaml:5:22: run.slurm_requeue: expected \"auto\" or true or false, got \"yes\"");
  CHECK(load_error(with("optimizer: 0.1\n")) == "job.yaml:5:12: optimizer: expected a mapping, got 0.1");
  CHECK(load_error(with("eval: {steps: many}\n")) ==
        "job.yaml:5:15: eval.steps: expected an integer >= 1 or null, got \"many\"");
  CHECK(load_error("model: {input: {shape: [1]}, layers: [{type: flatten}], metrics: accuracy}\n") ==
        "job.yaml:1:66: model.metrics: expected a list of values among accuracy, mean_loss, precision, recall, "
        "mean_absolute_error, got \"accuracy\"");
}

TEST_CASE("validate: ranges") {
  CHECK(load_error("model:\n  input: {shape: [1]}\n  layers: [{type: dense, units: -5}]\n") ==
        "job.yaml:3:33: model.layers[0].units: -5 is below the minimum 1");
  CHECK(load_error(with("optimizer: {learning_rate: 0}\n")) ==
        "job.yaml:5:28: optimizer.learning_rate: 0 is not above 0; expected a number > 0");
  CHECK(load_error(with("optimizer: {momentum: 1}\n")) ==
        "job.yaml:5:23: optimizer.momentum: 1 is not below 1; expected a number >= 0 and < 1");
  CHECK(load_error(with("optimizer: {schedule: {alpha: 1.5}}\n")) ==
        "job.yaml:5:31: optimizer.schedule.alpha: 1.5 is above the maximum 1");
}

TEST_CASE("validate: sizes are an integer or a pair") {
  const std::string conv = "model:\n  input: {shape: [8, 8, 1]}\n  layers: [{type: conv2d, filters: 2, kernel: ";
  CHECK(load_error(conv + "[3, 3, 3]}]\n") ==
        "job.yaml:3:47: model.layers[0].kernel: expected an integer >= 1 or a list of 2 integers >= 1, got a list of 3 items");
  CHECK(load_error(conv + "3x3}]\n") ==
        "job.yaml:3:47: model.layers[0].kernel: expected an integer >= 1 or a list of 2 integers >= 1, got \"3x3\"");
  CHECK(load_error(conv + "[3, 0]}]\n") == "job.yaml:3:51: model.layers[0].kernel[1]: 0 is below the minimum 1");
  CHECK(load_error(conv + "0}]\n") == "job.yaml:3:47: model.layers[0].kernel: 0 is below the minimum 1");
}

TEST_CASE("validate: layer types dispatch on type") {
  const std::string head = "model:\n  input: {shape: [4]}\n  layers:\n";
  CHECK(load_error(head + "    - {type: dence, units: 3}\n") ==
        "job.yaml:4:14: model.layers[0].type: unknown layer type \"dence\"; expected one of dense, conv2d, max_pool2d, "
        "avg_pool2d, global_avg_pool2d, global_max_pool2d, global_avg_pool1d, flatten, reshape, zero_padding2d, dropout, "
        "batch_norm, layer_norm, activation, leaky_relu, embedding, position_embedding, multi_head_attention, add, subtract, multiply, average, maximum, "
        "concatenate (did you mean \"dense\"?)");
  CHECK(load_error(head + "    - {type: 7}\n") ==
        "job.yaml:4:14: model.layers[0].type: unknown layer type 7; expected one of dense, conv2d, max_pool2d, "
        "avg_pool2d, global_avg_pool2d, global_max_pool2d, global_avg_pool1d, flatten, reshape, zero_padding2d, dropout, "
        "batch_norm, layer_norm, activation, leaky_relu, embedding, position_embedding, multi_head_attention, add, subtract, multiply, average, maximum, "
        "concatenate");
  CHECK(load_error(head + "    - {type: flatten, units: 3}\n") ==
        "job.yaml:4:23: model.layers[0].units: unknown key; expected one of type, name, inputs");
  CHECK(load_error(head + "    - {type: dropout, rate: 1.5}\n") ==
        "job.yaml:4:29: model.layers[0].rate: 1.5 is not below 1; expected a number >= 0 and < 1");
  CHECK(load_error(head + "    - {type: activation, activation: linear}\n") ==
        "job.yaml:4:38: model.layers[0].activation: \"linear\" is not one of relu, gelu, tanh, sigmoid, softmax");
  CHECK(load_error(head + "    - {type: dense, units: 3, name: \"my layer\"}\n") ==
        "job.yaml:4:37: model.layers[0].name: \"my layer\" does not match the pattern ^[A-Za-z0-9_.-]+$; expected a "
        "string like \"dense_1\" or \"conv_a\"");
  CHECK(load_error(head + "    - dense\n") ==
        "job.yaml:4:7: model.layers[0]: expected a mapping with a type key, got \"dense\"");
  CHECK(load_error("model:\n  input: {shape: [4]}\n  layers: []\n") ==
        "job.yaml:3:11: model.layers: expected a non-empty list of mappings with a type key, got an empty list");
}

TEST_CASE("validate: initializers are a name or {type, value, minval, maxval}") {
  const std::string head = "model:\n  input: {shape: [4]}\n  layers:\n    - {type: dense, units: 3, kernel_initializer: ";
  CHECK(load_error(head + "glorot_unifrom}\n") ==
        "job.yaml:4:51: model.layers[0].kernel_initializer: expected one of glorot_uniform, he_normal, random_uniform, "
        "zeros, ones, constant or a mapping, got \"glorot_unifrom\" (did you mean \"glorot_uniform\"?)");
  CHECK(load_error(head + "{type: constant, valu: 1}}\n") ==
        "job.yaml:4:68: model.layers[0].kernel_initializer.valu: unknown key; expected one of type, value, minval, "
        "maxval (did you mean \"value\"?)");
  CHECK(load_error(head + "{type: constnt}}\n") ==
        "job.yaml:4:58: model.layers[0].kernel_initializer.type: \"constnt\" is not one of glorot_uniform, he_normal, "
        "random_uniform, zeros, ones, constant (did you mean \"constant\"?)");
  CHECK(load_error(head + "3}\n") ==
        "job.yaml:4:51: model.layers[0].kernel_initializer: expected one of glorot_uniform, he_normal, random_uniform, "
        "zeros, ones, constant or a mapping, got 3");
}

TEST_CASE("validate: devices, cluster addresses and the data formats") {
  CHECK(load_error(with("strategy: {devices: [gpu:0, tpu:1]}\n")) ==
        "job.yaml:5:29: strategy.devices[1]: \"tpu:1\" does not match the pattern ^(cpu|gpu|debug):[0-9]+$; expected a "
        "string like \"cpu:0\" or \"gpu:1\"");
  // The pattern admits it, parsing at load does not: an index beyond int, once, with its place.
  CHECK(load_error(with("strategy: {devices: [cpu:0, cpu:99999999999]}\n")) ==
        "job.yaml:5:29: strategy.devices[1]: \"cpu:99999999999\" is not a device; expected cpu:N, debug:N or gpu:N "
        "(N = 0, 1, ...)");
  CHECK(load_error(with("strategy: {devices: autp}\n")) ==
        "job.yaml:5:21: strategy.devices: expected \"auto\" or a non-empty list of strings like \"cpu:0\" or "
        "\"gpu:1\", got \"autp\" (did you mean \"auto\"?)");
  CHECK(load_error(with("cluster: {chief: [a:1, b:2], worker: [c]}\n")) ==
        "job.yaml:5:18: cluster.chief: expected a list of at most one string like \"worker0.example.com:2222\", got a "
        "list of 2 items\n"
        "job.yaml:5:39: cluster.worker[0]: \"c\" does not match the pattern ^[^:\\s]+:[0-9]+$; expected a string like "
        "\"worker0.example.com:2222\"");
  CHECK(load_error(with("data: {train: {format: idx, images: a.gz}}\n")) ==
        "job.yaml:5:15: data.train.labels: required key is missing (needed when format is idx); expected a non-empty string");
  CHECK(load_error(with("data: {eval: {format: csv}}\n")) ==
        "job.yaml:5:14: data.eval.path: required key is missing (needed when format is csv); expected a non-empty string");
  CHECK(load_error(with("data: {train: {format: parquet}}\n")) ==
        "job.yaml:5:24: data.train.format: \"parquet\" is not one of idx, csv, synthetic, synthetic_sequence, tfrecord, "
        "npy, npz, text, image_folder, text_folder");
  CHECK(load_error(with("data: {train: {format: npy}}\n")) ==
        "job.yaml:5:15: data.train.images: required key is missing (needed when format is npy); expected a non-empty string\n"
        "job.yaml:5:15: data.train.labels: required key is missing (needed when format is npy); expected a non-empty string");
  CHECK(load_error(with("data: {train: {batch_size: 3}}\n")) ==
        "job.yaml:5:15: data.train.format: required key is missing; expected one of idx, csv, synthetic, "
        "synthetic_sequence, tfrecord, npy, npz, text, image_folder, text_folder");
  // The text source's required keys, its options' values, and split: holdout without holdout.
  CHECK(load_error(with("data: {train: {format: text}}\n")) ==
        "job.yaml:5:15: data.train.files: required key is missing (needed when format is text); expected a non-empty "
        "string or a non-empty list of non-empty strings\n"
        "job.yaml:5:15: data.train.sequence_length: required key is missing (needed when format is text); expected an "
        "integer >= 1");
  CHECK(load_error(with("data: {train: {format: text, files: [], sequence_length: 0, unit: word}}\n")) ==
        "job.yaml:5:37: data.train.files: expected a non-empty list of non-empty strings, got an empty list\n"
        "job.yaml:5:58: data.train.sequence_length: 0 is below the minimum 1\n"
        "job.yaml:5:67: data.train.unit: \"word\" is not one of char, byte");
  CHECK(load_error(with("data: {eval: {format: text, files: a.txt, sequence_length: 8, split: holdout}}\n")) ==
        "job.yaml:5:70: data.eval.split: holdout reads the held-out end of the text, but holdout is not above 0; "
        "expected holdout: a fraction such as 0.1 beside it");
  CHECK(load_error(with("data: {train: {format: text, files: a.txt, sequence_length: 8, holdout: 1}}\n")) ==
        "job.yaml:5:73: data.train.holdout: 1 is not below 1; expected a number >= 0 and < 1");
  CHECK(load_error(with("data: {train: {format: synthetic_sequence, synthetic_sequence: {task: sort}}}\n")) ==
        "job.yaml:5:71: data.train.synthetic_sequence.task: \"sort\" is not one of is_sorted, reverse");
}

TEST_CASE("validate: checks across fields") {
  CHECK(load_error(with("optimizer: {schedule: {type: piecewise_constant, boundaries: [10, 10, 5], values: [1, 2]}}\n")) ==
        "job.yaml:5:67: optimizer.schedule.boundaries[1]: 10 is not above the previous boundary 10; expected increasing steps\n"
        "job.yaml:5:71: optimizer.schedule.boundaries[2]: 5 is not above the previous boundary 10; expected increasing steps\n"
        "job.yaml:5:83: optimizer.schedule.values: has 2 values for 3 boundaries; expected 4 (one more than boundaries)");
  CHECK(load_error(with("optimizer: {schedule: {type: piecewise_constant, values: [1]}}\n")) ==
        "job.yaml:5:23: optimizer.schedule.boundaries: required key is missing (needed when type is "
        "piecewise_constant); expected a list of integers >= 0");
  CHECK(load_error(with("data: {train: {format: synthetic, batch_size: 64, batch_size_per_replica: 8}}\n")) ==
        "job.yaml:5:75: data.train.batch_size_per_replica: given together with batch_size; expected only one of "
        "batch_size, batch_size_per_replica");
  CHECK(load_error(with("run: {save_checkpoints_steps: 100, save_checkpoints_secs: 60}\n")) ==
        "job.yaml:5:59: run.save_checkpoints_secs: given together with save_checkpoints_steps; expected only one of "
        "save_checkpoints_steps, save_checkpoints_secs");
  CHECK(load_error(with("strategy: {devices: [cpu:0, cpu:0], num_gpus: 1}\n")) ==
        "job.yaml:5:29: strategy.devices[1]: \"cpu:0\" is listed twice; expected each device once\n"
        "job.yaml:5:47: strategy.num_gpus: given together with a devices list; expected only one of devices, num_gpus");
  CHECK(load_error("model:\n  input: {shape: [4]}\n  layers:\n    - {type: dense, units: 3, name: fc}\n"
                   "    - {type: dense, units: 3, name: fc}\n") ==
        "job.yaml:5:37: model.layers[1].name: \"fc\" is already the name of model.layers[0]; expected unique layer names");
  // null means "not given": no conflict.
  CHECK(load_error(with("run: {save_checkpoints_steps: null, save_checkpoints_secs: 60}\n")).empty());
}

TEST_CASE("validate: the whole file") {
  CHECK(load_error("") == "job.yaml:1:1: the job file is empty; expected a mapping with at least a model section");
  CHECK(load_error("- a\n") == "job.yaml:1:1: expected a mapping, got a list of 1 item");
  CHECK(load_error("run: {}\n") == "job.yaml:1:1: model: required key is missing; expected a mapping");
  CHECK(load_error(with("run: {seed: 1}\nrun: {seed: 2}\n")) == "job.yaml:6:1: run: duplicate key; first given at 5:1");
}

TEST_CASE("validate: every problem is reported, in file order") {
  const std::string job =
      "model:\n"
      "  input: {shape: [28, 28, 0]}\n"
      "  layers:\n"
      "    - {type: conv2d, filters: 32, kernel: 3, padding: samee}\n"
      "    - {type: dense, units: 128, use_bias: yes}\n"
      "optimizer: {type: adamw, learning_rate: -0.001}\n"
      "strategy: {type: colective}\n";
  CHECK(load_error(job) ==
        "job.yaml:2:27: model.input.shape[2]: 0 is below the minimum 1\n"
        "job.yaml:4:55: model.layers[0].padding: \"samee\" is not one of valid, same (did you mean \"same\"?)\n"
        "job.yaml:5:43: model.layers[1].use_bias: expected true or false, got \"yes\"\n"
        "job.yaml:6:41: optimizer.learning_rate: -0.001 is not above 0; expected a number > 0\n"
        "job.yaml:7:18: strategy.type: \"colective\" is not one of one_device, towers, mirrored, collective, "
        "parameter_server (did you mean \"collective\"?)");
}

}  // namespace
}  // namespace dtrain
