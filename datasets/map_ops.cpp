// The map stage's operations and their checks (see map_ops.hpp).
#include "datasets/map_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "datasets/augment_image.hpp"
#include "datasets/resized_crop.hpp"
#include "engine/rng.hpp"

namespace dtrain {

namespace {

bool is_image(const Shape& s) { return s.size() == 2 || s.size() == 3; }

ImageDims image_dims(const Shape& s) { return ImageDims{s[0], s[1], s.size() == 3 ? s[2] : 1}; }

// "[null, null, 3]" for the varying sizes (-1) as the job writes them.
std::string shape_text(const Shape& s) {
  std::string out;
  for (int64_t d : s) out += (out.empty() ? "" : ", ") + (d < 0 ? std::string("null") : std::to_string(d));
  return "[" + out + "]";
}


float saturate_trunc(float x, float lo, float hi) {
  if (std::isnan(x)) return 0.0f;
  return std::trunc(std::clamp(x, lo, hi));
}

}  // namespace

CounterRng MapPlan::example_rng(size_t stage, int64_t epoch, int64_t id) const {
  return CounterRng(hash64(fmt::format("/{}/{}", stage, epoch), seed_key_), static_cast<uint64_t>(id));
}

Result<MapPlan> MapPlan::make(const std::vector<MapOpSpec>& ops, const Shape& feature_shape, const Shape& label_shape,
                              uint64_t seed, const std::string& spec_where, const std::string& name, double scale) {
  MapPlan plan;
  plan.feature_shape_ = feature_shape;
  plan.label_shape_ = label_shape;
  plan.seed_key_ = hash64("dtrain.input.map", seed);
  Shape shape = feature_shape;  // what the operation at hand sees
  for (size_t i = 0; i < ops.size(); ++i) {
    const MapOpSpec& spec = ops[i];
    const int64_t channels = shape.empty() ? 1 : shape.back();
    Op op;
    op.kind = spec.op;
    op.label = fmt::format("{}.map[{}]", name, i);
    const std::string where = spec.where.empty() ? spec_where : spec.where;
    const std::string prefix = (where.empty() ? "" : where + ": ") + op.label + ": ";
    auto fail = [&](const std::string& what) { return config_error(prefix + what); };
    if (!spec.problem.empty()) return fail(spec.problem);
    const bool resizes = op.kind == "random_resized_crop" || op.kind == "resize_center_crop";
    const bool needs_image =
        resizes || op.kind == "random_crop" || op.kind == "random_flip" || op.kind == "random_contrast";
    if (needs_image && !is_image(shape)) {
      return fail(fmt::format("{} needs images of shape [H, W] or [H, W, C], got features of shape {}", op.kind,
                              shape_text(shape)));
    }
    if (needs_image) op.in = image_dims(shape);
    const bool open_size = std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; });
    if (open_size && !resizes) {
      return fail(fmt::format("the images' height and width vary (shape {}), so the map must start with "
                              "random_resized_crop or resize_center_crop (which give every image one size); got {}",
                              shape_text(shape), op.kind));
    }
    op.in_shape = shape;
    op.fast_jpeg = spec.fast_jpeg;
    if (resizes) {
      if (scale != 1.0) {
        return fail(fmt::format("{} works on pixels 0..255, but data scale {} is applied before the map; remove "
                                "scale and normalize after the resize instead",
                                op.kind, scale));
      }
      if (spec.size.size() != 2 || spec.size[0] < 1 || spec.size[1] < 1) {
        return fail(fmt::format("{}: size must be [height, width], both at least 1, got {}", op.kind,
                                shape_text(Shape(spec.size.begin(), spec.size.end()))));
      }
      op.out_h = spec.size[0], op.out_w = spec.size[1];
    }
    if (op.kind == "normalize") {
      for (const auto* values : {&spec.mean, &spec.std}) {
        const auto n = static_cast<int64_t>(values->size());
        if (n != 1 && n != channels) {
          return fail(fmt::format("normalize: {} has {} values; expected 1 or {} (the last dimension of {})",
                                  values == &spec.mean ? "mean" : "std", n, channels, shape_text(shape)));
        }
      }
      for (double m : spec.mean) op.mean.push_back(static_cast<float>(m));
      for (double s : spec.std) {
        if (!(s > 0)) return fail(fmt::format("normalize: std must be positive, got {}", s));
        op.std.push_back(static_cast<float>(s));
      }
    } else if (op.kind == "cast") {
      if (spec.dtype == "uint8") {
        op.lo = 0.0f, op.hi = 255.0f;
      } else if (spec.dtype == "int8") {
        op.lo = -128.0f, op.hi = 127.0f;
      } else if (spec.dtype == "int32") {
        op.lo = -2147483648.0f, op.hi = 2147483520.0f;  // the largest float below 2^31
      } else {
        return fail(fmt::format("cast: \"{}\" is not one of uint8, int8, int32", spec.dtype));
      }
    } else if (op.kind == "one_hot") {
      if (!plan.label_shape_.empty()) {
        return fail(fmt::format("one_hot needs class-id labels (one number per example), got labels of shape {}",
                                shape_text(plan.label_shape_)));
      }
      if (spec.depth < 1) return fail(fmt::format("one_hot: depth must be at least 1, got {}", spec.depth));
      op.depth = spec.depth;
      plan.label_shape_ = Shape{spec.depth};
    } else if (op.kind == "random_crop") {
      if (spec.padding < 0) return fail(fmt::format("random_crop: padding must not be negative, got {}", spec.padding));
      op.padding = spec.padding;
    } else if (op.kind == "random_flip") {
      if (spec.mode != "horizontal") return fail(fmt::format("random_flip: \"{}\" is not horizontal", spec.mode));
    } else if (op.kind == "random_brightness") {
      if (!(spec.max_delta >= 0)) {
        return fail(fmt::format("random_brightness: max_delta must not be negative, got {}", spec.max_delta));
      }
      op.max_delta = static_cast<float>(spec.max_delta);
    } else if (op.kind == "random_contrast") {
      if (!(spec.lower >= 0 && spec.lower <= spec.upper)) {
        return fail(fmt::format("random_contrast: expected 0 <= lower <= upper, got lower {} and upper {}", spec.lower,
                                spec.upper));
      }
      op.lo = static_cast<float>(spec.lower);
      op.hi = static_cast<float>(spec.upper);
    } else if (op.kind == "random_resized_crop") {
      const auto& sc = spec.scale_range;
      if (sc.size() != 2 || !(sc[0] > 0 && sc[0] <= sc[1] && sc[1] <= 1)) {
        return fail(fmt::format("random_resized_crop: scale must be [lo, hi] with 0 < lo <= hi <= 1, got [{}]",
                                fmt::join(sc, ", ")));
      }
      const auto& ra = spec.ratio;
      if (ra.size() != 2 || !(ra[0] > 0 && ra[0] <= ra[1])) {
        return fail(fmt::format("random_resized_crop: ratio must be [lo, hi] with 0 < lo <= hi, got [{}]",
                                fmt::join(ra, ", ")));
      }
      op.scale_lo = sc[0], op.scale_hi = sc[1], op.ratio_lo = ra[0], op.ratio_hi = ra[1];
    } else if (op.kind == "resize_center_crop") {
      if (spec.resize < 1) return fail(fmt::format("resize_center_crop: resize must be at least 1, got {}", spec.resize));
      op.resize = spec.resize;
      // Images of varying size: resize >= the crop makes every one hold it.
      const ResizeCrop r = open_size ? ResizeCrop{op.resize, op.resize, {}}
                                     : resize_center_crop_box(op.in.h, op.in.w, op.resize, op.out_h, op.out_w);
      if (r.new_h < op.out_h || r.new_w < op.out_w) {
        if (open_size) {
          return fail(fmt::format("resize_center_crop: size [{}, {}] does not fit in images whose shorter side is "
                                  "resized to {} (the images' sizes vary); expected resize >= {}",
                                  op.out_h, op.out_w, op.resize, std::max(op.out_h, op.out_w)));
        }
        return fail(fmt::format("resize_center_crop: size [{}, {}] does not fit in the resized image [{}, {}] (the "
                                "shorter side of [{}, {}] resized to {}); expected resize >= {}",
                                op.out_h, op.out_w, r.new_h, r.new_w, op.in.h, op.in.w, op.resize,
                                std::max(op.out_h, op.out_w)));
      }
    } else {
      return fail(fmt::format("unknown operation \"{}\"; expected one of normalize, cast, one_hot, random_crop, "
                              "random_flip, random_brightness, random_contrast, random_resized_crop, "
                              "resize_center_crop",
                              op.kind));
    }
    if (resizes) {
      shape = shape.size() == 3 ? Shape{op.out_h, op.out_w, op.in.c} : Shape{op.out_h, op.out_w};
    }
    plan.ops_.push_back(std::move(op));
  }
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; })) {
    return config_error(fmt::format("{}{}: the images' height and width vary (shape {}), so it needs a map that starts "
                                    "with random_resized_crop or resize_center_crop (which give every image one size)",
                                    spec_where.empty() ? "" : spec_where + ": ", name, shape_text(shape)));
  }
  plan.out_shape_ = shape;
  return plan;
}

Status MapPlan::apply(Batch& batch, const std::vector<int64_t>& epochs, size_t first) const {
  const auto b = static_cast<int64_t>(batch.ids.size());
  std::vector<float> scratch;
  Shape shape = first < ops_.size() ? ops_[first].in_shape : out_shape_;  // one example's shape before ops_[s]
  for (size_t s = first; s < ops_.size(); ++s) {
    const Op& op = ops_[s];
    const int64_t row = num_elements(shape);
    const int64_t channels = shape.empty() ? 1 : shape.back();
    const ImageDims dims = op.in;
    if (op.kind == "random_resized_crop" || op.kind == "resize_center_crop") {
      Shape out_shape = shape.size() == 3 ? Shape{op.out_h, op.out_w, dims.c} : Shape{op.out_h, op.out_w};
      const int64_t out_row = num_elements(out_shape);
      Shape batch_shape = out_shape;
      batch_shape.insert(batch_shape.begin(), b);
      Tensor out(batch_shape);
      for (int64_t r = 0; r < b; ++r) {
        const float* x = batch.features.data() + r * row;
        float* y = out.data() + r * out_row;
        if (op.kind == "random_resized_crop") {
          const CounterRng rng =
              example_rng(s, epochs[static_cast<size_t>(r)], batch.ids[static_cast<size_t>(r)]);
          uint64_t k = 0;
          const CropBox box = random_resized_crop_box(dims.h, dims.w, op.scale_lo, op.scale_hi, op.ratio_lo,
                                                      op.ratio_hi, [&] { return static_cast<double>(rng.uniform(k++)); });
          resize_bilinear_u8(x, dims, box, op.out_h, op.out_w, y);
        } else {
          const ResizeCrop rc = resize_center_crop_box(dims.h, dims.w, op.resize, op.out_h, op.out_w);
          scratch.resize(static_cast<size_t>(rc.new_h * rc.new_w * dims.c));
          resize_bilinear_u8(x, dims, CropBox{0, 0, dims.h, dims.w}, rc.new_h, rc.new_w, scratch.data());
          const int64_t src_row = rc.new_w * dims.c;
          for (int64_t yy = 0; yy < op.out_h; ++yy) {
            const float* from = scratch.data() + (rc.crop.top + yy) * src_row + rc.crop.left * dims.c;
            std::copy(from, from + op.out_w * dims.c, y + yy * op.out_w * dims.c);
          }
        }
      }
      batch.features = std::move(out);
      shape = std::move(out_shape);
      continue;
    }
    if (op.kind == "one_hot") {
      Tensor out(Shape{b, op.depth});
      for (int64_t r = 0; r < b; ++r) {
        const float label = batch.labels[r];
        if (!(label >= 0 && label < static_cast<float>(op.depth) && label == std::floor(label))) {
          return data_error(fmt::format("{}: one_hot: label {} of example {} is not a class id in 0..{}", op.label,
                                        label, batch.ids[static_cast<size_t>(r)], op.depth - 1));
        }
        out[r * op.depth + static_cast<int64_t>(label)] = 1.0f;
      }
      batch.labels = std::move(out);
      continue;
    }
    for (int64_t r = 0; r < b; ++r) {
      float* x = batch.features.data() + r * row;
      const CounterRng rng = example_rng(s, epochs[static_cast<size_t>(r)], batch.ids[static_cast<size_t>(r)]);
      if (op.kind == "normalize") {
        const bool per_channel_mean = op.mean.size() > 1, per_channel_std = op.std.size() > 1;
        for (int64_t k = 0; k < row; ++k) {
          const auto c = static_cast<size_t>(k % channels);
          x[k] = (x[k] - op.mean[per_channel_mean ? c : 0]) / op.std[per_channel_std ? c : 0];
        }
      } else if (op.kind == "cast") {
        for (int64_t k = 0; k < row; ++k) x[k] = saturate_trunc(x[k], op.lo, op.hi);
      } else if (op.kind == "random_crop") {
        const int64_t choices = 2 * op.padding + 1;
        const int64_t oy = std::min(choices - 1, static_cast<int64_t>(rng.uniform(0) * static_cast<float>(choices)));
        const int64_t ox = std::min(choices - 1, static_cast<int64_t>(rng.uniform(1) * static_cast<float>(choices)));
        crop_padded(x, dims, op.padding, oy, ox, scratch);
      } else if (op.kind == "random_flip") {
        if (rng.uniform(0) < 0.5f) flip_horizontal(x, dims);
      } else if (op.kind == "random_brightness") {
        const float delta = (2.0f * rng.uniform(0) - 1.0f) * op.max_delta;
        for (int64_t k = 0; k < row; ++k) x[k] += delta;
      } else if (op.kind == "random_contrast") {
        adjust_contrast(x, dims, op.lo + rng.uniform(0) * (op.hi - op.lo));
      }
    }
  }
  return {};
}

}  // namespace dtrain
