// A model of two outputs (model.outputs): a classification head that also
// feeds a regression head, each with its loss and weight, through run_replica
// (the step every strategy runs) against PyTorch float64
// (reference/gen_multi_output_refs.py -> reference/multi_output_refs.json),
// finite differences of the weighted total loss, a sequence output averaged
// over the batch and every position, and the errors of outputs.
#include <doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "config_schema/job_loader.hpp"
#include "engine/model/model.hpp"
#include "strategies/program.hpp"
#include "strategies/replica_step.hpp"
#include "tests/engine/model/model_test_util.hpp"

namespace dtrain {
namespace {

using namespace model_testing;

const json& refs() {
  static const json r = read_refs("multi_output_refs.json");
  return r;
}

Program program_of(const std::string& yaml) {
  LoadOptions options;
  options.check_files = false;
  auto job = load_job_from_string(yaml, "outputs.yaml", "/nonexistent", options);
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? "" : job.error().message));
  auto program = make_program(*job);
  REQUIRE_MESSAGE(program.ok(), (program.ok() ? "" : program.error().message));
  return std::move(*program);
}

std::string model_error(const std::string& yaml) { return model_testing::model_error(yaml, "outputs.yaml"); }

Batch ref_batch() {
  Batch b{tensor_of(refs().at("x")), tensor_of(refs().at("classes")), {0, 1, 2, 3}};
  b.extra_labels.push_back(tensor_of(refs().at("targets")));
  return b;
}

std::vector<Tensor> ref_values(const Model& model) {
  std::vector<Tensor> values;
  for (const VariableSpec& v : model.variables()) values.push_back(tensor_of(refs().at("params").at(v.name)).clone());
  return values;
}

// One training step's outputs (no update): the StepOutput and the gradients.
struct Step {
  StepOutput out;
  Run run;  // y: the total loss (mean over the batch) as {hi, lo}, grads: d(total)/d(variable)
};

Step step_of(const Program& p, const std::vector<Tensor>& values) {
  ReplicaState rs = p.model->make_replica_state();
  for (size_t i = 0; i < values.size(); ++i) rs.values[i] = values[i];
  const Batch b = ref_batch();
  Step s;
  s.out = run_replica(p, rs, b, 0, b.size(), 0, true, p.grad_scale(b.size()));
  // The total as two floats whose sum keeps its double precision, so that
  // the finite differences see more than float32's 7 digits of it.
  const double total = s.out.loss_sum / static_cast<double>(s.out.examples);
  const float hi = static_cast<float>(total);
  s.run.y = Tensor::from({2}, {hi, static_cast<float>(total - hi)});
  for (const Tensor& g : rs.grads) s.run.grads.push_back(g.clone());
  return s;
}

TEST_CASE("multi-output: weighted losses, metrics and every gradient match PyTorch float64") {
  const Program p = program_of(refs().at("yaml").get<std::string>());
  const Model& m = *p.model;
  REQUIRE(m.num_outputs() == 2);
  CHECK(m.outputs()[0].name == "cls");
  CHECK(m.outputs()[0].shape == Shape{3});
  CHECK(m.outputs()[0].where == "outputs.yaml:9:5");
  CHECK(m.outputs()[1].name == "reg");
  CHECK(m.outputs()[1].shape == Shape{2});
  REQUIRE(p.outputs.size() == 2);
  CHECK(p.outputs[0].weight == doctest::Approx(0.7));
  CHECK(p.outputs[1].labels == "targets");
  CHECK(p.metric_tags == std::vector<std::string>{"loss/cls", "cls_accuracy", "loss/reg"});

  const Step s = step_of(p, ref_values(m));
  CHECK(s.out.examples == 4);
  CHECK(rel_err(double{s.run.y[0]} + s.run.y[1], refs().at("loss").get<double>()) < 1e-5);
  auto metric = [&](size_t i) {
    return p.metrics[i]->result(p.metric_state(const_cast<std::vector<double>&>(s.out.metric_state), i));
  };
  CHECK(rel_err(metric(0), refs().at("loss_cls").get<double>()) < 1e-5);
  CHECK(metric(1) == doctest::Approx(refs().at("cls_accuracy").get<double>()));
  CHECK(rel_err(metric(2), refs().at("loss_reg").get<double>()) < 1e-5);
  for (size_t v = 0; v < m.variables().size(); ++v) {
    INFO(m.variables()[v].name);
    const Tensor want = tensor_of(refs().at("grads").at(m.variables()[v].name));
    REQUIRE(s.run.grads[v].shape() == want.shape());
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i) worst = std::max(worst, rel_err(s.run.grads[v][i], want[i]));
    CHECK(worst < 1e-4);
  }

  // Each output's predictions: softmax probabilities of cls, raw values of reg.
  ReplicaState rs = m.make_replica_state();
  const std::vector<Tensor> values = ref_values(m);
  for (size_t i = 0; i < values.size(); ++i) rs.values[i] = values[i];
  const std::vector<Tensor> pred = predict_replica(p, rs, ref_batch(), 0, 4);
  REQUIRE(pred.size() == 2);
  const Tensor cls = tensor_of(refs().at("cls")), reg = tensor_of(refs().at("reg"));
  for (int64_t r = 0; r < 4; ++r) {
    double z = 0;
    for (int64_t c = 0; c < 3; ++c) z += std::exp(double{cls[r * 3 + c]});
    for (int64_t c = 0; c < 3; ++c) CHECK(rel_err(pred[0][r * 3 + c], std::exp(double{cls[r * 3 + c]}) / z) < 1e-5);
  }
  for (int64_t i = 0; i < reg.numel(); ++i) CHECK(rel_err(pred[1][i], reg[i]) < 1e-5);

  // validate --graph marks both outputs.
  const std::string graph = m.graph_summary();
  INFO(graph);
  CHECK(graph.find("\ncls         dense                 [3]                         21  trunk/tanh  -> output cls\n"
                   "both        concatenate           [9]                          0  trunk/tanh, cls\n"
                   "reg         dense                 [2]                         20  both  -> output reg\n") !=
        std::string::npos);
}

TEST_CASE("multi-output: finite differences of the weighted total loss over every parameter") {
  const Program p = program_of(refs().at("yaml").get<std::string>());
  check_finite_differences(*p.model, ref_values(*p.model), Tensor::from({2}, {1.0f, 1.0f}),
                           [&](const std::vector<Tensor>& values) { return step_of(p, values).run; });
}

TEST_CASE("multi-output: a split batch sums to the whole batch's loss and gradients (the strategies' split)") {
  const Program p = program_of(refs().at("yaml").get<std::string>());
  const std::vector<Tensor> values = ref_values(*p.model);
  const Step whole = step_of(p, values);
  const Batch b = ref_batch();
  StepOutput sum;
  std::vector<Tensor> grads;
  for (const auto& [begin, end] : split_batch(4, 3)) {
    ReplicaState rs = p.model->make_replica_state();
    for (size_t i = 0; i < values.size(); ++i) rs.values[i] = values[i];
    accumulate(sum, run_replica(p, rs, b, begin, end, 0, true, p.grad_scale(4)));
    for (size_t i = 0; i < rs.grads.size(); ++i) {
      if (grads.size() <= i) grads.push_back(Tensor(rs.grads[i].shape()));
      for (int64_t k = 0; k < grads[i].numel(); ++k) grads[i][k] += rs.grads[i][k];
    }
  }
  CHECK(rel_err(sum.loss_sum, whole.out.loss_sum) < 1e-6);
  CHECK(sum.metric_state.size() == whole.out.metric_state.size());
  for (size_t i = 0; i < sum.metric_state.size(); ++i) CHECK(rel_err(sum.metric_state[i], whole.out.metric_state[i]) < 1e-6);
  for (size_t i = 0; i < grads.size(); ++i) {
    for (int64_t k = 0; k < grads[i].numel(); ++k) CHECK(rel_err(grads[i][k], whole.run.grads[i][k]) < 1e-5);
  }
}

TEST_CASE("multi-output: the resolved YAML loads back to the same outputs and model_hash") {
  LoadOptions options;
  options.check_files = false;
  auto job = load_job_from_string(refs().at("yaml").get<std::string>(), "outputs.yaml", "/nonexistent", options);
  REQUIRE(job.ok());
  auto again = load_job_from_string(job->resolved_yaml, "resolved.yaml", "/nonexistent", options);
  REQUIRE_MESSAGE(again.ok(), (again.ok() ? "" : again.error().message));
  CHECK(again->model_hash == job->model_hash);
  REQUIRE(again->model.outputs.size() == 2);
  for (size_t j = 0; j < 2; ++j) {
    const ModelOutputSpec &a = job->model.outputs[j], &b = again->model.outputs[j];
    CHECK(a.name == b.name);
    CHECK(a.loss == b.loss);
    CHECK(a.labels == b.labels);
    CHECK(a.weight == b.weight);
    CHECK(a.metrics == b.metrics);
  }
  // Another weight is another model (its checkpoints are refused).
  auto heavier = load_job_from_string(refs().at("yaml").get<std::string>(), "outputs.yaml", "/nonexistent",
                                      LoadOptions{.overrides = {"model.outputs.reg.weight=2"}, .check_files = false});
  REQUIRE_MESSAGE(heavier.ok(), (heavier.ok() ? "" : heavier.error().message));
  CHECK(heavier->model.outputs[1].weight == 2.0);
  CHECK(heavier->model_hash != job->model_hash);
}

TEST_CASE("multi-output: a sequence output's loss averages over the batch and every position") {
  // tok: logits (B, 4, 5) with labels (B, 4); val: (B, 1) targets; weights 0.25 and 3.
  const Program p = program_of(
      "model:\n  input: {shape: [4, 3]}\n  layers:\n    - {name: tok, type: dense, units: 5}\n"
      "    - {name: pool, type: global_avg_pool1d, inputs: input}\n    - {name: val, type: dense, units: 1}\n"
      "  outputs:\n    tok: {loss: sparse_softmax_cross_entropy, weight: 0.25}\n"
      "    val: {loss: mean_squared_error, weight: 3}\n");
  const Model& m = *p.model;
  REQUIRE(m.outputs()[0].shape == Shape{4, 5});
  CHECK(p.outputs[0].labels == "tok");  // labels default to the output's name
  ReplicaState rs = m.make_replica_state();
  for (size_t i = 0; i < m.variables().size(); ++i) {
    rs.values[i] = Tensor(m.variables()[i].shape);
    for (int64_t k = 0; k < rs.values[i].numel(); ++k) rs.values[i][k] = 0.1f * static_cast<float>((k * 7 + i) % 11) - 0.5f;
  }
  const int64_t n = 3;
  Batch b{Tensor({n, 4, 3}), Tensor({n, 4}), {0, 1, 2}};
  for (int64_t k = 0; k < b.features.numel(); ++k) b.features[k] = 0.3f * static_cast<float>(k % 7) - 0.9f;
  for (int64_t k = 0; k < b.labels.numel(); ++k) b.labels[k] = static_cast<float>((k * 3) % 5);
  b.extra_labels.push_back(Tensor::from({n, 1}, {0.5f, -1.0f, 2.0f}));
  const StepOutput out = run_replica(p, rs, b, 0, n, 0, false, 1.0f);
  // The same losses from the model's own outputs, in double.
  const Tensor tok = m.output(rs, 0).to_host(), val = m.output(rs, 1).to_host();
  double ce = 0, mse = 0;
  for (int64_t r = 0; r < n * 4; ++r) {
    double z = 0;
    for (int64_t c = 0; c < 5; ++c) z += std::exp(double{tok[r * 5 + c]});
    ce += std::log(z) - tok[r * 5 + static_cast<int64_t>(b.labels[r])];
  }
  for (int64_t r = 0; r < n; ++r) mse += std::pow(double{val[r]} - b.extra_labels[0][r], 2);
  ce /= static_cast<double>(n * 4);  // the batch and every position
  mse /= static_cast<double>(n);
  CHECK(rel_err(out.loss_sum / static_cast<double>(out.examples), 0.25 * ce + 3.0 * mse) < 1e-5);
  CHECK(rel_err(p.metrics[0]->result(std::span<const double>(out.metric_state.data(), 2)), ce) < 1e-5);
}

TEST_CASE("multi-output: a one-output model keeps its single output, tags and graph") {
  const Program p = program_of(
      "model:\n  input: {shape: [4]}\n  layers:\n    - {type: dense, units: 3}\n  metrics: [accuracy]\n");
  REQUIRE(p.model->num_outputs() == 1);
  CHECK(p.model->outputs()[0].name == "dense");
  CHECK(p.outputs[0].name.empty());
  CHECK(p.metric_tags == std::vector<std::string>{"accuracy"});
  CHECK(p.model->graph_summary().find("-> output") == std::string::npos);
}

TEST_CASE("multi-output: the model's errors, each with its place") {
  const std::string head = "model:\n  input: {shape: [4]}\n  layers:\n    - {name: trunk, type: dense, units: 5}\n"
                           "    - {name: a, type: dense, units: 3}\n    - {name: b, type: dense, units: 2, inputs: trunk}\n";
  CHECK(model_error(head + "  outputs:\n    a: {loss: mean_squared_error}\n    bb: {loss: mean_squared_error}\n") ==
        "outputs.yaml:9:5: model.outputs.bb: unknown layer \"bb\" (did you mean \"b\"?); an output is a layer of "
        "model.layers");
  CHECK(model_error(head + "  outputs:\n    input: {loss: mean_squared_error}\n    b: {loss: mean_squared_error}\n") ==
        "outputs.yaml:8:5: model.outputs.input: \"input\" is a model input; an output is a layer of model.layers");
  CHECK(model_error(head + "  outputs:\n    b: {loss: mean_squared_error}\n") ==
        "outputs.yaml:5:7: model.layers[1] (dense): \"a\" reaches none of the outputs (b): nothing below uses it and it "
        "is not one of model.outputs; add it there or remove it");
  CHECK(model_error(head + "  outputs:\n    a: {loss: mean_squared_error}\n    b: {loss: mean_squared_error}\n") == "");
}

}  // namespace
}  // namespace dtrain
