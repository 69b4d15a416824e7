// Cross-field checks of the job tree (see semantic.hpp).
#include "config_schema/semantic.hpp"

#include <algorithm>
#include <map>
#include <regex>

#include "config_schema/schema.hpp"
#include "engine/base/device.hpp"
#include "engine/base/did_you_mean.hpp"

namespace dtrain {
namespace {

// The node at root.k1.k2..., or nullptr when any step is missing.
const Node* at(const Node& root, std::initializer_list<const char*> keys) {
  const Node* n = &root;
  for (const char* k : keys) {
    n = n->find(k);
    if (n == nullptr) return nullptr;
  }
  return n;
}

bool given(const Node* n) { return n != nullptr && value_type(*n) != ValueType::kNull; }

bool all_of_type(const Node& list, ValueType t) {
  for (const Node& item : list.items)
    if (value_type(item) != t && !(t == ValueType::kNumber && value_type(item) == ValueType::kInteger)) return false;
  return true;
}

void check_schedule(const Node& root, std::vector<Issue>& out) {
  const Node* type = at(root, {"optimizer", "schedule", "type"});
  if (type == nullptr || type->text != "piecewise_constant") return;
  const Node* boundaries = at(root, {"optimizer", "schedule", "boundaries"});
  const Node* values = at(root, {"optimizer", "schedule", "values"});
  if (boundaries == nullptr || !boundaries->is_sequence() || !all_of_type(*boundaries, ValueType::kInteger)) return;
  for (size_t i = 1; i < boundaries->items.size(); ++i) {
    const Node& b = boundaries->items[i];
    const Node& prev = boundaries->items[i - 1];
    if (as_int(b) <= as_int(prev))
      out.push_back({b.loc, index_path("optimizer.schedule.boundaries", i),
                     b.text + " is not above the previous boundary " + prev.text + "; expected increasing steps"});
  }
  if (values == nullptr || !values->is_sequence() || !all_of_type(*values, ValueType::kNumber)) return;
  const size_t nb = boundaries->items.size(), nv = values->items.size();
  if (nv != nb + 1)
    out.push_back({values->loc, "optimizer.schedule.values",
                   "has " + std::to_string(nv) + (nv == 1 ? " value" : " values") + " for " + std::to_string(nb) +
                       (nb == 1 ? " boundary" : " boundaries") + "; expected " + std::to_string(nb + 1) +
                       " (one more than boundaries)"});
}

void check_exclusive(const Node* section, const std::string& path, const char* first, const char* second,
                     std::vector<Issue>& out) {
  if (section == nullptr) return;
  const Node* a = section->find(first);
  const Node* b = section->find(second);
  if (given(a) && given(b))
    out.push_back({b->loc, child_path(path, second),
                   std::string("given together with ") + first + "; expected only one of " + first + ", " + second});
}

void check_layer_names(const Node& root, std::vector<Issue>& out) {
  const Node* layers = at(root, {"model", "layers"});
  if (layers == nullptr || !layers->is_sequence()) return;
  std::map<std::string, size_t> first_index;
  for (size_t i = 0; i < layers->items.size(); ++i) {
    const Node* name = layers->items[i].find("name");
    if (name == nullptr || value_type(*name) != ValueType::kString) continue;
    auto [it, inserted] = first_index.emplace(name->text, i);
    if (!inserted)
      out.push_back({name->loc, index_path("model.layers", i) + ".name",
                     in_quotes(name->text) + " is already the name of " + index_path("model.layers", it->second) +
                         "; expected unique layer names"});
  }
}

void check_devices(const Node& root, std::vector<Issue>& out) {
  const Node* strategy = root.find("strategy");
  if (strategy == nullptr) return;
  const Node* devices = strategy->find("devices");
  if (devices == nullptr || !devices->is_sequence()) return;
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < devices->items.size(); ++i) {
    const Node& d = devices->items[i];
    if (value_type(d) != ValueType::kString) continue;
    // The schema's pattern reports names of another form; what it admits
    // parse_device reads, but for an index beyond int.
    static const std::regex kPattern(job_schema()
                                         .at(Json::json_pointer("/properties/strategy/properties/devices/oneOf/1/items/pattern"))
                                         .get<std::string>());
    if (auto parsed = parse_device(d.text); !parsed) {
      if (std::regex_match(d.text, kPattern)) out.push_back({d.loc, index_path("strategy.devices", i), parsed.error().message});
    } else if (!seen.emplace(d.text, i).second) {
      out.push_back({d.loc, index_path("strategy.devices", i), in_quotes(d.text) + " is listed twice; expected each device once"});
    }
  }
  const Node* num_gpus = strategy->find("num_gpus");
  if (given(num_gpus))
    out.push_back({num_gpus->loc, "strategy.num_gpus",
                   "given together with a devices list; expected only one of devices, num_gpus"});
}

// A text source's split: holdout reads the held-out part, so holdout must be given.
void check_text_split(const Node* source, const std::string& path, std::vector<Issue>& out) {
  if (source == nullptr) return;
  const Node* split = source->find("split");
  if (!given(split) || value_type(*split) != ValueType::kString || split->text != "holdout") return;
  const Node* holdout = source->find("holdout");
  const bool positive = given(holdout) &&
                        (value_type(*holdout) == ValueType::kNumber || value_type(*holdout) == ValueType::kInteger) &&
                        as_number(*holdout) > 0;
  if (!positive)
    out.push_back({split->loc, child_path(path, "split"),
                   "holdout reads the held-out end of the text, but holdout is not above 0; expected holdout: a "
                   "fraction such as 0.1 beside it"});
}

// model.input or model.inputs (one entry or several): exactly one of them.
void check_model_inputs(const Node& root, std::vector<Issue>& out) {
  const Node* model = root.find("model");
  if (model == nullptr || !model->is_mapping()) return;
  const Node* input = model->find("input");
  const Node* inputs = model->find("inputs");
  if (!given(input) && !given(inputs)) {
    out.push_back({model->loc, "model.input",
                   "required key is missing; expected a mapping such as {shape: [28, 28, 1]} (or inputs: {NAME: "
                   "{shape: [...]}} to name it)"});
    return;
  }
  check_exclusive(model, "model", "input", "inputs", out);
  if (inputs == nullptr || !inputs->is_mapping()) return;
  if (inputs->entries.empty()) {
    out.push_back({inputs->loc, "model.inputs", "has no input; expected one, e.g. {tokens: {shape: [128], dtype: int32}}"});
  }
}

// The metrics an evaluation reports: loss and model.metrics, or with
// model.outputs also loss/<output> and <output>_<metric> for each output.
std::vector<std::string> evaluation_metrics(const Node& root) {
  std::vector<std::string> known{"loss"};
  if (const Node* metrics = at(root, {"model", "metrics"}); given(metrics) && metrics->is_sequence()) {
    for (const Node& m : metrics->items) known.push_back(m.text);
  }
  if (const Node* outputs = at(root, {"model", "outputs"}); given(outputs) && outputs->is_mapping()) {
    for (const auto& [name, spec] : outputs->entries) {
      known.push_back("loss/" + name.text);
      const Node* metrics = spec.is_mapping() ? spec.find("metrics") : nullptr;
      if (!given(metrics) || !metrics->is_sequence()) continue;
      for (const Node& m : metrics->items) known.push_back(name.text + "_" + m.text);
    }
  }
  return known;
}

// export: every: eval and best_by need evaluations; best_by names a metric
// the evaluation reports (loss or one of model.metrics).
void check_export(const Node& root, std::vector<Issue>& out) {
  const Node* ex = root.find("export");
  if (!given(ex) || !ex->is_mapping()) return;
  const bool has_eval = given(at(root, {"data", "eval"}));
  const Node* every = ex->find("every");
  const Node* best_by = ex->find("best_by");
  if (!has_eval && (!given(every) || every->text == "eval")) {
    out.push_back({given(every) ? every->loc : ex->loc, "export.every",
                   "eval exports after each evaluation, but the job has no data.eval; add data.eval, or export once "
                   "at the end with every: final"});
  }
  if (!given(best_by) || value_type(*best_by) != ValueType::kString) return;
  if (!has_eval) {
    out.push_back({best_by->loc, "export.best_by", "compares evaluations, but the job has no data.eval; add data.eval"});
    return;
  }
  const std::vector<std::string> known = evaluation_metrics(root);
  if (std::find(known.begin(), known.end(), best_by->text) == known.end()) {
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    out.push_back({best_by->loc, "export.best_by",
                   in_quotes(best_by->text) + " is not a metric of the evaluation; expected one of " + list +
                       did_you_mean(best_by->text, known)});
  }
}

void check_warm_start(const Node& root, std::vector<Issue>& out) {
  const Node* vars = at(root, {"run", "warm_start", "vars"});
  if (vars == nullptr || !vars->is_scalar()) return;
  if (auto problem = regex_problem(vars->text)) {
    out.push_back({vars->loc, "run.warm_start.vars",
                   "\"" + vars->text + "\" is not a valid ECMAScript regular expression: " + *problem});
  }
}

// eval.early_stopping watches a metric the job computes, on data.eval.
void check_early_stopping(const Node& root, std::vector<Issue>& out) {
  const Node* es = at(root, {"eval", "early_stopping"});
  if (!given(es) || !es->is_mapping()) return;
  if (!given(at(root, {"data", "eval"}))) {
    out.push_back({es->loc, "eval.early_stopping",
                   "needs evaluations, but the job has no data.eval; add data.eval or remove early_stopping"});
    return;
  }
  const Node* metric = es->find("metric");
  if (!given(metric) || value_type(*metric) != ValueType::kString) return;
  const std::vector<std::string> known = evaluation_metrics(root);
  for (const std::string& k : known)
    if (k == metric->text) return;
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  out.push_back({metric->loc, "eval.early_stopping.metric",
                 "\"" + metric->text + "\" is not a metric the job computes; expected one of " + list +
                     " (loss or one of model.metrics)" + did_you_mean(metric->text, known)});
}

// class_weight's keys are class ids (0, 1, ...); the schema checked the rest.
void check_class_weight(const Node* spec, const std::string& path, std::vector<Issue>& out) {
  const Node* cw = spec != nullptr && spec->is_mapping() ? spec->find("class_weight") : nullptr;
  if (!given(cw) || !cw->is_mapping()) return;
  for (const auto& [key, value] : cw->entries) {
    const bool id = !key.text.empty() && key.text.size() < 10 &&
                    key.text.find_first_not_of("0123456789") == std::string::npos;
    if (!id) {
      out.push_back({key.loc, path + ".class_weight",
                     "key \"" + key.text + "\" is not a class id; expected class ids 0, 1, ... as keys, e.g. {0: 1.0, "
                     "1: 5.0}, or class_weight: balanced"});
    }
  }
  if (cw->entries.empty()) {
    out.push_back({cw->loc, path + ".class_weight", "has no class; expected {class id: weight}, e.g. {1: 5.0}, or balanced"});
  }
}

void check_class_weights(const Node& root, std::vector<Issue>& out) {
  const Node* model = root.find("model");
  if (model == nullptr || !model->is_mapping()) return;
  check_class_weight(model, "model", out);
  const Node* outputs = model->find("outputs");
  if (!given(outputs) || !outputs->is_mapping()) return;
  for (const auto& [name, spec] : outputs->entries) check_class_weight(&spec, "model.outputs." + name.text, out);
}

// model.outputs replaces model.loss and model.metrics (the one-output shorthand).
void check_model_outputs(const Node& root, std::vector<Issue>& out) {
  const Node* model = root.find("model");
  if (model == nullptr || !model->is_mapping()) return;
  const Node* outputs = model->find("outputs");
  if (!given(outputs)) return;
  for (const char* key : {"loss", "metrics", "class_weight"}) {
    if (const Node* n = model->find(key); given(n))
      out.push_back({n->loc, child_path("model", key),
                     std::string("given together with model.outputs; expected the ") + key +
                         " of each output under outputs (model." + key + " is the one-output shorthand)"});
  }
  if (outputs->is_mapping() && outputs->entries.empty())
    out.push_back({outputs->loc, "model.outputs",
                   "has no output; expected one or more, e.g. {predictions: {loss: sparse_softmax_cross_entropy}}"});
}

}  // namespace

std::optional<std::string> regex_problem(const std::string& pattern) {
  using namespace std::regex_constants;
  try {
    std::regex(pattern, std::regex::ECMAScript);
    return std::nullopt;
  } catch (const std::regex_error& e) {
    switch (e.code()) {
      case error_collate: return "it has an invalid collating element name";
      case error_ctype: return "it has an invalid character class name";
      case error_escape: return "it has an invalid escape";
      case error_backref: return "it has an invalid back reference";
      case error_brack: return "it has an unmatched [";
      case error_paren: return "it has an unmatched ( or )";
      case error_brace: return "it has an unmatched {";
      case error_badbrace: return "it has an invalid range in { }";
      case error_range: return "it has an invalid character range";
      case error_badrepeat: return "it has a repeat (*, +, ? or {n}) with nothing before it";
      default: return "it is too complex or has a syntax error";
    }
  }
}

std::vector<Issue> semantic_checks(const Node& root) {
  std::vector<Issue> out;
  check_schedule(root, out);
  for (const char* role : {"train", "eval", "predict"}) {
    check_exclusive(at(root, {"data", role}), child_path("data", role), "batch_size", "batch_size_per_replica", out);
    check_text_split(at(root, {"data", role}), child_path("data", role), out);
  }
  check_exclusive(root.find("run"), "run", "save_checkpoints_steps", "save_checkpoints_secs", out);
  check_layer_names(root, out);
  check_model_inputs(root, out);
  check_model_outputs(root, out);
  check_class_weights(root, out);
  check_devices(root, out);
  check_export(root, out);
  check_warm_start(root, out);
  check_early_stopping(root, out);
  return out;
}

}  // namespace dtrain
