// Crop with padding, horizontal flip and contrast on one (H, W, C) image
// (see augment_image.hpp).
#include "datasets/augment_image.hpp"

#include <algorithm>
#include <cassert>

namespace dtrain {

namespace {

template <class T>
void crop_padded_as(T* img, ImageDims d, int64_t padding, int64_t offset_y, int64_t offset_x, std::vector<T>& scratch) {
  assert(offset_y >= 0 && offset_y <= 2 * padding && offset_x >= 0 && offset_x <= 2 * padding);
  const int64_t row = d.w * d.c;
  scratch.assign(img, img + d.h * row);
  // Output pixel (y, x) is padded pixel (y + offset_y, x + offset_x), which is
  // input pixel (y + dy, x + dx) when inside the image, else a zero.
  const int64_t dy = offset_y - padding, dx = offset_x - padding;
  for (int64_t y = 0; y < d.h; ++y) {
    T* out = img + y * row;
    const int64_t sy = y + dy;
    if (sy < 0 || sy >= d.h) {
      std::fill(out, out + row, T{0});
      continue;
    }
    const T* in = scratch.data() + sy * row;
    for (int64_t x = 0; x < d.w; ++x) {
      const int64_t sx = x + dx;
      if (sx < 0 || sx >= d.w) {
        std::fill(out + x * d.c, out + (x + 1) * d.c, T{0});
      } else {
        std::copy(in + sx * d.c, in + (sx + 1) * d.c, out + x * d.c);
      }
    }
  }
}

template <class T>
void flip_as(T* img, ImageDims d) {
  for (int64_t y = 0; y < d.h; ++y) {
    T* row = img + y * d.w * d.c;
    for (int64_t x = 0; x < d.w / 2; ++x) {
      std::swap_ranges(row + x * d.c, row + (x + 1) * d.c, row + (d.w - 1 - x) * d.c);
    }
  }
}

}  // namespace

void crop_padded(float* img, ImageDims d, int64_t padding, int64_t offset_y, int64_t offset_x,
                 std::vector<float>& scratch) {
  crop_padded_as(img, d, padding, offset_y, offset_x, scratch);
}

void crop_padded(uint8_t* img, ImageDims d, int64_t padding, int64_t offset_y, int64_t offset_x,
                 std::vector<uint8_t>& scratch) {
  crop_padded_as(img, d, padding, offset_y, offset_x, scratch);
}

void flip_horizontal(float* img, ImageDims d) { flip_as(img, d); }
void flip_horizontal(uint8_t* img, ImageDims d) { flip_as(img, d); }

void adjust_contrast(float* img, ImageDims d, float factor) {
  const int64_t pixels = d.h * d.w;
  for (int64_t c = 0; c < d.c; ++c) {
    double sum = 0;
    for (int64_t p = 0; p < pixels; ++p) sum += img[p * d.c + c];
    const auto mean = static_cast<float>(sum / static_cast<double>(pixels));
    for (int64_t p = 0; p < pixels; ++p) {
      float& x = img[p * d.c + c];
      x = (x - mean) * factor + mean;
    }
  }
}

}  // namespace dtrain
