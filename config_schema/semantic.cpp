// Cross-field checks of the job tree (see semantic.hpp).
#include "config_schema/semantic.hpp"

#include <map>

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
    if (value_type(d) == ValueType::kString && !seen.emplace(d.text, i).second)
      out.push_back({d.loc, index_path("strategy.devices", i), in_quotes(d.text) + " is listed twice; expected each device once"});
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

// model.outputs replaces model.loss and model.metrics (the one-output shorthand).
void check_model_outputs(const Node& root, std::vector<Issue>& out) {
  const Node* model = root.find("model");
  if (model == nullptr || !model->is_mapping()) return;
  const Node* outputs = model->find("outputs");
  if (!given(outputs)) return;
  for (const char* key : {"loss", "metrics"}) {
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
  check_devices(root, out);
  return out;
}

}  // namespace dtrain
