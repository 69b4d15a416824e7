// The idx source: an IDX images file and an IDX labels file (raw or gzip).
// uint8 images stay raw in memory and are converted and scaled per batch.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "datasets/idx_file.hpp"
#include "datasets/source.hpp"

namespace dtrain {

namespace {

class IdxSource final : public ExampleSource {
 public:
  IdxSource(IdxArray images, std::vector<float> labels, Shape feature_shape, Shape label_shape, std::string name,
            std::string labels_name)
      : images_(std::move(images)), labels_(std::move(labels)), feature_shape_(std::move(feature_shape)),
        label_shape_(std::move(label_shape)), name_(std::move(name)), labels_name_(std::move(labels_name)) {}

  int64_t size() const override { return images_.dims[0]; }
  Shape feature_shape() const override { return feature_shape_; }
  Shape label_shape() const override { return label_shape_; }
  std::string describe() const override { return name_; }
  // "train-images.idx: item 12, position 3", "train-labels.idx: item 12".
  std::string locate(int64_t id, const ExampleValue& value) const override {
    if (value.label) return value.output == 0 ? fmt::format("{}: item {}", labels_name_, id) : "";
    if (value.input > 0) return "";
    if (value.position < 0 || num_elements(feature_shape_) == 1) return fmt::format("{}: item {}", name_, id);
    return fmt::format("{}: item {}, position {}", name_, id, value.position);
  }

  Batch gather(const std::vector<int64_t>& indices, float scale) const override {
    const auto b = static_cast<int64_t>(indices.size());
    Shape fshape{b}, lshape{b};
    fshape.insert(fshape.end(), feature_shape_.begin(), feature_shape_.end());
    lshape.insert(lshape.end(), label_shape_.begin(), label_shape_.end());
    Batch out{Tensor(fshape), Tensor(lshape), indices};
    const auto frow = static_cast<size_t>(num_elements(feature_shape_));
    const auto lrow = static_cast<size_t>(num_elements(label_shape_));
    float* fo = out.features.data();
    float* lo = out.labels.data();
    for (int64_t i : indices) {
      const size_t at = static_cast<size_t>(i) * frow;
      if (!images_.u8.empty()) {
        const uint8_t* px = images_.u8.data() + at;
        for (size_t k = 0; k < frow; ++k) fo[k] = static_cast<float>(px[k]) * scale;
      } else {
        const float* v = images_.f32.data() + at;
        for (size_t k = 0; k < frow; ++k) fo[k] = v[k] * scale;
      }
      std::copy_n(labels_.data() + static_cast<size_t>(i) * lrow, lrow, lo);
      fo += frow;
      lo += lrow;
    }
    return out;
  }

 private:
  IdxArray images_;            // (N, dims...) raw uint8 or converted floats
  std::vector<float> labels_;  // (N, label shape...)
  Shape feature_shape_, label_shape_;
  std::string name_;         // the images file
  std::string labels_name_;  // the labels file
};

}  // namespace

Result<SourcePtr> load_idx_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.images.empty() || spec.labels.empty()) {
    return config_error(ctx.prefix + "format idx needs both images and labels");
  }
  const std::string images_path = resolve_source_path(spec.images, ctx.base_dir);
  const std::string labels_path = resolve_source_path(spec.labels, ctx.base_dir);

  auto image_bytes = read_data_file(images_path);
  if (!image_bytes) return image_bytes.error();
  auto images = parse_idx(*image_bytes, images_path, "images");
  if (!images) return images.error();
  image_bytes.value() = {};  // free the file copy before reading the labels

  auto label_bytes = read_data_file(labels_path);
  if (!label_bytes) return label_bytes.error();
  auto labels = parse_idx(*label_bytes, labels_path, "labels");
  if (!labels) return labels.error();

  const Shape& idims = images->dims;
  const Shape& ldims = labels->dims;
  if (idims.size() < 2) {
    return data_error(fmt::format("{}: an images file needs at least 2 dimensions (count, features...) but this has {}",
                                  images_path, idims.size()));
  }
  if (ldims.size() > 2) {
    return data_error(fmt::format("{}: a labels file has 1 dimension (class ids) or 2 (targets) but this has {}",
                                  labels_path, ldims.size()));
  }
  if (idims[0] != ldims[0]) {
    return data_error(fmt::format("{} has {} images but {} has {} labels", images_path, idims[0], labels_path, ldims[0]));
  }
  // (N, rows, cols) images are one-channel HWC: features (rows, cols, 1).
  Shape feature_shape(idims.begin() + 1, idims.end());
  if (idims.size() == 3) feature_shape.push_back(1);
  Shape label_shape(ldims.begin() + 1, ldims.end());

  std::vector<float> label_values;
  if (labels->dtype == 0x08) {
    label_values.assign(labels->u8.begin(), labels->u8.end());
  } else {
    label_values = std::move(labels->f32);
  }
  return SourcePtr(std::make_shared<IdxSource>(std::move(images.value()), std::move(label_values),
                                               std::move(feature_shape), std::move(label_shape), images_path,
                                               labels_path));
}

}  // namespace dtrain
