// tf.Example decoding with the generated protobuf classes (engine/proto/
// example.proto) into the float rows of an in-memory source.
#include "datasets/example_decode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "datasets/example_jpeg.hpp"
#include "datasets/example_png.hpp"
#include "example.pb.h"

namespace dtrain {

namespace {

// "[null, null, 3]": shape_str with the varying sizes (-1) as the job writes them.
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out;
  for (int64_t d : shape) out += (out.empty() ? "" : ", ") + (d < 0 ? std::string("null") : std::to_string(d));
  return "[" + out + "]";
}

std::string feature_prefix(const std::string& prefix, const FeatureSpec& f) {
  return prefix + "features." + f.name + ": ";
}

Status check_feature(const FeatureSpec& f, const std::string& prefix) {
  const std::string at = feature_prefix(prefix, f);
  if (!f.problem.empty()) return config_error(at + f.problem);
  if (f.dtype != "float" && f.dtype != "int64" && f.dtype != "bytes") {
    return config_error(at + "dtype \"" + f.dtype + "\" is not one of float, int64, bytes");
  }
  if (f.dtype == "bytes" && f.decode != "raw_uint8" && f.decode != "png" && f.decode != "jpeg") {
    return config_error(at + (f.decode.empty() ? std::string("bytes features need decode: raw_uint8, png or jpeg")
                                               : "decode \"" + f.decode + "\" is not one of raw_uint8, png, jpeg"));
  }
  const bool open_size = std::any_of(f.shape.begin(), f.shape.end(), [](int64_t d) { return d < 0; });
  if (f.decode == "jpeg" &&
      (f.shape.size() != 3 || (f.shape[2] != 1 && f.shape[2] != 3) || f.variable || (f.shape[0] < 0) != (f.shape[1] < 0))) {
    return config_error(at + "decode jpeg needs a shape [height, width, channels] with 1 or 3 channels, or [null, null, "
                             "channels] for images of varying size, got " + shape_text(f.shape));
  }
  if (open_size && f.decode != "jpeg") {
    return config_error(at + "null sizes are for the height and width of decode: jpeg images, got shape " +
                        shape_text(f.shape) + (f.decode.empty() ? "" : " with decode " + f.decode));
  }
  if (f.decode == "png" && (f.shape.size() != 3 || f.shape[2] > 4 || f.variable)) {
    return config_error(at + "decode png needs a fixed shape [height, width, channels] with 1-4 channels, got " +
                        shape_text(f.shape));
  }
  if (f.dtype != "bytes" && !f.decode.empty()) return config_error(at + "decode applies only to dtype bytes");
  if (f.variable && f.shape.empty()) return config_error(at + "variable needs a shape giving the maximum length");
  return {};
}

const char* kind_name(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList: return "bytes";
    case tensorflow::Feature::kFloatList: return "float";
    case tensorflow::Feature::kInt64List: return "int64";
    default: return "empty";
  }
}

// Writes num_elements(f.shape) floats of one feature to `out`.
Status decode_feature(const tensorflow::Example& ex, const FeatureSpec& f, float* out, const std::string& where) {
  const auto n = static_cast<size_t>(num_elements(f.shape));
  const auto& map = ex.features().feature();
  const auto it = map.find(f.name);
  const float pad = static_cast<float>(f.default_value.value_or(0.0));
  if (it == map.end() || it->second.kind_case() == tensorflow::Feature::KIND_NOT_SET) {
    if (!f.default_value && !f.variable) return data_error(fmt::format("{}: feature \"{}\" is missing and has no default", where, f.name));
    std::fill_n(out, n, pad);
    return {};
  }
  const tensorflow::Feature& feat = it->second;
  if (f.dtype != kind_name(feat)) {
    return data_error(fmt::format("{}: feature \"{}\" holds {} values but the spec says dtype {}", where, f.name,
                                  kind_name(feat), f.dtype));
  }
  size_t count = 0;
  auto check_count = [&](size_t got, const char* unit) -> Status {
    if (got == n || (f.variable && got < n)) return {};
    return data_error(fmt::format("{}: feature \"{}\" has {} {} but shape {} needs {}{}", where, f.name, got, unit,
                                  shape_str(f.shape), f.variable ? "at most " : "", n));
  };
  if (feat.has_bytes_list()) {
    const auto& list = feat.bytes_list().value();
    if (list.size() != 1) {
      return data_error(fmt::format("{}: feature \"{}\" has {} byte strings but raw_uint8 needs 1", where, f.name, list.size()));
    }
    const std::string& b = list[0];
    if (f.decode == "png") return decode_png(b, f.shape[0], f.shape[1], f.shape[2], out, where + ": feature \"" + f.name + "\"");
    if (f.decode == "jpeg") return decode_jpeg(b, f.shape[0], f.shape[1], f.shape[2], out, where + ": feature \"" + f.name + "\"");
    if (Status s = check_count(b.size(), "bytes"); !s) return s;
    for (unsigned char c : b) out[count++] = static_cast<float>(c);
  } else if (feat.has_float_list()) {
    const auto& list = feat.float_list().value();
    if (Status s = check_count(static_cast<size_t>(list.size()), "values"); !s) return s;
    for (float v : list) out[count++] = v;
  } else {
    const auto& list = feat.int64_list().value();
    if (Status s = check_count(static_cast<size_t>(list.size()), "values"); !s) return s;
    for (int64_t v : list) out[count++] = static_cast<float>(v);
  }
  std::fill(out + count, out + n, pad);
  return {};
}

}  // namespace

Result<ExampleLayout> make_example_layout(const DataSourceSpec& spec, const std::string& prefix,
                                          const std::vector<std::string>& model_inputs) {
  ExampleLayout layout;
  bool have_label = false;
  for (const FeatureSpec& f : spec.features) {
    if (Status s = check_feature(f, prefix); !s) return s.error();
    if (!spec.weight.empty() && f.name == spec.weight) {
      if (f.dtype == "bytes" || num_elements(f.shape) != 1) {
        return config_error(feature_prefix(prefix, f) + "the weight feature must be one float or int64 value (shape [] "
                            "or [1])");
      }
      layout.weight = f;
      continue;
    }
    if (f.name == spec.label_feature) {
      if (f.dtype == "bytes") return config_error(feature_prefix(prefix, f) + "the label feature must be float or int64");
      layout.label = f;
      have_label = true;
    } else {
      layout.inputs.push_back(f);
    }
  }
  if (!spec.weight.empty() && !layout.weight) {
    return config_error(prefix + "weight \"" + spec.weight + "\" is not one of the features");
  }
  if (!have_label) {
    return config_error(prefix + "label_feature \"" + spec.label_feature + "\" is not one of the features");
  }
  if (layout.inputs.empty()) return config_error(prefix + "features lists no feature besides the label");
  if (model_inputs.size() > 1) {
    // One feature per model input, of its name, in the model's order.
    std::vector<FeatureSpec> ordered;
    std::string names;
    for (const std::string& n : model_inputs) names += (names.empty() ? "" : ", ") + n;
    for (const std::string& n : model_inputs) {
      auto it = std::find_if(layout.inputs.begin(), layout.inputs.end(), [&](const FeatureSpec& f) { return f.name == n; });
      if (it == layout.inputs.end()) {
        return config_error(fmt::format("{}features: no feature \"{}\" for model input \"{}\"; a tfrecord source gives "
                                        "each model input the tf.Example feature of its name (the model reads {})",
                                        prefix, n, n, names));
      }
      ordered.push_back(*it);
      layout.input_shapes.push_back(it->shape.empty() ? Shape{1} : Shape(it->shape.begin(), it->shape.end()));
    }
    for (const FeatureSpec& f : layout.inputs) {
      if (std::find(model_inputs.begin(), model_inputs.end(), f.name) == model_inputs.end()) {
        return config_error(fmt::format("{}\"{}\" is neither the label nor a model input ({}); remove it or add it to "
                                        "model.inputs",
                                        feature_prefix(prefix, f), f.name, names));
      }
    }
    layout.inputs = std::move(ordered);
  }
  for (const FeatureSpec& f : layout.inputs) {
    if (layout.inputs.size() > 1 && f.shape.size() == 3 && f.shape[0] < 0) {
      return config_error(feature_prefix(prefix, f) + "images of varying size (shape " + shape_text(f.shape) +
                          ") must be the only input feature");
    }
  }
  if (layout.inputs.size() == 1) {
    layout.feature_shape = layout.inputs[0].shape.empty() ? Shape{1} : layout.inputs[0].shape;
  } else {
    int64_t total = 0;
    for (const FeatureSpec& f : layout.inputs) total += num_elements(f.shape);
    layout.feature_shape = {total};
  }
  layout.label_shape = layout.label.shape;
  return layout;
}

std::string feature_of_value(const ExampleLayout& layout, const ExampleValue& value) {
  if (value.label) return value.output == 0 ? fmt::format(" (feature \"{}\")", layout.label.name) : "";
  // Several model inputs: input k is feature k. One: the features one after another.
  const bool per_input = !layout.input_shapes.empty();
  if (per_input && value.input >= layout.inputs.size()) return "";
  if (!per_input && value.input > 0) return "";
  int64_t position = value.position;
  for (size_t k = per_input ? value.input : 0; k < layout.inputs.size(); ++k) {
    const FeatureSpec& f = layout.inputs[k];
    const int64_t n = num_elements(f.shape);  // [] gives 1
    if (per_input || position < 0 || (n > 0 && position < n) || k + 1 == layout.inputs.size()) {
      if (position < 0 || n == 1) return fmt::format(" (feature \"{}\")", f.name);
      return fmt::format(" (feature \"{}\", position {})", f.name, position);
    }
    position -= n;
  }
  return "";
}

// The weight feature's value into *weight, checked.
Status decode_weight(const tensorflow::Example& ex, const ExampleLayout& layout, float* weight,
                     const std::string& where) {
  if (!layout.weight || weight == nullptr) return {};
  if (Status s = decode_feature(ex, *layout.weight, weight, where); !s) return s;
  if (!std::isfinite(*weight) || *weight < 0.0f) {
    return data_error(fmt::format("{}: feature \"{}\": weight {} must be finite and >= 0", where, layout.weight->name,
                                  *weight));
  }
  return {};
}

Status decode_example(std::string_view record, const ExampleLayout& layout, float* features, float* label,
                      const std::string& where, float* weight) {
  tensorflow::Example ex;
  if (!ex.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    return data_error(where + ": not a tf.Example (protobuf parse failed)");
  }
  for (const FeatureSpec& f : layout.inputs) {
    if (Status s = decode_feature(ex, f, features, where); !s) return s;
    features += num_elements(f.shape);
  }
  if (Status s = decode_weight(ex, layout, weight, where); !s) return s;
  return decode_feature(ex, layout.label, label, where);
}

Status split_example(std::string_view record, const ExampleLayout& layout, float* label, std::string& image,
                     const std::string& where, float* weight) {
  tensorflow::Example ex;
  if (!ex.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    return data_error(where + ": not a tf.Example (protobuf parse failed)");
  }
  const FeatureSpec& f = layout.inputs[0];
  auto& map = *ex.mutable_features()->mutable_feature();
  const auto it = map.find(f.name);
  if (it == map.end()) return data_error(fmt::format("{}: feature \"{}\" is missing and has no default", where, f.name));
  if (!it->second.has_bytes_list()) {
    return data_error(fmt::format("{}: feature \"{}\" holds {} values but the spec says dtype {}", where, f.name,
                                  kind_name(it->second), f.dtype));
  }
  auto* list = it->second.mutable_bytes_list()->mutable_value();
  if (list->size() != 1) {
    return data_error(fmt::format("{}: feature \"{}\" has {} byte strings but a JPEG image needs 1", where, f.name,
                                  list->size()));
  }
  image.swap(*list->Mutable(0));
  if (Status s = decode_weight(ex, layout, weight, where); !s) return s;
  return decode_feature(ex, layout.label, label, where);
}

std::string encode_example(const float* image, size_t n, bool image_uint8, const float* label, size_t label_n,
                           bool label_int64) {
  tensorflow::Example ex;
  auto& map = *ex.mutable_features()->mutable_feature();
  if (image_uint8) {
    std::string pixels(n, '\0');
    for (size_t i = 0; i < n; ++i) pixels[i] = static_cast<char>(static_cast<uint8_t>(image[i]));
    map["image"].mutable_bytes_list()->add_value(std::move(pixels));
  } else {
    auto* list = map["image"].mutable_float_list();
    for (size_t i = 0; i < n; ++i) list->add_value(image[i]);
  }
  if (label_int64) {
    auto* list = map["label"].mutable_int64_list();
    for (size_t i = 0; i < label_n; ++i) list->add_value(static_cast<int64_t>(label[i]));
  } else {
    auto* list = map["label"].mutable_float_list();
    for (size_t i = 0; i < label_n; ++i) list->add_value(label[i]);
  }
  return ex.SerializeAsString();
}

Result<std::string> describe_example(std::string_view record, size_t max_values, const std::string& where) {
  tensorflow::Example ex;
  if (!ex.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    return data_error(where + ": not a tf.Example (protobuf parse failed)");
  }
  const std::map<std::string, tensorflow::Feature> sorted(ex.features().feature().begin(), ex.features().feature().end());
  std::string out;
  for (const auto& [name, feat] : sorted) {
    std::string values;
    size_t count = 0;
    auto add = [&](const std::string& v) {
      if (count++ < max_values) values += " " + v;
    };
    if (feat.has_bytes_list()) {
      for (const std::string& b : feat.bytes_list().value()) {
        std::string hex;
        for (size_t i = 0; i < std::min(b.size(), max_values); ++i) {
          hex += fmt::format("{}{:02x}", i == 0 ? "" : " ", static_cast<unsigned char>(b[i]));
        }
        add(fmt::format("<{} bytes: {}{}>", b.size(), hex, b.size() > max_values ? " ..." : ""));
      }
    } else if (feat.has_float_list()) {
      for (float v : feat.float_list().value()) add(fmt::format("{}", v));
    } else if (feat.has_int64_list()) {
      for (int64_t v : feat.int64_list().value()) add(std::to_string(v));
    }
    out += fmt::format("  {}: {}[{}]{}{}\n", name, kind_name(feat), count, values, count > max_values ? " ..." : "");
  }
  return out;
}

}  // namespace dtrain
