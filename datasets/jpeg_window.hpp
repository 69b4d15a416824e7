// A JPEG decoded straight into a resized window (the streamed image path):
// libjpeg-turbo decodes only the rows and columns the bilinear resize reads,
// at a DCT scale k/8 when the window allows, and the resize writes uint8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/resized_crop.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

struct JpegHeader {
  int64_t h = 0, w = 0;  // pixels
};

// The image size from the JPEG's header. Error (kData, "<where>: not a valid
// JPEG image (...)") when it is not a JPEG.
Result<JpegHeader> read_jpeg_header(std::string_view jpeg, const std::string& where);

// What to make of an h x w image: the window `box` (full-size coordinates)
// resized bilinearly to grid_h x grid_w as resize_bilinear_u8 does, of which
// the rows keep.top.. and columns keep.left.. (keep.height x keep.width) are
// kept. random_resized_crop: box = its crop, grid = keep = the output size;
// resize_center_crop: box = the whole image, grid = the resized size, keep =
// the central crop.
struct JpegResample {
  CropBox box;
  int64_t grid_h = 0, grid_w = 0;
  CropBox keep;
};

// The DCT scale k (decoding at k/8 of full size) for `r`: the smallest k of
// 1, 2, 4 (the scales libjpeg-turbo decodes with SIMD) at which the scaled
// window is still at least the grid in both directions (so the resize never
// enlarges what was decoded smaller), else 8; 8 when `fast_jpeg` is false.
int jpeg_dct_scale(const JpegResample& r, bool fast_jpeg);

// Decodes `jpeg` (its header as read_jpeg_header gave it; c = 1 gray or 3
// RGB, converted by libjpeg) at scale
// jpeg_dct_scale(r, fast_jpeg)/8, only the rows and iMCU columns the kept
// outputs read, and writes keep.height x keep.width x c uint8 pixels (HWC)
// to `out`. fast_jpeg also takes libjpeg's fast integer DCT (JDCT_IFAST,
// TensorFlow's decode_jpeg default) and resample_bilinear_u8's rows-first
// order; without it the accurate DCT (JDCT_ISLOW)
// at 8/8, and the pixels equal decode_jpeg + resize_bilinear_u8 (+ the crop)
// exactly. `scratch` is reused storage.
// Errors (kData, "<where>: ..."): not a JPEG or corrupt.
// REQUIRES: the box lies inside the image of the header; grid >= 1; keep
// inside the grid.
Status decode_jpeg_resampled(std::string_view jpeg, const JpegHeader& header, int64_t c, const JpegResample& r,
                             bool fast_jpeg, uint8_t* out, std::vector<uint8_t>& scratch, const std::string& where);

}  // namespace dtrain
