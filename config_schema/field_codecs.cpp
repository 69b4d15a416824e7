// The codecs of kCustom fields (engine/base/fields.hpp): the values whose
// shape no plain kind reads — "auto" or a number, paths resolved against the
// job file, device names, tf.Example features, map operations.
#include <filesystem>
#include <optional>
#include <utility>

#include "config_schema/data_files.hpp"
#include "config_schema/field_io.hpp"
#include "engine/base/job_spec.hpp"

namespace dtrain {
namespace {

template <class T>
T& as(void* member) {
  return *static_cast<T*>(member);
}
template <class T>
const T& as(const void* member) {
  return *static_cast<const T*>(member);
}

// int64_t, 0 meaning "auto" (run.threads, data.*.num_parallel_calls).
void read_auto_int(const Node& n, void* m, const FieldReading&) { as<int64_t>(m) = n.text == "auto" ? 0 : as_int(n); }
Json write_auto_int(const void* m) { return as<int64_t>(m) == 0 ? Json("auto") : Json(as<int64_t>(m)); }

// std::optional<bool>, nullopt meaning "auto" (run.slurm_requeue).
void read_auto_bool(const Node& n, void* m, const FieldReading&) {
  auto& v = as<std::optional<bool>>(m);
  v = value_type(n) == ValueType::kBool ? std::optional<bool>(as_bool(n)) : std::nullopt;
}
Json write_auto_bool(const void* m) {
  const auto& v = as<std::optional<bool>>(m);
  return v ? Json(*v) : Json("auto");
}

// A data file: absolute, resolved against the job file's directory.
void read_job_path(const Node& n, void* m, const FieldReading& how) {
  as<std::string>(m) = resolve_data_path(how.base_dir, n.text);
}
Json write_string(const void* m) { return as<std::string>(m); }

// A glob or a list of globs, each resolved against the job file's directory;
// written back as the one string when there is one.
void read_job_paths(const Node& n, void* m, const FieldReading& how) {
  auto& out = as<std::vector<std::string>>(m);
  out.clear();
  if (n.is_sequence()) {
    for (const Node& item : n.items) out.push_back(resolve_data_path(how.base_dir, item.text));
  } else {
    out.push_back(resolve_data_path(how.base_dir, n.text));
  }
}
Json write_job_paths(const void* m) {
  const auto& v = as<std::vector<std::string>>(m);
  return v.size() == 1 ? Json(v[0]) : Json(v);
}

// A path relative to the current directory, as model_dir; absolute from
// here on, so that the resolved job means the same on every task (dtrain server).
void read_cwd_path(const Node& n, void* m, const FieldReading&) {
  auto& out = as<std::string>(m);
  out = n.text.empty() ? n.text : std::filesystem::absolute(n.text).lexically_normal().string();
}

// strategy.devices: "auto" (empty) or a list of device names, each with its
// place. The semantic checks (check_devices) report an entry that does not parse.
void read_devices(const Node& n, void* m, const FieldReading&) {
  auto& out = as<std::vector<DeviceSpec>>(m);
  out.clear();
  if (!n.is_sequence()) return;
  for (const Node& item : n.items)
    if (auto device = parse_device(item.text)) out.push_back({*device, item.loc.str()});
}
Json write_devices(const void* m) {
  const auto& devices = as<std::vector<DeviceSpec>>(m);
  if (devices.empty()) return "auto";
  Json out = Json::array();
  for (const DeviceSpec& d : devices) out.push_back(d.name());
  return out;
}

// The open `features` mapping of a tfrecord source, in file order. The schema
// cannot describe its values, so a malformed entry is recorded in `problem`
// and reported by the tfrecord loader as a config error at its place.
void read_features(const Node& node, void* m, const FieldReading&) {
  auto& out = as<std::vector<FeatureSpec>>(m);
  out.clear();
  if (!node.is_mapping()) return;
  for (const auto& [key, value] : node.entries) {
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
}
Json write_features(const void* m) {
  Json out = Json::object();
  for (const FeatureSpec& f : as<std::vector<FeatureSpec>>(m)) {
    Json shape = Json::array();
    for (int64_t dim : f.shape) shape.push_back(dim < 0 ? Json(nullptr) : Json(dim));  // -1: a varying size
    Json fj{{"dtype", f.dtype}, {"shape", shape}};
    if (!f.decode.empty()) fj["decode"] = f.decode;
    if (f.variable) fj["variable"] = true;
    if (f.default_value) fj["default"] = *f.default_value;
    out[f.name] = fj;
  }
  return out;
}

// The row of map_op_fields() named `op`; null when there is none.
const Field* map_op(const std::string& op) {
  for (const Field& f : map_op_fields())
    if (op == f.name) return &f;
  return nullptr;
}

// data.*.map: a list of one-key mappings, each read through its
// operation's row. An entry with none or several keys records that in
// `problem`, reported by the pipeline as a config error at its place.
void read_map_ops(const Node& node, void* m, const FieldReading& how) {
  auto& out = as<std::vector<MapOpSpec>>(m);
  out.clear();
  for (const Node& item : node.items) {
    MapOpSpec op;
    op.where = item.loc.str();
    if (item.entries.size() != 1) {
      std::string keys;
      for (const auto& [k, v] : item.entries) keys += (keys.empty() ? "" : ", ") + k.text;
      op.problem = "each map entry names one operation, got " + std::to_string(item.entries.size()) +
                   (keys.empty() ? "" : " (" + keys + ")");
      out.push_back(op);
      continue;
    }
    op.op = item.entries[0].first.text;
    if (const Field* row = map_op(op.op)) read_fields(item, std::span<const Field>(row, 1), &op, how);
    out.push_back(op);
  }
}
Json write_map_ops(const void* m) {
  Json out = Json::array();
  for (const MapOpSpec& op : as<std::vector<MapOpSpec>>(m)) {
    const Field* row = map_op(op.op);
    if (row == nullptr) continue;
    Json entry = Json::object();
    write_fields(std::span<const Field>(row, 1), &op, nullptr, "", entry);
    out.push_back(entry);
  }
  return out;
}
Json map_ops_schema(const Field&) {
  const MapOpSpec defaults;
  Json properties = Json::object(), required = Json::array();
  fields_schema(map_op_fields(), &defaults, properties, required);
  return Json{{"type", "array"},
              {"items", {{"type", "object"}, {"properties", properties}, {"additionalProperties", false}}}};
}

// data.*.columns of a csv source: each entry a name or index (a number
// column) or a mapping read through csv_column_fields(); written back as the
// plain name where the entry says no more than that.
void read_csv_columns(const Node& node, void* m, const FieldReading& how) {
  auto& out = as<std::vector<CsvColumnSpec>>(m);
  out.clear();
  for (const Node& item : node.items) {
    CsvColumnSpec c;
    c.where = item.loc.str();
    if (item.is_mapping()) {
      read_fields(item, csv_column_fields(), &c, how);
    } else {
      c.name = item.text;
    }
    out.push_back(c);
  }
}
Json write_csv_columns(const void* m) {
  Json out = Json::array();
  for (const CsvColumnSpec& c : as<std::vector<CsvColumnSpec>>(m)) {
    if (c == CsvColumnSpec(c.name)) {
      out.push_back(c.name);
      continue;
    }
    const CsvColumnSpec defaults;
    Json entry = Json::object();
    write_fields(csv_column_fields(), &c, &defaults, "", entry);
    out.push_back(entry);
  }
  return out;
}
Json csv_columns_schema(const Field&) {
  const CsvColumnSpec defaults;
  Json properties = Json::object(), required = Json::array();
  fields_schema(csv_column_fields(), &defaults, properties, required);
  Json mapping{{"type", "object"}, {"properties", properties}, {"required", required}, {"additionalProperties", false}};
  Json plain = Json::object();
  plain["type"] = Json::array({"string", "integer"});
  Json items = Json::object();
  items["oneOf"] = Json::array({plain, mapping});
  return Json{{"type", "array"}, {"items", items}};
}

// run.warm_start.rename: new-model name -> checkpoint name, in file order,
// with the places of each key and value (over the whole WarmStartSpec).
void read_rename(const Node& n, void* m, const FieldReading&) {
  auto& w = as<WarmStartSpec>(m);
  w.rename.clear();
  w.rename_where.clear();
  for (const auto& [key, value] : n.entries) {
    w.rename.emplace_back(key.text, value.text);
    w.rename_where.emplace_back(key.loc.str(), value.loc.str());
  }
}
Json write_rename(const void* m) {
  Json out = Json::object();
  for (const auto& [to, from] : as<WarmStartSpec>(m).rename) out[to] = from;
  return out;
}

//  name                 read             write             schema (null: the field's own)
const FieldCodec kCodecs[] = {
    {"auto_int",          read_auto_int,   write_auto_int,   nullptr},
    {"auto_bool",         read_auto_bool,  write_auto_bool,  nullptr},
    {"job_path",          read_job_path,   write_string,     nullptr},
    {"job_paths",         read_job_paths,  write_job_paths,  nullptr},
    {"cwd_path",          read_cwd_path,   write_string,     nullptr},
    {"devices",           read_devices,    write_devices,    nullptr},
    {"tfrecord_features", read_features,   write_features,   nullptr},
    {"map_ops",           read_map_ops,    write_map_ops,    map_ops_schema},
    {"csv_columns",       read_csv_columns, write_csv_columns, csv_columns_schema},
    {"warm_start_rename", read_rename,     write_rename,     nullptr},
};

}  // namespace

std::span<const FieldCodec> field_codecs() { return kCodecs; }

}  // namespace dtrain
