// JobSpec -> JSON in schema order, and the model hash.
#include "config_schema/job_json.hpp"

#include <cstdio>

#include "config_schema/field_io.hpp"
#include "config_schema/layer_schema.hpp"
#include "config_schema/schema.hpp"

namespace dtrain {
namespace {

template <class T>
Json optional_json(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json layer_json(const LayerSpec& l) {
  Json j{{"type", l.type}, {"name", l.name}};
  // Graph fields only where used, so a sequential model's resolved form (and
  // its model_hash, kept in checkpoints) is what it was before graphs.
  if (!l.inputs.empty()) j["inputs"] = l.inputs;
  write_layer_options(l, j);  // the type's own options, through its row's field table
  return j;
}

// The pipeline stages beyond prefetch: shard, interleave, map, num_parallel_calls.
void add_stages_json(const DataSourceSpec& d, Json& j) {
  j["shard"] = d.shard;
  j["interleave"] = d.interleave ? Json{{"cycle_length", d.interleave->cycle_length},
                                        {"block_length", d.interleave->block_length}}
                                 : Json(nullptr);
  Json ops = Json::array();
  for (const MapOpSpec& m : d.map) {
    Json args;
    if (m.op == "normalize") args = Json{{"mean", m.mean}, {"std", m.std}};
    else if (m.op == "cast") args = m.dtype;
    else if (m.op == "one_hot") args = Json{{"depth", m.depth}};
    else if (m.op == "random_crop") args = Json{{"padding", m.padding}};
    else if (m.op == "random_flip") args = m.mode;
    else if (m.op == "random_brightness") args = Json{{"max_delta", m.max_delta}};
    else if (m.op == "random_contrast") args = Json{{"lower", m.lower}, {"upper", m.upper}};
    else if (m.op == "random_resized_crop") args = Json{{"size", m.size}, {"scale", m.scale_range}, {"ratio", m.ratio}, {"fast_jpeg", m.fast_jpeg}};
    else if (m.op == "resize_center_crop") args = Json{{"resize", m.resize}, {"size", m.size}, {"fast_jpeg", m.fast_jpeg}};
    if (!m.op.empty()) ops.push_back(Json{{m.op, args}});
  }
  j["map"] = ops;
  j["num_parallel_calls"] = d.num_parallel_calls == 0 ? Json("auto") : Json(d.num_parallel_calls);
  j["stream"] = d.stream;
  j["max_buffer_mb"] = optional_json(d.max_buffer_mb);
  j["cache"] = d.cache;
}

Json source_json(const DataSourceSpec& d) {
  Json j{{"format", d.format}, {"header", d.header}, {"delimiter", d.delimiter}, {"label_column", d.label_column},
              {"columns", d.columns}, {"feature_shape", d.feature_shape},
              {"synthetic", {{"num_examples", d.synthetic.num_examples}, {"shape", d.synthetic.shape},
                             {"num_classes", d.synthetic.num_classes}, {"seed", d.synthetic.seed}}},
              {"batch_size", d.batch_size}, {"batch_size_per_replica", optional_json(d.batch_size_per_replica)},
              {"shuffle", d.shuffle}, {"seed", optional_json(d.seed)}, {"repeat", d.repeat},
              {"drop_remainder", d.drop_remainder}, {"scale", d.scale}, {"skip", d.skip},
              {"take", optional_json(d.take)}, {"prefetch", d.prefetch}};
  // batch_size_per_replica replaces batch_size: writing both would not load back.
  if (d.batch_size_per_replica) j.erase("batch_size");
  // File paths only when given: "" is not a valid path (in_schema_order restores the schema's order).
  if (!d.images.empty()) j["images"] = d.images;
  if (!d.labels.empty()) j["labels"] = d.labels;
  if (!d.path.empty()) j["path"] = d.path;
  if (d.files.size() == 1) j["files"] = d.files[0];
  else if (!d.files.empty()) j["files"] = d.files;
  j["compression"] = d.compression;
  j["on_error"] = d.on_error;
  Json features = Json::object();
  for (const FeatureSpec& f : d.features) {
    Json shape = Json::array();
    for (int64_t dim : f.shape) shape.push_back(dim < 0 ? Json(nullptr) : Json(dim));  // -1: a varying size
    Json fj{{"dtype", f.dtype}, {"shape", shape}};
    if (!f.decode.empty()) fj["decode"] = f.decode;
    if (f.variable) fj["variable"] = true;
    if (f.default_value) fj["default"] = *f.default_value;
    features[f.name] = fj;
  }
  j["features"] = features;
  if (!d.label_feature.empty()) j["label_feature"] = d.label_feature;
  j["features_array"] = d.features_array;
  j["labels_array"] = d.labels_array;
  // The sequence formats' options only for those formats (sequence_length has no default to print).
  if (d.format == "text") {
    j["unit"] = d.unit;
    j["sequence_length"] = d.sequence_length;
    j["stride"] = optional_json(d.stride);
    j["holdout"] = d.holdout;
    j["split"] = d.split;
  }
  if (d.format == "synthetic_sequence") {
    const SyntheticSequenceSpec& q = d.synthetic_sequence;
    j["synthetic_sequence"] = {{"task", q.task}, {"vocab_size", q.vocab_size}, {"sequence_length", q.sequence_length},
                               {"num_examples", q.num_examples}, {"seed", q.seed}};
  }
  add_stages_json(d, j);
  return j;
}

Json job_json(const JobSpec& job) {
  const ModelSpec& m = job.model;
  Json layers = Json::array();
  for (const LayerSpec& l : m.layers) layers.push_back(layer_json(l));
  const StrategySpec& st = job.strategy;
  std::vector<std::string> device_names;
  for (const DeviceSpec& d : st.devices) device_names.push_back(d.name());
  Json cluster = {{"task", nullptr}, {"timeout_secs", job.cluster.cluster_timeout_secs}};
  for (const char* type : {"chief", "worker", "ps", "evaluator"}) {
    auto it = job.cluster.cluster_tasks.find(type);
    cluster[type] = it == job.cluster.cluster_tasks.end() ? Json::array() : Json(it->second);
  }
  if (!job.cluster.task_type.empty())
    cluster["task"] = {{"type", job.cluster.task_type}, {"index", job.cluster.task_index}};
  Json data = Json::object();
  if (job.data.train) data["train"] = source_json(*job.data.train);
  if (job.data.eval) data["eval"] = source_json(*job.data.eval);
  if (job.data.predict) data["predict"] = source_json(*job.data.predict);
  const RunSpec& r = job.run;
  Json input = {{"shape", m.input_shape}};
  // Only when not the default, so that a float32 job's model_hash stays what it was.
  if (m.input_dtype != "float32") input["dtype"] = m.input_dtype;
  // A named input (model.inputs) keeps its form; the default name, input's.
  const bool named = m.input_name != "input" || !m.extra_inputs.empty();
  Json inputs = Json{{m.input_name, input}};
  for (const ModelInputSpec& in : m.extra_inputs) {
    Json j = {{"shape", in.shape}};
    if (in.dtype != "float32") j["dtype"] = in.dtype;
    inputs[in.name] = j;
  }
  Json model = {{named ? "inputs" : "input", named ? inputs : input}, {"layers", layers}, {"loss", m.loss}, {"metrics", m.metrics}};
  // Only with model.outputs, so that a one-output job's model_hash stays what it was.
  if (!m.outputs.empty()) {
    model.erase("loss");
    model.erase("metrics");
    Json outputs = Json::object();
    for (const ModelOutputSpec& o : m.outputs) {
      outputs[o.name] = {{"loss", o.loss}, {"labels", o.labels}, {"weight", o.weight}, {"metrics", o.metrics}};
    }
    model["outputs"] = outputs;
  }
  Json run = {{"model_dir", r.model_dir}, {"max_steps", r.max_steps},
              {"save_checkpoints_steps", optional_json(r.save_checkpoints_steps)},
              {"save_checkpoints_secs", optional_json(r.save_checkpoints_secs)},
              {"keep_checkpoint_max", r.keep_checkpoint_max},
              {"keep_checkpoint_every_n_hours", optional_json(r.keep_checkpoint_every_n_hours)},
              {"save_summary_steps", r.save_summary_steps},
              {"log_step_count_steps", r.log_step_count_steps}, {"seed", r.seed},
              {"deterministic", r.deterministic},
              {"slurm_requeue", r.slurm_requeue ? Json(*r.slurm_requeue) : Json("auto")},
              {"threads", r.threads == 0 ? Json("auto") : Json(r.threads)},
              {"accumulation_steps", r.accumulation_steps},
              {"micro_batch_rows", optional_json(r.micro_batch_rows)}};
  if (r.warm_start) {
    Json rename = Json::object();
    for (const auto& [to, from] : r.warm_start->rename) rename[to] = from;
    run["warm_start"] = {{"from", r.warm_start->from}, {"vars", r.warm_start->vars}, {"rename", rename},
                         {"slots", r.warm_start->slots}};
  }
  if (r.profile) run["profile"] = {{"start_step", r.profile->start_step}, {"steps", r.profile->steps}};
  Json j{
      {"model", model},
      {"strategy", {{"type", st.type}, {"devices", device_names.empty() ? Json("auto") : Json(device_names)},
                    {"num_gpus", optional_json(st.num_gpus)}, {"loss_reduction", st.loss_reduction},
                    {"communication", st.communication}, {"bucket_mb", st.bucket_mb}, {"mode", st.mode},
                    {"partition", {{"max_shards", st.partition_max_shards},
                                   {"min_shard_mb", st.partition_min_shard_mb}}}}},
      {"cluster", cluster},
      {"data", data},
      {"run", run}};
  write_fields(job_section_fields(), &job, nullptr, "", j);  // the sections with a field table (optimizer, precision, eval)
  if (const auto& e = job.export_spec) {
    j["export"] = {{"format", e->format}, {"every", e->every}, {"keep", e->keep}, {"best_by", optional_json(e->best_by)}};
  }
  return j;
}

std::string json_type(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

// `value` restricted to the keys `schema` lists, in its order (recursively).
OrderedJson in_schema_order(const Json& value, const Json& root, const Json& schema) {
  const Json s = resolve_ref(root, schema);
  if (s.contains("oneOf")) {
    const Json& branches = s["oneOf"];
    if (is_type_discriminated(root, branches)) {
      const Json* branch = branch_for_type(branches, value.value("type", std::string()));
      if (branch != nullptr) return in_schema_order(value, root, *branch);
    } else {
      const std::string t = json_type(value);
      for (const Json& b : branches)
        for (const std::string& admitted : schema_types(resolve_ref(root, b)))
          if (admitted == t || (admitted == "number" && t == "integer")) return in_schema_order(value, root, b);
    }
  }
  if (value.is_object() && s.contains("properties")) {
    OrderedJson out = OrderedJson::object();
    for (const auto& [key, sub] : s["properties"].items())
      if (value.contains(key)) out[key] = in_schema_order(value[key], root, sub);
    return out;
  }
  if (value.is_array() && s.contains("items")) {
    OrderedJson out = OrderedJson::array();
    for (const Json& item : value) out.push_back(in_schema_order(item, root, s["items"]));
    return out;
  }
  return value;
}

}  // namespace

OrderedJson resolved_json(const JobSpec& job) {
  return in_schema_order(job_json(job), job_schema(), job_schema());
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string model_hash(const OrderedJson& resolved) {
  // nlohmann::json (unlike ordered_json) sorts keys: the canonical form.
  const std::string canonical = nlohmann::json::parse(resolved["model"].dump()).dump();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(canonical)));
  return buf;
}

}  // namespace dtrain
