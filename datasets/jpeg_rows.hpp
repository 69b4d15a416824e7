// The streamed path of examples whose one input feature is a JPEG image:
// each example is decoded fused with the map's leading resize (only the
// window, at a DCT scale when the op allows), goes through the leading pixel
// operations (random_flip, random_crop) as uint8, and becomes float32 in
// one pass with the scale and a normalize that comes next. The rest of the
// map runs on the batch (MapPlan::apply from rest()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/example_decode.hpp"
#include "datasets/map_ops.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

class JpegRows {
 public:
  // Reusable storage of one thread.
  struct Scratch {
    std::string jpeg;
    std::vector<uint8_t> rows, pixels, spare;
  };

  // Applies when the layout's one input feature is decode: jpeg; else
  // nullopt (the generic decode_example + MapPlan::apply path). `scale` is
  // data.*.scale, applied before the map as the generic path does.
  static std::optional<JpegRows> make(const ExampleLayout& layout, const MapPlan& map, float scale);

  // The first map operation left to the batch.
  size_t rest() const { return rest_; }
  // One example's features as run() leaves them (the input shape of
  // operation rest(), or the map's result).
  const Shape& row_shape() const { return row_shape_; }

  // Decodes `record` (example `id` of `epoch`): the label into `label`
  // (num_elements(layout.label_shape) floats) and the image through the
  // operations before rest() into `features` (num_elements(row_shape())
  // floats). The same values as decode_example + scale + MapPlan::apply up
  // to rest(), except where the leading resize decodes at a DCT scale.
  // Errors (kData, "<where>: ..."): the record's, decode_example's; a JPEG
  // whose size differs from a fixed feature shape. `weight`: as
  // decode_example's.
  Status run(std::string_view record, int64_t epoch, int64_t id, float* features, float* label, Scratch& scratch,
             const std::string& where, float* weight = nullptr) const;

 private:
  JpegRows(const ExampleLayout& layout, const MapPlan& map, float scale) : layout_(&layout), map_(&map), scale_(scale) {}

  const ExampleLayout* layout_;  // both outlive this plan (members of the same input)
  const MapPlan* map_;
  float scale_ = 1.0f;
  size_t pixel_ops_ = 0;  // operations done on uint8 pixels (the resize, flips, crops)
  bool normalize_ = false;  // operation pixel_ops_ is a normalize, done in the conversion
  size_t rest_ = 0;
  Shape row_shape_;
};

}  // namespace dtrain
