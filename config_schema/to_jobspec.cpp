// Reading a validated job tree into JobSpec.
#include "config_schema/to_jobspec.hpp"

#include <filesystem>
#include <map>
#include <set>

#include "config_schema/data_files.hpp"
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

  void read(const char* key, int64_t& out) const { if (auto n = get(key)) out = as_int(*n); }
  void read(const char* key, uint64_t& out) const { if (auto n = get(key)) out = static_cast<uint64_t>(as_int(*n)); }
  void read(const char* key, double& out) const { if (auto n = get(key)) out = as_number(*n); }
  void read(const char* key, float& out) const { if (auto n = get(key)) out = static_cast<float>(as_number(*n)); }
  void read(const char* key, bool& out) const { if (auto n = get(key)) out = as_bool(*n); }
  void read(const char* key, std::string& out) const { if (auto n = get(key)) out = n->text; }
  template <class T>
  void read(const char* key, std::optional<T>& out) const {
    if (get(key) == nullptr) return;
    T v{};
    read(key, v);
    out = v;
  }
  void read(const char* key, std::vector<int64_t>& out) const {
    if (auto n = get(key)) {
      out.clear();
      for (const Node& item : n->items) out.push_back(as_int(item));
    }
  }
  void read(const char* key, std::vector<double>& out) const {
    if (auto n = get(key)) {
      out.clear();
      for (const Node& item : n->items) out.push_back(as_number(item));
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

// The open `features` mapping of a tfrecord source, in file order. The schema
// cannot describe its values, so a malformed entry is recorded in `problem`.
std::vector<FeatureSpec> read_features(const Node* node) {
  std::vector<FeatureSpec> out;
  if (node == nullptr || !node->is_mapping()) return out;
  for (const auto& [key, value] : node->entries) {
    FeatureSpec f;
    f.name = key.text;
    f.where = value.loc.str();
    auto fail = [&](const std::string& what) {
      if (f.problem.empty()) f.problem = what;
    };
    if (!value.is_mapping()) {
      fail("expected a mapping with dtype, shape, decode, variable, default; got " + describe_value(value));
      out.push_back(f);
      continue;
    }
    for (const auto& [k, v] : value.entries) {
      const ValueType t = value_type(v);
      if (k.text == "dtype" || k.text == "decode") {
        if (t != ValueType::kString) {
          fail(k.text + ": expected a string, got " + describe_value(v));
          continue;
        }
        (k.text == "dtype" ? f.dtype : f.decode) = v.text;
      } else if (k.text == "shape") {
        if (!v.is_sequence()) {
          fail("shape: expected a list of integers >= 1, got " + describe_value(v));
          continue;
        }
        for (const Node& d : v.items) {
          if (value_type(d) == ValueType::kNull) {  // a size that varies per example (decode: jpeg checks where)
            f.shape.push_back(-1);
            continue;
          }
          if (value_type(d) != ValueType::kInteger || as_int(d) < 1) {
            fail("shape: expected a list of integers >= 1 (or null for a JPEG's varying height and width), got " +
                 describe_value(d) + " in it");
            break;
          }
          f.shape.push_back(as_int(d));
        }
      } else if (k.text == "variable") {
        if (t != ValueType::kBool) {
          fail("variable: expected true or false, got " + describe_value(v));
          continue;
        }
        f.variable = as_bool(v);
      } else if (k.text == "default") {
        if (t != ValueType::kInteger && t != ValueType::kNumber) {
          fail("default: expected a number, got " + describe_value(v));
          continue;
        }
        f.default_value = as_number(v);
      } else {
        fail("unknown key \"" + k.text + "\"; expected one of dtype, shape, decode, variable, default");
      }
    }
    if (f.dtype.empty()) fail("required key dtype is missing; expected one of float, int64, bytes");
    out.push_back(f);
  }
  return out;
}

// data.*.map entries (validated: a mapping whose keys are operations).
std::vector<MapOpSpec> read_map_ops(const Node* node) {
  std::vector<MapOpSpec> out;
  if (node == nullptr) return out;
  for (const Node& item : node->items) {
    MapOpSpec m;
    m.where = item.loc.str();
    if (item.entries.size() != 1) {
      std::string keys;
      for (const auto& [k, v] : item.entries) keys += (keys.empty() ? "" : ", ") + k.text;
      m.problem = "each map entry names one operation, got " + std::to_string(item.entries.size()) +
                  (keys.empty() ? "" : " (" + keys + ")");
      out.push_back(m);
      continue;
    }
    const Section s(&item);
    m.op = item.entries[0].first.text;
    const Section args = s.sub(m.op.c_str());
    if (m.op == "cast") s.read("cast", m.dtype);
    if (m.op == "random_flip") s.read("random_flip", m.mode);
    args.read("mean", m.mean);
    args.read("std", m.std);
    args.read("depth", m.depth);
    args.read("padding", m.padding);
    args.read("max_delta", m.max_delta);
    args.read("lower", m.lower);
    args.read("upper", m.upper);
    args.read("size", m.size);
    args.read("scale", m.scale_range);
    args.read("ratio", m.ratio);
    args.read("resize", m.resize);
    args.read("fast_jpeg", m.fast_jpeg);
    out.push_back(m);
  }
  return out;
}

// The pipeline stages beyond prefetch: shard, interleave, map, num_parallel_calls.
void read_stages(const Section& s, DataSourceSpec& d) {
  s.read("shard", d.shard);
  if (s.get("interleave") != nullptr) {
    InterleaveSpec il;
    s.sub("interleave").read("cycle_length", il.cycle_length);
    s.sub("interleave").read("block_length", il.block_length);
    d.interleave = il;
  }
  d.map = read_map_ops(s.get("map"));
  if (const Node* n = s.get("num_parallel_calls")) d.num_parallel_calls = n->text == "auto" ? 0 : as_int(*n);
  s.read("stream", d.stream);
  s.read("max_buffer_mb", d.max_buffer_mb);
  s.read("cache", d.cache);
}

DataSourceSpec read_source(const Node& node, bool repeat_default, const std::string& base_dir) {
  const Section s(&node);
  DataSourceSpec d;
  d.where = node.loc.str();
  d.repeat = repeat_default;
  s.read("format", d.format);
  s.read("images", d.images);
  s.read("labels", d.labels);
  s.read("path", d.path);
  for (std::string* p : {&d.images, &d.labels, &d.path})
    if (!p->empty()) *p = resolve_data_path(base_dir, *p);
  s.read("header", d.header);
  s.read("delimiter", d.delimiter);
  s.read("label_column", d.label_column);
  s.read("columns", d.columns);
  s.read("feature_shape", d.feature_shape);
  if (const Node* files = s.get("files")) {
    // A glob or a list of globs.
    if (files->is_sequence()) s.read("files", d.files);
    else d.files = {files->text};
    for (std::string& f : d.files) f = resolve_data_path(base_dir, f);
  }
  s.read("compression", d.compression);
  s.read("on_error", d.on_error);
  d.features = read_features(s.get("features"));
  s.read("label_feature", d.label_feature);
  s.read("features_array", d.features_array);
  s.read("labels_array", d.labels_array);
  s.read("unit", d.unit);
  s.read("sequence_length", d.sequence_length);
  s.read("stride", d.stride);
  s.read("holdout", d.holdout);
  s.read("split", d.split);
  const Section seq = s.sub("synthetic_sequence");
  seq.read("task", d.synthetic_sequence.task);
  seq.read("vocab_size", d.synthetic_sequence.vocab_size);
  seq.read("sequence_length", d.synthetic_sequence.sequence_length);
  seq.read("num_examples", d.synthetic_sequence.num_examples);
  seq.read("seed", d.synthetic_sequence.seed);
  const Section syn = s.sub("synthetic");
  syn.read("num_examples", d.synthetic.num_examples);
  syn.read("shape", d.synthetic.shape);
  syn.read("num_classes", d.synthetic.num_classes);
  syn.read("seed", d.synthetic.seed);
  s.read("batch_size", d.batch_size);
  s.read("batch_size_per_replica", d.batch_size_per_replica);
  s.read("shuffle", d.shuffle);
  s.read("seed", d.seed);
  s.read("repeat", d.repeat);
  s.read("drop_remainder", d.drop_remainder);
  s.read("scale", d.scale);
  s.read("skip", d.skip);
  s.read("take", d.take);
  s.read("prefetch", d.prefetch);
  read_stages(s, d);
  return d;
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
  if (const Node* outputs = s.get("outputs")) {
    for (const auto& [k, v] : outputs->entries) {
      ModelOutputSpec out{k.text, "", k.text, 1.0, {}, k.loc.str()};
      Section(&v).read("loss", out.loss);
      Section(&v).read("labels", out.labels);
      Section(&v).read("weight", out.weight);
      Section(&v).read("metrics", out.metrics);
      m.outputs.push_back(std::move(out));
    }
  }
}

void read_strategy(const Section& s, StrategySpec& st) {
  s.read("type", st.type);
  if (const Node* d = s.get("devices"); d != nullptr && d->is_sequence()) {
    for (const Node& item : d->items) {
      // Checked by the semantic checks (check_devices): every entry parses.
      if (auto device = parse_device(item.text)) st.devices.push_back({*device, item.loc.str()});
    }
  }
  s.read("num_gpus", st.num_gpus);
  s.read("loss_reduction", st.loss_reduction);
  s.read("communication", st.communication);
  s.read("bucket_mb", st.bucket_mb);
  s.read("mode", st.mode);
  const Section partition = s.sub("partition");
  partition.read("max_shards", st.partition_max_shards);
  partition.read("min_shard_mb", st.partition_min_shard_mb);
}

void read_cluster(const Section& s, ClusterConfig& c) {
  for (const char* type : {"chief", "worker", "ps", "evaluator"})
    if (s.get(type) != nullptr) s.read(type, c.cluster_tasks[type]);
  const Section task = s.sub("task");
  task.read("type", c.task_type);
  task.read("index", c.task_index);
  s.read("timeout_secs", c.cluster_timeout_secs);
}

void read_run(const Section& s, RunSpec& r) {
  s.read("model_dir", r.model_dir);
  s.read("max_steps", r.max_steps);
  s.read("save_checkpoints_steps", r.save_checkpoints_steps);
  s.read("save_checkpoints_secs", r.save_checkpoints_secs);
  if (!r.save_checkpoints_steps && !r.save_checkpoints_secs) r.save_checkpoints_steps = 500;
  s.read("keep_checkpoint_max", r.keep_checkpoint_max);
  s.read("keep_checkpoint_every_n_hours", r.keep_checkpoint_every_n_hours);
  s.read("save_summary_steps", r.save_summary_steps);
  s.read("log_step_count_steps", r.log_step_count_steps);
  s.read("seed", r.seed);
  s.read("deterministic", r.deterministic);
  if (const Node* n = s.get("slurm_requeue"); n != nullptr && value_type(*n) == ValueType::kBool) {
    r.slurm_requeue = as_bool(*n);  // else "auto"
  }
  if (const Node* n = s.get("threads")) r.threads = n->text == "auto" ? 0 : as_int(*n);
  if (const Node* n = s.get("warm_start")) {
    WarmStartSpec w;
    const Section ws(n);
    w.where = n->loc.str();
    ws.read("from", w.from);
    // Relative to the current directory, as model_dir; absolute from here on,
    // so that the resolved job means the same on every task (dtrain server).
    if (!w.from.empty()) w.from = std::filesystem::absolute(w.from).lexically_normal().string();
    ws.read("vars", w.vars);
    ws.read("slots", w.slots);
    if (const Node* f = ws.get("from")) w.from_where = f->loc.str();
    w.vars_where = ws.get("vars") ? ws.get("vars")->loc.str() : w.where;
    if (const Node* m = ws.get("rename")) {
      for (const auto& [key, value] : m->entries) {
        w.rename.emplace_back(key.text, value.text);
        w.rename_where.emplace_back(key.loc.str(), value.loc.str());
      }
    }
    r.warm_start = std::move(w);
  }
  if (const Node* n = s.get("profile")) {
    ProfileSpec p;
    const Section ps(n);
    ps.read("start_step", p.start_step);
    ps.read("steps", p.steps);
    r.profile = p;
  }
  s.read("accumulation_steps", r.accumulation_steps);
  s.read("micro_batch_rows", r.micro_batch_rows);
}

}  // namespace

JobSpec to_jobspec(const Node& root, const std::string& source_path, const std::string& base_dir) {
  const Section top(&root);
  JobSpec job;
  job.source_path = source_path;
  job.base_dir = base_dir;
  read_model(top.sub("model"), job.model);
  read_fields(root, job_section_fields(), &job, nullptr);  // the sections with a field table
  read_strategy(top.sub("strategy"), job.strategy);
  read_cluster(top.sub("cluster"), job.cluster);
  const Section data = top.sub("data");
  if (const Node* n = data.get("train")) job.data.train = read_source(*n, true, base_dir);
  if (const Node* n = data.get("eval")) job.data.eval = read_source(*n, false, base_dir);
  if (const Node* n = data.get("predict")) job.data.predict = read_source(*n, false, base_dir);
  read_run(top.sub("run"), job.run);
  if (const Node* n = top.get("export")) {
    const Section ex(n);
    ExportSpec e;
    ex.read("format", e.format);
    ex.read("every", e.every);
    ex.read("keep", e.keep);
    ex.read("best_by", e.best_by);
    e.where = n->loc.str();
    job.export_spec = e;
  }
  return job;
}

}  // namespace dtrain
