// Reading a validated job tree into JobSpec.
#include "config_schema/to_jobspec.hpp"

#include <map>
#include <set>

#include "config_schema/field_io.hpp"
#include "config_schema/keras_names.hpp"
#include "config_schema/layer_schema.hpp"

namespace dtrain {
namespace {

// Reads of optional keys of one mapping; a missing key or a null value
// leaves the target unchanged.
class Section {
 public:
  explicit Section(const Node* node) : node_(node) {}

  const Node* get(const char* key) const {
    const Node* n = node_ == nullptr ? nullptr : node_->find(key);
    return n != nullptr && value_type(*n) != ValueType::kNull ? n : nullptr;
  }
  Section sub(const char* key) const { return Section(get(key)); }

  void read(const char* key, double& out) const { if (auto n = get(key)) out = as_number(*n); }
  void read(const char* key, std::string& out) const { if (auto n = get(key)) out = n->text; }
  void read(const char* key, std::vector<int64_t>& out) const {
    if (auto n = get(key)) {
      out.clear();
      for (const Node& item : n->items) out.push_back(as_int(item));
    }
  }
  void read(const char* key, std::vector<std::string>& out) const {
    if (auto n = get(key)) {
      out.clear();
      for (const Node& item : n->items) out.push_back(item.text);
    }
  }

 private:
  const Node* node_;
};

LayerSpec read_layer(const Node& node) {
  const Section s(&node);
  LayerSpec l;
  l.where = node.loc.str();
  s.read("type", l.type);
  s.read("name", l.name);
  if (const Node* in = s.get("inputs")) {
    if (in->is_scalar()) {
      l.inputs = {in->text};
      l.inputs_where = {in->loc.str()};
    } else {
      for (const Node& item : in->items) {
        l.inputs.push_back(item.text);
        l.inputs_where.push_back(item.loc.str());
      }
    }
  }
  read_layer_options(node, l);  // the type's own options, through its row's field table
  return l;
}

// Keras naming: the first unnamed dense layer is "dense", the next "dense_1",
// ...; names given in the file are never reused.
void name_layers(std::vector<LayerSpec>& layers) {
  std::set<std::string> taken;
  for (const LayerSpec& l : layers)
    if (!l.name.empty()) taken.insert(l.name);
  KerasNamer namer(std::move(taken));
  for (LayerSpec& l : layers) {
    if (l.name.empty()) l.name = namer.next(l.type);
  }
}

// model.class_weight: balanced, or {class id: weight} (semantic.cpp checked the keys).
void read_class_weight(const Section& s, ClassWeightSpec& out) {
  const Node* n = s.get("class_weight");
  if (n == nullptr) return;
  out.where = n->loc.str();
  if (n->is_scalar()) {
    out.balanced = n->text == "balanced";
    return;
  }
  for (const auto& [k, v] : n->entries) out.weights.emplace_back(std::stoll(k.text), as_number(v));
}

void read_model(const Section& s, ModelSpec& m) {
  s.sub("input").read("shape", m.input_shape);
  s.sub("input").read("dtype", m.input_dtype);
  if (const Node* inputs = s.get("inputs"); inputs != nullptr && !inputs->entries.empty()) {
    const auto& [key, value] = inputs->entries.front();
    m.input_name = key.text;
    m.input_where = key.loc.str();
    Section(&value).read("shape", m.input_shape);
    Section(&value).read("dtype", m.input_dtype);
    for (size_t i = 1; i < inputs->entries.size(); ++i) {
      const auto& [k, v] = inputs->entries[i];
      ModelInputSpec in{k.text, {}, "float32", k.loc.str()};
      Section(&v).read("shape", in.shape);
      Section(&v).read("dtype", in.dtype);
      m.extra_inputs.push_back(std::move(in));
    }
  }
  if (const Node* layers = s.get("layers"))
    for (const Node& item : layers->items) m.layers.push_back(read_layer(item));
  name_layers(m.layers);
  s.read("loss", m.loss);
  s.read("metrics", m.metrics);
  read_class_weight(s, m.class_weight);
  if (const Node* outputs = s.get("outputs")) {
    for (const auto& [k, v] : outputs->entries) {
      ModelOutputSpec out{k.text, "", k.text, 1.0, {}, k.loc.str()};
      Section(&v).read("loss", out.loss);
      Section(&v).read("labels", out.labels);
      Section(&v).read("weight", out.weight);
      Section(&v).read("metrics", out.metrics);
      read_class_weight(Section(&v), out.class_weight);
      m.outputs.push_back(std::move(out));
    }
  }
}

// What the sections' rows cannot say: the checkpoint interval's default
// depends on two options; warm_start.vars' place is the section's when not given.
void resolve_run(RunSpec& r) {
  if (!r.save_checkpoints_steps && !r.save_checkpoints_secs) r.save_checkpoints_steps = 500;
  if (r.warm_start && r.warm_start->vars_where.empty()) r.warm_start->vars_where = r.warm_start->where;
}

}  // namespace

JobSpec to_jobspec(const Node& root, const std::string& source_path, const std::string& base_dir) {
  const Section top(&root);
  JobSpec job;
  job.source_path = source_path;
  job.base_dir = base_dir;
  read_model(top.sub("model"), job.model);
  // Every other section through its field table (engine/base/job_fields.cpp).
  read_fields(root, job_section_fields(), &job, FieldReading{nullptr, base_dir});
  resolve_run(job.run);
  return job;
}

}  // namespace dtrain
