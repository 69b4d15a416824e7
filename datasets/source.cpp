// The table of source formats, path resolution, and the in-memory tensor source
// that the csv and synthetic loaders produce.
#include "datasets/source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cassert>
#include <cstring>
#include <filesystem>
#include <utility>

#include "datasets/image_folder_source.hpp"
#include "datasets/npy_source.hpp"
#include "datasets/text_folder_source.hpp"
#include "datasets/text_source.hpp"
#include "datasets/tfrecord_source.hpp"

namespace dtrain {

namespace {

struct SourceFormat {
  const char* name;
  Result<SourcePtr> (*load)(const DataSourceSpec&, const SourceContext&);
  // The shapes the spec alone gives; nullptr when they come from the files.
  std::optional<ExampleShapes> (*shapes)(const DataSourceSpec&);
  // How the format gives several model inputs by name; nullptr: it cannot.
  const char* named_inputs = nullptr;
  // How the format gives labels per output by name; nullptr: it cannot.
  const char* named_labels = nullptr;
  // How the format gives example weights (data.*.weight); nullptr: it cannot.
  const char* weights = nullptr;
};

// One row per format; the only place a format name is looked up.
constexpr SourceFormat kSourceFormats[] = {
    {"idx", &load_idx_source, nullptr},
    {"csv", &load_csv_source, nullptr, "columns with input: naming it", nullptr, "a column"},
    {"synthetic", &make_synthetic_source, &synthetic_shapes},
    {"synthetic_sequence", &make_sequence_task_source, &sequence_task_shapes},
    {"tfrecord", &load_tfrecord_source, nullptr, "features named like the inputs", nullptr, "a feature"},
    {"npy", &load_npy_source, nullptr},
    {"npz", &load_npz_source, nullptr, "arrays named like the inputs", "arrays named by each output's labels",
     "an array"},
    {"text", &load_text_source, &text_shapes},
    {"image_folder", &load_image_folder_source, &image_folder_shapes},
    {"text_folder", &load_text_folder_source, &text_folder_shapes},
};

class TensorSource final : public ExampleSource {
 public:
  TensorSource(std::vector<Tensor> features, std::vector<Tensor> labels, std::string name,
               std::vector<int64_t> file_starts, Tensor weights, std::vector<std::string> class_names,
               std::string summary, ExampleLocator locate)
      : features_(std::move(features)),
        labels_(std::move(labels[0])),
        extra_labels_(std::make_move_iterator(labels.begin() + 1), std::make_move_iterator(labels.end())),
        name_(std::move(name)),
        file_starts_(std::move(file_starts)),
        weights_(std::move(weights)),
        class_names_(std::move(class_names)),
        summary_(std::move(summary)),
        locate_(std::move(locate)) {}

  int64_t size() const override { return labels_.dim(0); }
  Shape feature_shape() const override { return example_shape(features_[0]); }
  Shape label_shape() const override { return example_shape(labels_); }
  std::vector<Shape> extra_feature_shapes() const override {
    std::vector<Shape> out;
    for (size_t k = 1; k < features_.size(); ++k) out.push_back(example_shape(features_[k]));
    return out;
  }
  std::vector<Shape> extra_label_shapes() const override {
    std::vector<Shape> out;
    for (const Tensor& l : extra_labels_) out.push_back(example_shape(l));
    return out;
  }
  std::string describe() const override { return name_; }
  std::vector<int64_t> file_starts() const override { return file_starts_; }
  bool has_weights() const override { return !weights_.empty(); }
  std::vector<std::string> class_names() const override { return class_names_; }
  std::string summary() const override { return summary_; }
  std::string locate(int64_t id, const ExampleValue& value) const override { return locate_ ? locate_(id, value) : ""; }

  Batch gather(const std::vector<int64_t>& indices, float scale) const override {
    Batch out{gather_rows(features_[0], indices, scale), gather_rows(labels_, indices, 1.0f), indices};
    for (size_t k = 1; k < features_.size(); ++k) out.extra_features.push_back(gather_rows(features_[k], indices, scale));
    for (const Tensor& l : extra_labels_) out.extra_labels.push_back(gather_rows(l, indices, 1.0f));
    if (!weights_.empty()) out.weights = gather_rows(weights_, indices, 1.0f);
    return out;
  }

 private:
  static Shape example_shape(const Tensor& t) { return Shape(t.shape().begin() + 1, t.shape().end()); }
  // Rows `indices` of t (N, ...), each value multiplied by scale.
  static Tensor gather_rows(const Tensor& t, const std::vector<int64_t>& indices, float scale) {
    Shape shape = t.shape();
    shape[0] = static_cast<int64_t>(indices.size());
    Tensor out(shape);
    const int64_t row = num_elements(example_shape(t));
    for (size_t r = 0; r < indices.size(); ++r) {
      const float* in = t.data() + indices[r] * row;
      float* to = out.data() + static_cast<int64_t>(r) * row;
      if (scale == 1.0f) {
        std::copy_n(in, row, to);
      } else {
        for (int64_t k = 0; k < row; ++k) to[k] = in[k] * scale;
      }
    }
    return out;
  }

  std::vector<Tensor> features_;  // each (N, its shape...); [0] the first input
  Tensor labels_;                 // (N, label shape...)
  std::vector<Tensor> extra_labels_;  // the other outputs' labels, each (N, its shape...)
  std::string name_;
  std::vector<int64_t> file_starts_;  // ExampleSource::file_starts()
  Tensor weights_;                    // (N) example weights, or empty
  std::vector<std::string> class_names_;
  std::string summary_;
  ExampleLocator locate_;
};

}  // namespace

Status check_source_inputs(const DataSourceSpec& spec, const std::vector<std::string>& inputs,
                           const std::string& prefix) {
  if (inputs.size() < 2) return Status::Ok();
  std::string names, can;
  for (const std::string& n : inputs) names += (names.empty() ? "" : ", ") + n;
  for (const SourceFormat& f : kSourceFormats) {
    if (spec.format == f.name && f.named_inputs != nullptr) return Status::Ok();
    if (f.named_inputs != nullptr) can += fmt::format("{}{} ({})", can.empty() ? "" : " or ", f.name, f.named_inputs);
  }
  return config_error(fmt::format("{}format {} gives each example one features tensor, but the model has {} inputs ({}); "
                                  "use format {}",
                                  prefix, spec.format, inputs.size(), names, can));
}

Status check_source_outputs(const DataSourceSpec& spec, const std::vector<std::string>& outputs,
                            const std::string& prefix) {
  if (outputs.size() < 2) return Status::Ok();
  std::string can;
  for (const SourceFormat& f : kSourceFormats) {
    if (spec.format == f.name && f.named_labels != nullptr) return Status::Ok();
    if (f.named_labels != nullptr) can += fmt::format("{}{} ({})", can.empty() ? "" : " or ", f.name, f.named_labels);
  }
  std::string names;
  for (const std::string& n : outputs) names += (names.empty() ? "" : ", ") + n;
  return config_error(fmt::format("{}format {} gives each example one labels tensor, but the model has {} outputs ({}); "
                                  "use format {}",
                                  prefix, spec.format, outputs.size(), names, can));
}

Status check_source_weights(const DataSourceSpec& spec, const std::string& prefix) {
  if (spec.weight.empty()) return Status::Ok();
  std::vector<std::string> can;
  for (const SourceFormat& f : kSourceFormats) {
    if (spec.format == f.name && f.weights != nullptr) return Status::Ok();
    if (f.weights != nullptr) can.push_back(fmt::format("{} ({})", f.name, f.weights));
  }
  std::string list;
  for (size_t i = 0; i < can.size(); ++i) list += (i == 0 ? "" : i + 1 == can.size() ? " or " : ", ") + can[i];
  return config_error(fmt::format("{}weight: format {} cannot give example weights; use format {}", prefix,
                                  spec.format, list));
}

Status check_example_weights(const Tensor& weights, const std::string& where) {
  const float* w = weights.data();
  for (int64_t i = 0; i < weights.numel(); ++i) {
    if (!std::isfinite(w[i]) || w[i] < 0.0f) {
      return data_error(fmt::format("{}: example {}'s weight is {}; weights must be finite and >= 0", where, i, w[i]));
    }
  }
  return Status::Ok();
}

Result<SourcePtr> load_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (Status s = check_source_inputs(spec, ctx.inputs, ctx.prefix); !s) return s.error();
  if (Status s = check_source_outputs(spec, ctx.outputs, ctx.prefix); !s) return s.error();
  if (Status s = check_source_weights(spec, ctx.prefix); !s) return s.error();
  std::string known;
  for (const SourceFormat& f : kSourceFormats) {
    if (spec.format == f.name) return f.load(spec, ctx);
    known += known.empty() ? f.name : std::string(", ") + f.name;
  }
  return config_error(ctx.prefix + "format \"" + spec.format + "\" is not one of " + known);
}

std::optional<ExampleShapes> declared_shapes(const DataSourceSpec& spec) {
  for (const SourceFormat& f : kSourceFormats) {
    if (spec.format == f.name) return f.shapes == nullptr ? std::nullopt : f.shapes(spec);
  }
  return std::nullopt;
}

std::string resolve_source_path(const std::string& path, const std::string& base_dir) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / p).string();
}

SourcePtr make_tensor_source(Tensor features, Tensor labels, std::string name) {
  return make_tensor_source(std::move(features), std::move(labels), std::move(name), {0});
}

SourcePtr make_tensor_source(Tensor features, Tensor labels, std::string name, std::vector<int64_t> file_starts) {
  std::vector<Tensor> all;
  all.push_back(std::move(features));
  return make_tensor_source(std::move(all), std::move(labels), std::move(name), std::move(file_starts));
}

SourcePtr make_tensor_source(std::vector<Tensor> features, Tensor labels, std::string name,
                             std::vector<int64_t> file_starts) {
  std::vector<Tensor> all;
  all.push_back(std::move(labels));
  return make_tensor_source(std::move(features), std::move(all), std::move(name), std::move(file_starts));
}

SourcePtr make_tensor_source(std::vector<Tensor> features, std::vector<Tensor> labels, std::string name,
                             std::vector<int64_t> file_starts, Tensor weights, std::vector<std::string> class_names,
                             std::string summary, ExampleLocator locate) {
  assert(!file_starts.empty() && file_starts[0] == 0 && std::is_sorted(file_starts.begin(), file_starts.end()));
  assert(!features.empty() && !labels.empty());
  for ([[maybe_unused]] const Tensor& f : features) assert(f.dim(0) == labels[0].dim(0));
  for ([[maybe_unused]] const Tensor& l : labels) assert(l.dim(0) == labels[0].dim(0));
  assert(weights.empty() || (weights.rank() == 1 && weights.dim(0) == labels[0].dim(0)));
  return std::make_shared<TensorSource>(std::move(features), std::move(labels), std::move(name), std::move(file_starts),
                                        std::move(weights), std::move(class_names), std::move(summary),
                                        std::move(locate));
}

std::vector<Tensor> split_inputs(const std::vector<float>& rows, int64_t n, const std::vector<Shape>& shapes) {
  int64_t width = 0;
  for (const Shape& s : shapes) width += num_elements(s);
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (const Shape& s : shapes) {
    Shape batched{n};
    batched.insert(batched.end(), s.begin(), s.end());
    Tensor t(batched);
    const int64_t k = num_elements(s);
    for (int64_t r = 0; r < n; ++r) std::copy_n(rows.data() + r * width + offset, k, t.data() + r * k);
    out.push_back(std::move(t));
    offset += k;
  }
  return out;
}

}  // namespace dtrain
