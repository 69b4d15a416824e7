// torchvision-compatible crop boxes and the bilinear resize (see
// resized_crop.hpp).
#include "datasets/resized_crop.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dtrain {

namespace {

// Python's round() to an integer: half to even (the default rounding mode).
int64_t round_even(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

// One axis of torch's bilinear interpolation: source index and weight of each
// output position.
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<float> l1;  // weight of i1; i0 gets 1 - l1
};

Taps taps(int64_t in, int64_t out) {
  Taps t;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    const float src = std::max(0.0f, scale * (static_cast<float>(o) + 0.5f) - 0.5f);
    const auto i0 = std::min(static_cast<int64_t>(src), in - 1);
    t.i0.push_back(i0);
    t.i1.push_back(std::min(i0 + 1, in - 1));
    t.l1.push_back(src - static_cast<float>(i0));
  }
  return t;
}

}  // namespace

CropBox random_resized_crop_box(int64_t h, int64_t w, double scale_lo, double scale_hi, double ratio_lo,
                                double ratio_hi, const std::function<double()>& uniform) {
  const auto area = static_cast<double>(h * w);
  const double log_lo = std::log(static_cast<float>(ratio_lo)), log_hi = std::log(static_cast<float>(ratio_hi));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (scale_lo + uniform() * (scale_hi - scale_lo));
    const double aspect = std::exp(log_lo + uniform() * (log_hi - log_lo));
    const int64_t cw = round_even(std::sqrt(target * aspect));
    const int64_t ch = round_even(std::sqrt(target / aspect));
    if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
      const auto top = std::min(h - ch, static_cast<int64_t>(uniform() * static_cast<double>(h - ch + 1)));
      const auto left = std::min(w - cw, static_cast<int64_t>(uniform() * static_cast<double>(w - cw + 1)));
      return CropBox{top, left, ch, cw};
    }
  }
  const double in_ratio = static_cast<double>(w) / static_cast<double>(h);
  int64_t ch = h, cw = w;
  // At least one pixel: where torchvision's window rounds to 0 it fails on the empty crop.
  if (in_ratio < ratio_lo) {
    ch = std::max<int64_t>(1, round_even(static_cast<double>(w) / ratio_lo));
  } else if (in_ratio > ratio_hi) {
    cw = std::max<int64_t>(1, round_even(static_cast<double>(h) * ratio_hi));
  }
  return CropBox{(h - ch) / 2, (w - cw) / 2, ch, cw};
}

ResizeCrop resize_center_crop_box(int64_t h, int64_t w, int64_t resize, int64_t out_h, int64_t out_w) {
  ResizeCrop r;
  const int64_t shorter = std::min(h, w), longer = std::max(h, w);
  const auto new_long = static_cast<int64_t>(static_cast<double>(resize) * static_cast<double>(longer) /
                                             static_cast<double>(shorter));
  r.new_h = h <= w ? resize : new_long;
  r.new_w = h <= w ? new_long : resize;
  r.crop = CropBox{round_even(static_cast<double>(r.new_h - out_h) / 2.0),
                   round_even(static_cast<double>(r.new_w - out_w) / 2.0), out_h, out_w};
  return r;
}

void resize_bilinear_u8(const float* in, ImageDims d, CropBox box, int64_t out_h, int64_t out_w, float* out) {
  const Taps ty = taps(box.height, out_h), tx = taps(box.width, out_w);
  const int64_t row = d.w * d.c;
  auto at = [&](int64_t y, int64_t x, int64_t c) { return in[(box.top + y) * row + (box.left + x) * d.c + c]; };
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const auto sy = static_cast<size_t>(oy);
    const float h1 = ty.l1[sy], h0 = 1.0f - h1;
    for (int64_t ox = 0; ox < out_w; ++ox) {
      const auto sx = static_cast<size_t>(ox);
      const float w1 = tx.l1[sx], w0 = 1.0f - w1;
      for (int64_t c = 0; c < d.c; ++c) {
        const float v = h0 * (w0 * at(ty.i0[sy], tx.i0[sx], c) + w1 * at(ty.i0[sy], tx.i1[sx], c)) +
                        h1 * (w0 * at(ty.i1[sy], tx.i0[sx], c) + w1 * at(ty.i1[sy], tx.i1[sx], c));
        out[(oy * out_w + ox) * d.c + c] = std::clamp(std::nearbyint(v), 0.0f, 255.0f);
      }
    }
  }
}

}  // namespace dtrain
