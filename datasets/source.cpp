// The table of source formats, path resolution, and the in-memory tensor source
// that the csv and synthetic loaders produce.
#include "datasets/source.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <filesystem>
#include <utility>

#include "datasets/npy_source.hpp"
#include "datasets/text_source.hpp"
#include "datasets/tfrecord_source.hpp"

namespace dtrain {

namespace {

struct SourceFormat {
  const char* name;
  Result<SourcePtr> (*load)(const DataSourceSpec&, const SourceContext&);
  // The shapes the spec alone gives; nullptr when they come from the files.
  std::optional<ExampleShapes> (*shapes)(const DataSourceSpec&);
};

// One row per format; the only place a format name is looked up.
constexpr SourceFormat kSourceFormats[] = {
    {"idx", &load_idx_source, nullptr},
    {"csv", &load_csv_source, nullptr},
    {"synthetic", &make_synthetic_source, &synthetic_shapes},
    {"synthetic_sequence", &make_sequence_task_source, &sequence_task_shapes},
    {"tfrecord", &load_tfrecord_source, nullptr},
    {"npy", &load_npy_source, nullptr},
    {"npz", &load_npz_source, nullptr},
    {"text", &load_text_source, &text_shapes},
};

class TensorSource final : public ExampleSource {
 public:
  TensorSource(Tensor features, Tensor labels, std::string name, std::vector<int64_t> file_starts)
      : features_(std::move(features)),
        labels_(std::move(labels)),
        name_(std::move(name)),
        file_starts_(std::move(file_starts)) {}

  int64_t size() const override { return features_.dim(0); }
  Shape feature_shape() const override { return Shape(features_.shape().begin() + 1, features_.shape().end()); }
  Shape label_shape() const override { return Shape(labels_.shape().begin() + 1, labels_.shape().end()); }
  std::string describe() const override { return name_; }
  std::vector<int64_t> file_starts() const override { return file_starts_; }

  Batch gather(const std::vector<int64_t>& indices, float scale) const override {
    const auto b = static_cast<int64_t>(indices.size());
    Shape fshape = features_.shape(), lshape = labels_.shape();
    fshape[0] = b;
    lshape[0] = b;
    Batch out{Tensor(fshape), Tensor(lshape), indices};
    const int64_t frow = num_elements(feature_shape()), lrow = num_elements(label_shape());
    for (int64_t r = 0; r < b; ++r) {
      const int64_t i = indices[static_cast<size_t>(r)];
      const float* f = features_.data() + i * frow;
      float* fo = out.features.data() + r * frow;
      for (int64_t k = 0; k < frow; ++k) fo[k] = f[k] * scale;
      std::copy_n(labels_.data() + i * lrow, lrow, out.labels.data() + r * lrow);
    }
    return out;
  }

 private:
  Tensor features_;  // (N, feature shape...)
  Tensor labels_;    // (N, label shape...)
  std::string name_;
  std::vector<int64_t> file_starts_;  // ExampleSource::file_starts()
};

}  // namespace

Result<SourcePtr> load_source(const DataSourceSpec& spec, const SourceContext& ctx) {
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
  assert(!file_starts.empty() && file_starts[0] == 0 && std::is_sorted(file_starts.begin(), file_starts.end()));
  return std::make_shared<TensorSource>(std::move(features), std::move(labels), std::move(name), std::move(file_starts));
}

}  // namespace dtrain
