// One streamed JPEG example through decode and the map's pixel operations
// (see jpeg_rows.hpp).
#include "datasets/jpeg_rows.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "datasets/jpeg_window.hpp"
#include "datasets/resized_crop.hpp"

namespace dtrain {

std::optional<JpegRows> JpegRows::make(const ExampleLayout& layout, const MapPlan& map, float scale) {
  if (layout.inputs.size() != 1 || layout.inputs[0].decode != "jpeg") return std::nullopt;
  JpegRows plan(layout, map, scale);
  const auto& ops = map.ops();
  size_t i = 0;
  auto is = [&](const char* kind) { return i < ops.size() && ops[i].kind == kind; };
  if (is("random_resized_crop") || is("resize_center_crop")) ++i;
  while (is("random_flip") || is("random_crop")) ++i;
  plan.pixel_ops_ = i;
  plan.normalize_ = is("normalize");
  plan.rest_ = plan.normalize_ ? i + 1 : i;
  plan.row_shape_ = plan.rest_ < ops.size() ? ops[plan.rest_].in_shape : map.feature_shape();
  return plan;
}

Status JpegRows::run(std::string_view record, int64_t epoch, int64_t id, float* features, float* label,
                     Scratch& scratch, const std::string& where, float* weight) const {
  if (Status s = split_example(record, *layout_, label, scratch.jpeg, where, weight); !s) return s;
  const FeatureSpec& f = layout_->inputs[0];
  const std::string at = where + ": feature \"" + f.name + "\"";
  auto header = read_jpeg_header(scratch.jpeg, at);
  if (!header) return header.error();
  const int64_t c = f.shape[2];
  if (f.shape[0] > 0 && (header->h != f.shape[0] || header->w != f.shape[1])) {
    return data_error(fmt::format("{}: JPEG is {}x{} (height x width) but the shape needs {}x{}", at, header->h,
                                  header->w, f.shape[0], f.shape[1]));
  }
  // The decode, fused with a leading resize.
  const auto& ops = map_->ops();
  JpegResample r{CropBox{0, 0, header->h, header->w}, header->h, header->w, CropBox{0, 0, header->h, header->w}};
  bool dct = false;
  size_t s = 0;
  if (pixel_ops_ > 0 && ops[0].kind == "random_resized_crop") {
    const MapPlan::Op& op = ops[0];
    const CounterRng rng = map_->example_rng(0, epoch, id);
    uint64_t k = 0;
    r.box = random_resized_crop_box(header->h, header->w, op.scale_lo, op.scale_hi, op.ratio_lo, op.ratio_hi,
                                    [&] { return static_cast<double>(rng.uniform(k++)); });
    r.grid_h = r.keep.height = op.out_h;
    r.grid_w = r.keep.width = op.out_w;
    dct = op.fast_jpeg;
    s = 1;
  } else if (pixel_ops_ > 0 && ops[0].kind == "resize_center_crop") {
    const MapPlan::Op& op = ops[0];
    const ResizeCrop rc = resize_center_crop_box(header->h, header->w, op.resize, op.out_h, op.out_w);
    r.grid_h = rc.new_h;
    r.grid_w = rc.new_w;
    r.keep = rc.crop;
    dct = op.fast_jpeg;
    s = 1;
  }
  scratch.pixels.resize(static_cast<size_t>(r.keep.height * r.keep.width * c));
  if (Status st = decode_jpeg_resampled(scratch.jpeg, *header, c, r, dct, scratch.pixels.data(), scratch.rows, at); !st) {
    return st;
  }
  const ImageDims dims{r.keep.height, r.keep.width, c};
  for (; s < pixel_ops_; ++s) {
    const MapPlan::Op& op = ops[s];
    const CounterRng rng = map_->example_rng(s, epoch, id);
    if (op.kind == "random_flip") {
      if (rng.uniform(0) < 0.5f) flip_horizontal(scratch.pixels.data(), dims);
    } else {  // random_crop, drawn as MapPlan::apply draws it
      const int64_t choices = 2 * op.padding + 1;
      const int64_t oy = std::min(choices - 1, static_cast<int64_t>(rng.uniform(0) * static_cast<float>(choices)));
      const int64_t ox = std::min(choices - 1, static_cast<int64_t>(rng.uniform(1) * static_cast<float>(choices)));
      crop_padded(scratch.pixels.data(), dims, op.padding, oy, ox, scratch.spare);
    }
  }
  // To float32: the same expressions as the generic path (x * scale, then (x - mean) / std).
  const size_t n = scratch.pixels.size();
  const uint8_t* px = scratch.pixels.data();
  if (!normalize_) {
    if (scale_ == 1.0f) {
      for (size_t k = 0; k < n; ++k) features[k] = px[k];
    } else {
      for (size_t k = 0; k < n; ++k) features[k] = static_cast<float>(px[k]) * scale_;
    }
    return {};
  }
  // The channels' mean and std repeated over 48 values (a multiple of 1 and
  // 3 channels and of the vector width), so the loop runs in vector lanes.
  const MapPlan::Op& norm = ops[pixel_ops_];
  const auto cc = static_cast<size_t>(c);
  constexpr size_t kPeriod = 48;
  float mean[kPeriod], sd[kPeriod];
  for (size_t j = 0; j < kPeriod; ++j) {
    const size_t ch = j % cc;
    mean[j] = norm.mean[norm.mean.size() > 1 ? ch : 0];
    sd[j] = norm.std[norm.std.size() > 1 ? ch : 0];
  }
  size_t k = 0;
  if (scale_ == 1.0f) {
    for (; k + kPeriod <= n; k += kPeriod) {
      for (size_t j = 0; j < kPeriod; ++j) features[k + j] = (static_cast<float>(px[k + j]) - mean[j]) / sd[j];
    }
  }
  for (; k < n; ++k) {
    float x = static_cast<float>(px[k]);
    if (scale_ != 1.0f) x *= scale_;
    features[k] = (x - mean[k % kPeriod]) / sd[k % kPeriod];
  }
  return {};
}

}  // namespace dtrain
