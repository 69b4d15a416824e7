// Crop-and-resize geometry of the map stage's random_resized_crop and
// resize_center_crop (torchvision's RandomResizedCrop.get_params, Resize(int)
// + CenterCrop), and the bilinear resize both use.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "datasets/augment_image.hpp"

namespace dtrain {

// A window of an image: rows top..top+height-1, columns left..left+width-1.
struct CropBox {
  int64_t top = 0, left = 0, height = 0, width = 0;
  bool operator==(const CropBox&) const = default;
};

// torchvision.transforms.RandomResizedCrop.get_params on an h x w image with
// draws from `uniform` (each in [0, 1)): up to 10 attempts, each taking 4
// draws in this order: area fraction s = scale_lo + u (scale_hi - scale_lo);
// log aspect ratio r = log(ratio_lo) + u (log(ratio_hi) - log(ratio_lo)) (the
// logs in float32, as torch does); then, if the rounded (half to even, as
// Python's round) window fits, top = floor(u (h - height + 1)) and left =
// floor(u (w - width + 1)). An attempt that does not fit takes only its 2
// draws. After 10 misses: the central crop, clamped to the ratio range (and
// to at least 1 x 1, where torchvision's would be empty).
// REQUIRES: h, w >= 1; 0 < scale_lo <= scale_hi; 0 < ratio_lo <= ratio_hi.
CropBox random_resized_crop_box(int64_t h, int64_t w, double scale_lo, double scale_hi, double ratio_lo,
                                double ratio_hi, const std::function<double()>& uniform);

// torchvision Resize(resize) then CenterCrop([out_h, out_w]) on an h x w
// image: the shorter side becomes `resize`, the longer int(resize * long /
// short); the crop's top is round((new_h - out_h) / 2), left likewise.
struct ResizeCrop {
  int64_t new_h = 0, new_w = 0;  // the resized image
  CropBox crop;                  // the window of the resized image that is kept
};
ResizeCrop resize_center_crop_box(int64_t h, int64_t w, int64_t resize, int64_t out_h, int64_t out_w);

// One axis of the bilinear resize: output position o reads source positions
// i0[o] and i1[o], i1 with weight l1[o] and i0 with 1 - l1[o].
struct BilinearTaps {
  std::vector<int64_t> i0, i1;
  std::vector<float> l1;
};

// The taps of resizing source positions start..start+extent-1 to `out`
// positions (half-pixel centres, torch's align_corners=False, no
// antialiasing, clamped to the window). On an axis decoded at k/8 of its full
// size (scaled_size positions) the window becomes [start k/8, (start +
// extent) k/8) and the taps are positions of the scaled axis; k = 8 computes
// in float32 exactly as torch.
// REQUIRES: extent, out >= 1; 1 <= k <= 8; scaled_size >= 1 when k < 8.
BilinearTaps bilinear_taps(int64_t start, int64_t extent, int64_t out, int k = 8, int64_t scaled_size = 0);

// out (ty x tx x c, HWC) = the bilinear samples of `src` at the taps, where
// src's row r holds position y0 + r and column x position x0 + x
// (`src_stride` values a row); rounded half to even and clamped to 0..255.
// rows_first false computes each value as resize_bilinear_u8 (and torch)
// does, h0 (w0 a + w1 b) + h1 (w0 c + w1 d); true blends the rows first,
// w0 (h0 a + h1 c) + w1 (h0 b + h1 d): half the work, and now and then a
// value one apart where the float roundings differ.
void resample_bilinear_u8(const uint8_t* src, int64_t src_stride, int64_t c, int64_t y0, int64_t x0,
                          const BilinearTaps& ty, const BilinearTaps& tx, uint8_t* out, bool rows_first = false);

// Bilinear resize (half-pixel centres, torch's align_corners=False, no
// antialiasing) of the window `box` of `in` (dims `d`) to out_h x out_w,
// written to `out` (out_h * out_w * d.c values). Each result is rounded half
// to even and clamped to 0..255, as torchvision resizes uint8 images.
void resize_bilinear_u8(const float* in, ImageDims d, CropBox box, int64_t out_h, int64_t out_w, float* out);

}  // namespace dtrain
