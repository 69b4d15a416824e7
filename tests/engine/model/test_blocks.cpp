// Blocks in the job file: expansion (names like Keras applications', $param,
// when:, repeat, first), the graph built from it (ResNet-20's shapes and
// parameter count), and every block error pinned with its file:line:col.
#include <doctest.h>
#include <fmt/format.h>

#include <map>

#include "config_schema/job_loader.hpp"
#include "engine/model/model.hpp"

namespace dtrain {
namespace {

Result<JobSpec> load(const std::string& yaml) {
  LoadOptions options;
  options.check_files = false;
  return load_job_from_string(yaml, "blocks.yaml", "/nonexistent", options);
}

// The --graph line of layer `name`, runs of spaces collapsed to one.
std::string graph_line(const std::string& graph, const std::string& name) {
  size_t at = 0;
  while (at < graph.size()) {
    const size_t end = graph.find('\n', at);
    const std::string line = graph.substr(at, end - at);
    if (line.rfind(name + " ", 0) == 0) {
      std::string out;
      for (char c : line) {
        if (!(c == ' ' && !out.empty() && out.back() == ' ')) out += c;
      }
      return out;
    }
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

std::string error_of(const std::string& yaml) {
  auto job = load(yaml);
  if (!job) return job.error().message;
  auto model = Model::build(job->model);
  return model.ok() ? std::string() : model.error().message;
}

// ResNet-20 for 32x32x3 as the design page writes it (avg_pool2d + flatten
// stand for global average pooling: the same shapes and parameters).
const char* const kResNet20 = R"(model:
  input: {shape: [32, 32, 3]}
  blocks:
    basic:
      params: {filters: required, stride: 1, project: false}
      layers:
        - {name: 0_conv, type: conv2d, filters: $filters, kernel: 1, strides: $stride, use_bias: false, when: $project}
        - {name: 0_bn, type: batch_norm, when: $project}
        - {name: 1_conv, type: conv2d, inputs: in, filters: $filters, kernel: 3, strides: $stride, padding: same, use_bias: false}
        - {name: 1_bn, type: batch_norm}
        - {name: 1_relu, type: activation, activation: relu}
        - {name: 2_conv, type: conv2d, filters: $filters, kernel: 3, padding: same, use_bias: false}
        - {name: 2_bn, type: batch_norm}
        - {name: out, type: add, inputs: [0_bn, 2_bn], activation: relu}
  layers:
    - {name: conv1_conv, type: conv2d, filters: 16, kernel: 3, padding: same, use_bias: false}
    - {name: conv1_bn, type: batch_norm}
    - {name: conv1_relu, type: activation, activation: relu}
    - {name: conv2, block: basic, repeat: 3, params: {filters: 16}}
    - {name: conv3, block: basic, repeat: 3, params: {filters: 32}, first: {stride: 2, project: true}}
    - {name: conv4, block: basic, repeat: 3, params: {filters: 64}, first: {stride: 2, project: true}}
    - {name: avg_pool, type: avg_pool2d, size: 8}
    - {type: flatten}
    - {name: predictions, type: dense, units: 10}
  loss: sparse_softmax_cross_entropy
)";

TEST_CASE("blocks: ResNet-20 expands to Keras applications' names, shapes and 272,474 trainable parameters") {
  auto job = load(kResNet20);
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? "" : job.error().message));
  auto model = Model::build(job->model);
  REQUIRE_MESSAGE(model.ok(), (model.ok() ? "" : model.error().message));
  std::map<std::string, Shape> vars;
  int64_t trainable = 0;
  for (const VariableSpec& v : (*model)->variables()) {
    vars[v.name] = v.shape;
    if (v.trainable) trainable += num_elements(v.shape);
  }
  // 432 + 32 (stem) + 14,016 + 51,648 + 205,696 (stages) + 650 (head), by hand.
  CHECK(trainable == 272474);
  CHECK(vars.at("conv2_block1_1_conv/kernel") == Shape{3, 3, 16, 16});
  CHECK(vars.count("conv2_block1_0_conv/kernel") == 0);  // project: false dropped the shortcut
  CHECK(vars.at("conv3_block1_0_conv/kernel") == Shape{1, 1, 16, 32});  // first: projects
  CHECK(vars.count("conv3_block2_0_conv/kernel") == 0);                 // ... the first copy only
  CHECK(vars.at("conv3_block1_1_conv/kernel") == Shape{3, 3, 16, 32});
  CHECK(vars.at("conv4_block3_2_bn/gamma") == Shape{64});
  CHECK(vars.at("predictions/kernel") == Shape{64, 10});
  CHECK((*model)->output_shape() == Shape{10});
  const std::string graph = (*model)->graph_summary();
  // The shortcut of an identity block is the block's input (when: dropped
  // 0_bn, so its name meant `in`); the next stage reads the block output.
  CHECK(graph_line(graph, "conv2_block2_out") ==
        "conv2_block2_out add [32, 32, 16] 0 conv2_block1_out/relu, conv2_block2_2_bn");
  CHECK(graph_line(graph, "conv3_block1_0_conv") == "conv3_block1_0_conv conv2d [16, 16, 32] 512 conv2_block3_out/relu");
  CHECK(graph_line(graph, "conv3_block1_1_conv") == "conv3_block1_1_conv conv2d [16, 16, 32] 4608 conv2_block3_out/relu");
  CHECK(graph_line(graph, "avg_pool") == "avg_pool avg_pool2d [1, 1, 64] 0 conv4_block3_out/relu");
  CHECK(graph.find("272474 trainable") != std::string::npos);
  // The resolved job lists the expanded layers, not the block.
  CHECK(job->resolved_yaml.find("blocks") == std::string::npos);
  CHECK(job->resolved_yaml.find("conv4_block3_out") != std::string::npos);
}

TEST_CASE("blocks: when: keeps or drops, first: only the first copy, unnamed layers around a block") {
  auto job = load(R"(model:
  input: {shape: [6]}
  blocks:
    mlp:
      params: {units: 4, gate: false}
      layers:
        - {name: up, type: dense, units: $units, activation: relu}
        - {name: gate, type: dense, units: $units, when: $gate}
        - {name: out, type: activation, activation: tanh}
  layers:
    - {type: dense, units: 4}
    - {name: body, block: mlp, repeat: 2, first: {gate: true}}
    - {type: dense, units: 3}
)");
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? "" : job.error().message));
  std::vector<std::string> names, inputs;
  for (const LayerSpec& l : job->model.layers) {
    names.push_back(l.name);
    std::string in;
    for (const std::string& i : l.inputs) in += (in.empty() ? "" : ",") + i;
    inputs.push_back(in);
  }
  CHECK(names == std::vector<std::string>{"dense", "body_block1_up", "body_block1_gate", "body_block1_out",
                                          "body_block2_up", "body_block2_out", "dense_1"});
  CHECK(inputs == std::vector<std::string>{"", "dense", "body_block1_up", "body_block1_gate", "body_block1_out",
                                           "body_block2_up", "body_block2_out"});
  CHECK(job->model.layers[2].note == "in body_block1 (block mlp, units=4, gate=true)");
  CHECK(job->model.layers[4].note == "in body_block2 (block mlp, units=4, gate=false)");
  auto model = Model::build(job->model);
  REQUIRE(model.ok());
  CHECK((*model)->output_shape() == Shape{3});
}

TEST_CASE("blocks: a block used as the first layer reads the model input; inputs: picks another") {
  auto job = load(R"(model:
  input: {shape: [6]}
  blocks:
    pair:
      params: {units: 2}
      layers:
        - {name: a, type: dense, units: $units}
        - {name: b, type: dense, units: $units, inputs: in}
        - {name: out, type: concatenate, inputs: [a, b]}
  layers:
    - {name: p, block: pair}
    - {name: q, block: pair, inputs: input, params: {units: 3}}
    - {name: join, type: concatenate, inputs: [p, q]}
)");
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? "" : job.error().message));
  CHECK(job->model.layers[0].inputs == std::vector<std::string>{"input"});
  CHECK(job->model.layers[3].inputs == std::vector<std::string>{"input"});
  CHECK(job->model.layers.back().inputs == std::vector<std::string>{"p_block1_out", "q_block1_out"});
  auto model = Model::build(job->model);
  REQUIRE(model.ok());
  CHECK((*model)->output_shape() == Shape{10});
}

TEST_CASE("blocks errors: each pinned with file:line:col, once, with the copy it is in") {
  // bad value
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    b:\n      params: {units: required, on: true}\n      layers:\n        - {name: d1, type: dense, units: $units}\n        - {name: d2, type: dense, units: $units, when: $on}\n        - {name: out, type: add, inputs: [in, d2]}\n  layers:\n    - {name: x, block: b, params: {units: \"ten\"}}\n") ==
        "blocks.yaml:11:43: model.blocks.b.layers[0].units: expected \"auto\" or an integer >= 1, got \"ten\"\n  note: in x_block1 (block b, units=ten, on=true)\nblocks.yaml:11:43: model.blocks.b.layers[1].units: expected \"auto\" or an integer >= 1, got \"ten\"\n  note: in x_block1 (block b, units=ten, on=true)");
  // dup
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    b:\n      params: {units: required, on: true}\n      layers:\n        - {name: d1, type: dense, units: $units}\n        - {name: d2, type: dense, units: $units, when: $on}\n        - {name: out, type: add, inputs: [in, d2]}\n  layers:\n    - {name: x, block: b, params: {units: 4}}\n    - {name: x_block1_d1, type: dense, units: 2}\n") ==
        "blocks.yaml:12:14: model.layers[1].name: \"x_block1_d1\" is already the name of model.blocks.b.layers[0]; expected unique layer names");
  // merge mismatch
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    b:\n      params: {units: required, on: true}\n      layers:\n        - {name: d1, type: dense, units: $units}\n        - {name: d2, type: dense, units: $units, when: $on}\n        - {name: out, type: add, inputs: [in, d2]}\n  layers:\n    - {name: x, block: b, params: {units: 5}}\n") ==
        "blocks.yaml:9:11: x_block1_out (add): add needs inputs of one shape (no broadcasting); got input 0: [4], input 1: [5] (input: [4], x_block1_d2: [5])\n  note: in x_block1 (block b, units=5, on=true)");
  // missing param
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    b:\n      params: {units: required, on: true}\n      layers:\n        - {name: d1, type: dense, units: $units}\n        - {name: d2, type: dense, units: $units, when: $on}\n        - {name: out, type: add, inputs: [in, d2]}\n  layers:\n    - {name: x, block: b}\n") ==
        "blocks.yaml:11:7: model.layers[0].params: block b needs parameter units (declared required)");
  // noname
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    m:\n      layers:\n        - {type: dense, units: 4}\n  layers:\n    - {name: x, block: m}\n") ==
        "blocks.yaml:6:11: model.blocks.m.layers[0]: a layer in a block needs a name (its copies are named <use>_block<k>_<name>)");
  // outside
  CHECK(error_of("model:\n  input: {shape: [4]}\n  layers:\n    - {type: dense, units: $units}\n") ==
        "blocks.yaml:4:28: model.layers[0].units: $units is a block parameter, but this layer is not in a block (write the value, or quote it for a string starting with $)");
  // recursive
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    r:\n      layers:\n        - {name: a, block: r}\n        - {name: d, type: dense, units: $n}\n  layers:\n    - {name: x, block: r}\n") ==
        "blocks.yaml:6:28: model.blocks.r.layers[0].block: block \"r\" uses itself; blocks cannot be recursive\nblocks.yaml:7:41: model.blocks.r.layers[1].units: unknown block parameter $n; block r declares no params");
  // repeat0
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    b:\n      params: {units: required, on: true}\n      layers:\n        - {name: d1, type: dense, units: $units}\n        - {name: d2, type: dense, units: $units, when: $on}\n        - {name: out, type: add, inputs: [in, d2]}\n  layers:\n    - {name: x, block: b, repeat: 0, params: {units: 4}}\n") ==
        "blocks.yaml:11:35: model.layers[0].repeat: expected an integer from 1 to 1000; got 0");
  // unknown block
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    b:\n      params: {units: required, on: true}\n      layers:\n        - {name: d1, type: dense, units: $units}\n        - {name: d2, type: dense, units: $units, when: $on}\n        - {name: out, type: add, inputs: [in, d2]}\n  layers:\n    - {name: x, block: c, params: {units: 4}}\n") ==
        "blocks.yaml:11:24: model.layers[0].block: unknown block \"c\"; defined: b");
  // a list or mapping where the block's name or the use's name goes (a fuzzed job)
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    b:\n      layers:\n        - {name: d1, type: dense, units: 4}\n  layers:\n    - {name: x, block: [b]}\n    - {name: y, block: {b: 1}}\n    - {name: [z], block: b}\n") ==
        "blocks.yaml:8:24: model.layers[0].block: expected the name of a block of model.blocks; got a list of 1 item\nblocks.yaml:9:24: model.layers[1].block: expected the name of a block of model.blocks; got a mapping\nblocks.yaml:10:14: model.layers[2].name: expected a name; got a list of 1 item");
  // unknown param
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    b:\n      params: {units: required, on: true}\n      layers:\n        - {name: d1, type: dense, units: $units}\n        - {name: d2, type: dense, units: $units, when: $on}\n        - {name: out, type: add, inputs: [in, d2]}\n  layers:\n    - {name: x, block: b, params: {unit: 4}}\n") ==
        "blocks.yaml:11:7: model.layers[0].params: block b needs parameter units (declared required)\nblocks.yaml:11:36: model.layers[0].params.unit: unknown parameter of block b; it declares units, on (did you mean \"units\"?)");
  // when multi
  CHECK(error_of("model:\n  input: {shape: [4]}\n  blocks:\n    m:\n      params: {on: true}\n      layers:\n        - {name: a, type: dense, units: 4}\n        - {name: s, type: add, inputs: [in, a], when: $on}\n  layers:\n    - {name: x, block: m}\n") ==
        "blocks.yaml:8:55: model.blocks.m.layers[1].when: when: can only drop a layer of one input (its name then means its input); this layer has 2");
}

}  // namespace
}  // namespace dtrain
