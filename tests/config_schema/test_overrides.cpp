// --set overrides: path parsing, application, and errors naming the override.
#include <doctest.h>

#include "config_schema/overrides.hpp"
#include "job_test_util.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/registry.hpp"

namespace dtrain {
namespace {

using testing::kMinimalJob;
using testing::load_error;
using testing::load_text;
using testing::options_with_env;

LoadOptions with_sets(std::vector<std::string> sets) { return options_with_env({}, std::move(sets)); }

TEST_CASE("overrides: paths are keys separated by dots with list indices") {
  std::vector<PathStep> steps;
  std::string problem;
  REQUIRE(parse_override_path("model.layers[1].units", &steps, &problem));
  REQUIRE(steps.size() == 4);
  CHECK(steps[0].key == "model");
  CHECK(steps[1].key == "layers");
  CHECK(steps[2].is_index);
  CHECK(steps[2].index == 1);
  CHECK(steps[3].key == "units");
  REQUIRE(parse_override_path("a[0][2]", &steps, &problem));
  CHECK(steps.size() == 3);
  CHECK_FALSE(parse_override_path("a..b", &steps, &problem));
  CHECK(problem == "unexpected \".\" in the path \"a..b\"; expected keys separated by dots, like model.layers[1].units");
  CHECK_FALSE(parse_override_path("a[x]", &steps, &problem));
  CHECK(problem == "a bad list index in the path \"a[x]\"; expected keys separated by dots, like model.layers[1].units");
  CHECK_FALSE(parse_override_path("", &steps, &problem));
  CHECK(problem == "a missing key in the path \"\"; expected keys separated by dots, like model.layers[1].units");
}

TEST_CASE("overrides: values are YAML scalars or flow nodes, applied before validation") {
  const std::string job = std::string(kMinimalJob) + "optimizer: {type: sgd, learning_rate: 0.1}\n";
  auto r = load_text(job, with_sets({"optimizer.learning_rate=0.05", "model.layers[0].units=64",
                                     "strategy.devices=[cpu:0,cpu:1]", "run.seed=7",
                                     "model.layers[0].kernel_initializer={type: constant, value: 0.5}"}));
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  CHECK(r->optimizer.learning_rate == 0.05);
  CHECK(layer_options<DenseSpec>(r->model.layers[0]).units == 64);
  REQUIRE(r->strategy.devices.size() == 2);
  CHECK(r->strategy.devices[0].name() == "cpu:0");
  CHECK(r->strategy.devices[1].name() == "cpu:1");
  CHECK(r->run.seed == 7);  // run: created by the override
  CHECK(layer_options<DenseSpec>(r->model.layers[0]).kernel_initializer.type == "constant");
  CHECK(layer_options<DenseSpec>(r->model.layers[0]).kernel_initializer.value == 0.5f);
}

TEST_CASE("overrides: later overrides win and a value may replace a whole section") {
  auto r = load_text(kMinimalJob, with_sets({"run.max_steps=10", "run.max_steps=20",
                                             "data.train={format: synthetic, batch_size: 8}"}));
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  CHECK(r->run.max_steps == 20);
  REQUIRE(r->data.train.has_value());
  CHECK(r->data.train->batch_size == 8);
  CHECK(r->data.train->where == "--set data.train={format: synthetic, batch_size: 8}");
}

TEST_CASE("overrides: an empty file plus overrides is a job") {
  auto r = load_text("", with_sets({"model={input: {shape: [4]}, layers: [{type: dense, units: 2}]}"}));
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  CHECK(layer_options<DenseSpec>(r->model.layers[0]).units == 2);
}

TEST_CASE("overrides: validation problems in an override name the override") {
  CHECK(load_error(kMinimalJob, with_sets({"optimizer.lerning_rate=0.05"})) ==
        "--set optimizer.lerning_rate=0.05: optimizer.lerning_rate: unknown key; expected one of type, learning_rate, "
        "schedule, momentum, nesterov, beta1, beta2, epsilon, weight_decay, rho, initial_accumulator_value, "
        "clip_by_global_norm (did you mean \"learning_rate\"?)");
  CHECK(load_error(kMinimalJob, with_sets({"model.layers[0].units=ten"})) ==
        "--set model.layers[0].units=ten: model.layers[0].units: expected \"auto\" or an integer >= 1, got \"ten\"");
  CHECK(load_error(kMinimalJob, with_sets({"strategy.devices=gpu:0"})) ==
        "--set strategy.devices=gpu:0: strategy.devices: expected \"auto\" or a non-empty list of strings like "
        "\"cpu:0\" or \"gpu:1\", got \"gpu:0\"");
}

TEST_CASE("overrides: problems applying an override") {
  CHECK(load_error(kMinimalJob, with_sets({"run.max_steps"})) ==
        "--set run.max_steps: missing \"=\"; expected path=value, like optimizer.learning_rate=0.05");
  CHECK(load_error(kMinimalJob, with_sets({"run..x=1"})) ==
        "--set run..x=1: unexpected \".\" in the path \"run..x\"; expected keys separated by dots, like "
        "model.layers[1].units");
  CHECK(load_error(kMinimalJob, with_sets({"model.layers[3].units=1"})) ==
        "--set model.layers[3].units=1: model.layers: has 1 item; index 3 is out of range");
  CHECK(load_error(kMinimalJob, with_sets({"model.loss.x=1"})) ==
        "--set model.loss.x=1: model.loss: expected one of sparse_softmax_cross_entropy, softmax_cross_entropy, "
        "sigmoid_cross_entropy, mean_squared_error, got a mapping");
  CHECK(load_error(kMinimalJob, with_sets({"model.input.shape.x=1"})) ==
        "--set model.input.shape.x=1: model.input.shape: is a list of 1 item, not a mapping; cannot set the key \"x\"");
  CHECK(load_error(kMinimalJob, with_sets({"model[0]=1"})) ==
        "--set model[0]=1: model: is a mapping, not a list; cannot apply [0]");
  CHECK(load_error(kMinimalJob, with_sets({"run.seed=[1"})) ==
        "--set run.seed=[1: cannot read the value: YAML syntax error: end of sequence flow not found; expected \"]\" "
        "to close the \"[\" at 1:1");
}

TEST_CASE("overrides: problems in the file and in overrides are all reported, file lines first") {
  const std::string job = std::string(kMinimalJob) + "run: {max_steps: 0}\n";
  CHECK(load_error(job, with_sets({"run.seed=-1"})) ==
        "job.yaml:5:18: run.max_steps: 0 is below the minimum 1\n"
        "--set run.seed=-1: run.seed: -1 is below the minimum 0");
}

}  // namespace
}  // namespace dtrain
