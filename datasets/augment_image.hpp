// Image operations of the map stage on one example, in place: an image is
// (H, W, C) floats, row-major (a [H, W] example is C = 1). The random choices
// are passed in, so these are plain functions of their arguments; map_ops.cpp
// draws them from a CounterRng keyed by (seed, epoch, example index).
#pragma once

#include <cstdint>
#include <vector>

namespace dtrain {

struct ImageDims {
  int64_t h = 0, w = 0, c = 1;
};

// Pads `img` with `padding` zeros on each side of H and W, then keeps the H x W
// window whose top-left corner is (offset_y, offset_x) in the padded image.
// REQUIRES: 0 <= offset_y, offset_x <= 2 * padding. `scratch` is reused storage.
void crop_padded(float* img, ImageDims d, int64_t padding, int64_t offset_y, int64_t offset_x,
                 std::vector<float>& scratch);
void crop_padded(uint8_t* img, ImageDims d, int64_t padding, int64_t offset_y, int64_t offset_x,
                 std::vector<uint8_t>& scratch);

// Mirrors `img` left-right (column x becomes column W-1-x).
void flip_horizontal(float* img, ImageDims d);
void flip_horizontal(uint8_t* img, ImageDims d);

// Each channel c: x = (x - mean_c) * factor + mean_c, mean_c over all H x W
// pixels of channel c (tf.image.adjust_contrast).
void adjust_contrast(float* img, ImageDims d, float factor);

}  // namespace dtrain
