// The map stage (data.*.map): per-example operations applied to a gathered
// batch, in the order listed. Randomness comes from a CounterRng keyed by
// (seed, stage, epoch) with the example index as stream, so an example's
// result does not depend on batch composition, threads or restore.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "datasets/augment_image.hpp"
#include "datasets/dataset.hpp"
#include "engine/base/status.hpp"
#include "engine/rng.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

class MapPlan {
 public:
  MapPlan() = default;  // no operations

  // Checks `ops` against the shapes of one example (before the map):
  // normalize's mean/std have 1 or C values (C = the last dimension) and std
  // > 0; one_hot needs class-id labels (label shape []); random_crop,
  // random_flip and random_contrast need images [H, W] or [H, W, C];
  // random_contrast needs lower <= upper. random_resized_crop and
  // resize_center_crop need images, size [h, w] >= 1, 0 < scale <= 1, 0 <
  // ratio, resize >= 1 and a resized image that holds the crop; they work on
  // pixels 0..255, so `scale` (data.*.scale, applied before the map) must be
  // 1. Each operation sees the shape the ones before it left. Features of
  // varying height and width (-1 in feature_shape, streamed JPEGs) need
  // random_resized_crop or resize_center_crop first, which fixes the size. Problems are
  // kConfig errors "<op.where>: <name>.map[i]: ..." (or spec_where when
  // op.where is empty).
  static Result<MapPlan> make(const std::vector<MapOpSpec>& ops, const Shape& feature_shape, const Shape& label_shape,
                              uint64_t seed, const std::string& spec_where, const std::string& name,
                              double scale = 1.0);

  bool empty() const { return ops_.empty(); }
  // One example's label shape after the map ([depth] after one_hot).
  const Shape& label_shape() const { return label_shape_; }
  // One example's feature shape after the map ([h, w, C] after a resize).
  const Shape& feature_shape() const { return out_shape_; }

  // Applies the operations to every example of `batch` in place:
  //   features (B, feature shape...) become (B, feature_shape());
  //   labels   (B, label shape...) become (B, label_shape()).
  // epochs[r] is the epoch of example r (batch.ids[r]). A label that one_hot
  // cannot encode gives a kData error. Thread-safe: const, no shared state.
  // first: apply only the operations from index `first` on, to features of
  // the shape the ones before it leave (the streamed JPEG path runs the
  // leading ones per example, datasets/jpeg_rows.hpp).
  // REQUIRES: epochs.size() == batch.ids.size().
  Status apply(Batch& batch, const std::vector<int64_t>& epochs, size_t first = 0) const;

  // The random stream of operation `stage` for example `id` in `epoch`
  // (element k of it is rng.uniform(k)).
  CounterRng example_rng(size_t stage, int64_t epoch, int64_t id) const;

  struct Op {
    std::string kind;          // MapOpSpec::op
    std::string label;         // "<name>.map[i]" for messages
    std::vector<float> mean, std;  // normalize (1 or C values)
    float lo = 0, hi = 0;      // cast: the type's range; random_contrast: lower, upper
    int64_t depth = 0;         // one_hot
    int64_t padding = 0;       // random_crop
    float max_delta = 0;       // random_brightness
    ImageDims in;              // the image this operation sees (image operations)
    int64_t out_h = 0, out_w = 0;  // random_resized_crop, resize_center_crop: the result
    double scale_lo = 0, scale_hi = 0, ratio_lo = 0, ratio_hi = 0;  // random_resized_crop
    int64_t resize = 0;        // resize_center_crop
    bool fast_jpeg = true;   // random_resized_crop, resize_center_crop: see MapOpSpec
    Shape in_shape;            // one example's features before this operation
  };
  const std::vector<Op>& ops() const { return ops_; }

 private:
  std::vector<Op> ops_;
  Shape feature_shape_, out_shape_, label_shape_;
  uint64_t seed_key_ = 0;  // hash of the seed
};

}  // namespace dtrain
