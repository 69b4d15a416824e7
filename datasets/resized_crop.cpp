// torchvision-compatible crop boxes and the bilinear resize (see
// resized_crop.hpp).
#include "datasets/resized_crop.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace dtrain {

namespace {

// Python's round() to an integer: half to even (the default rounding mode).
int64_t round_even(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

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

BilinearTaps bilinear_taps(int64_t start, int64_t extent, int64_t out, int k, int64_t scaled_size) {
  BilinearTaps t;
  t.i0.reserve(static_cast<size_t>(out));
  t.i1.reserve(static_cast<size_t>(out));
  t.l1.reserve(static_cast<size_t>(out));
  if (k == 8) {  // torch's own arithmetic, relative to the window
    const float scale = static_cast<float>(extent) / static_cast<float>(out);
    for (int64_t o = 0; o < out; ++o) {
      const float src = std::max(0.0f, scale * (static_cast<float>(o) + 0.5f) - 0.5f);
      const auto i0 = std::min(static_cast<int64_t>(src), extent - 1);
      t.i0.push_back(start + i0);
      t.i1.push_back(start + std::min(i0 + 1, extent - 1));
      t.l1.push_back(src - static_cast<float>(i0));
    }
    return t;
  }
  const double s = k / 8.0, first = static_cast<double>(start) * s, size = static_cast<double>(extent) * s;
  const double scale = size / static_cast<double>(out);
  const int64_t last = std::min(scaled_size - 1, static_cast<int64_t>(std::ceil(first + size)) - 1);
  for (int64_t o = 0; o < out; ++o) {
    const double pos = first + std::max(0.0, scale * (static_cast<double>(o) + 0.5) - 0.5);
    const int64_t i0 = std::min(static_cast<int64_t>(pos), last);
    t.i0.push_back(i0);
    t.i1.push_back(std::min(i0 + 1, last));
    t.l1.push_back(static_cast<float>(std::clamp(pos - static_cast<double>(i0), 0.0, 1.0)));
  }
  return t;
}

namespace {

// One source row interpolated across: h[ox c + ch] = w0 r[a] + w1 r[b] for
// the taps' columns a, b of output column ox (C channels; C = 0: c at run time).
template <int C>
void across_row(const uint8_t* r, const std::vector<size_t>& xa, const std::vector<size_t>& xb,
                const std::vector<float>& l1, size_t c, float* h) {
  const size_t cc = C > 0 ? static_cast<size_t>(C) : c;
  for (size_t ox = 0; ox < xa.size(); ++ox) {
    const uint8_t* pa = r + xa[ox];
    const uint8_t* pb = r + xb[ox];
    const float w1 = l1[ox], w0 = 1.0f - w1;
    for (size_t ch = 0; ch < cc; ++ch) h[ox * cc + ch] = w0 * static_cast<float>(pa[ch]) + w1 * static_cast<float>(pb[ch]);
  }
}

// nearbyint for 0 <= v < 2^22 in the default rounding (half to even), in
// plain float arithmetic the compiler can vectorize; then clamped to 0..255.
inline uint8_t round_u8(float v) {
  const float r = (v + 8388608.0f) - 8388608.0f;
  return static_cast<uint8_t>(std::min(std::max(r, 0.0f), 255.0f));  // minss/maxss, no branches
}

// One RGB output pixel of the rows-first order, its 3 channels in the lanes
// of one 4-float vector (GCC/Clang vector extensions, any target): the same
// operations as round_u8(w0 a + w1 b) lane by lane. Reads a[3] and b[3].
typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));

inline void rgb_along(const float* a, const float* b, float w1, uint8_t* o) {
  Float4 va, vb;
  std::memcpy(&va, a, sizeof va);
  std::memcpy(&vb, b, sizeof vb);
  const float w0 = 1.0f - w1;
  Float4 v = w0 * va + w1 * vb;
  v = (v + 8388608.0f) - 8388608.0f;
  v = v < 0.0f ? Float4{} : v;
  v = v > 255.0f ? Float4{} + 255.0f : v;
  const Int4 q = __builtin_convertvector(v, Int4);
  o[0] = static_cast<uint8_t>(q[0]);
  o[1] = static_cast<uint8_t>(q[1]);
  o[2] = static_cast<uint8_t>(q[2]);
}

// resample_bilinear_u8's fast order: the two source rows blended first over
// the columns the taps read (contiguous: vectorized), then each output is
// one gather: h0 a + h1 c across, w0 (..) + w1 (..) along the row.
void resample_rows_first(const uint8_t* src, int64_t src_stride, int64_t c, int64_t y0, int64_t x0,
                         const BilinearTaps& ty, const BilinearTaps& tx, uint8_t* out) {
  const auto cc = static_cast<size_t>(c);
  const size_t out_w = tx.i0.size(), n = out_w * cc;
  const auto first = static_cast<size_t>(*std::min_element(tx.i0.begin(), tx.i0.end()) - x0) * cc;
  const auto end = static_cast<size_t>(*std::max_element(tx.i1.begin(), tx.i1.end()) - x0 + 1) * cc;
  std::vector<float> blend(end + 1);  // + 1: the RGB path loads 4 floats a pixel
  std::vector<size_t> xa(out_w), xb(out_w);
  for (size_t ox = 0; ox < out_w; ++ox) {
    xa[ox] = static_cast<size_t>(tx.i0[ox] - x0) * cc;
    xb[ox] = static_cast<size_t>(tx.i1[ox] - x0) * cc;
  }
  for (size_t oy = 0; oy < ty.i0.size(); ++oy) {
    const uint8_t* r0 = src + (ty.i0[oy] - y0) * src_stride;
    const uint8_t* r1 = src + (ty.i1[oy] - y0) * src_stride;
    const float h1 = ty.l1[oy], h0 = 1.0f - h1;
    for (size_t i = first; i < end; ++i) blend[i] = h0 * static_cast<float>(r0[i]) + h1 * static_cast<float>(r1[i]);
    uint8_t* o = out + oy * n;
    if (cc == 3) {
      for (size_t ox = 0; ox < out_w; ++ox) rgb_along(blend.data() + xa[ox], blend.data() + xb[ox], tx.l1[ox], o + ox * 3);
      continue;
    }
    for (size_t ox = 0; ox < out_w; ++ox) {
      const float w1 = tx.l1[ox], w0 = 1.0f - w1;
      const float* a = blend.data() + xa[ox];
      const float* b = blend.data() + xb[ox];
      for (size_t ch = 0; ch < cc; ++ch) o[ox * cc + ch] = round_u8(w0 * a[ch] + w1 * b[ch]);
    }
  }
}

}  // namespace

void resample_bilinear_u8(const uint8_t* src, int64_t src_stride, int64_t c, int64_t y0, int64_t x0,
                          const BilinearTaps& ty, const BilinearTaps& tx, uint8_t* out, bool rows_first) {
  if (rows_first) {
    resample_rows_first(src, src_stride, c, y0, x0, ty, tx, out);
    return;
  }
  // Separable: each source row the output reads is interpolated across once
  // (w0 a + w1 b, kept for the next output row that reads it), then the two
  // rows are blended: h0 (w0 a + w1 b) + h1 (w0 c + w1 d), the very
  // expression (and rounding) of resize_bilinear_u8.
  const auto cc = static_cast<size_t>(c);
  const size_t out_w = tx.i0.size(), n = out_w * cc;
  std::vector<size_t> xa(out_w), xb(out_w);
  for (size_t ox = 0; ox < out_w; ++ox) {
    xa[ox] = static_cast<size_t>(tx.i0[ox] - x0) * cc;
    xb[ox] = static_cast<size_t>(tx.i1[ox] - x0) * cc;
  }
  std::vector<float> rows[2] = {std::vector<float>(n), std::vector<float>(n)};
  int64_t held[2] = {-1, -1};  // the source row each of `rows` holds
  auto across = [&](int64_t y) -> const float* {
    for (int k = 0; k < 2; ++k) {
      if (held[k] == y) return rows[k].data();
    }
    // Replace the lower row: the taps' rows never decrease, so it is not read again.
    const int k = held[0] == -1 || (held[1] != -1 && held[0] < held[1]) ? 0 : 1;
    const uint8_t* r = src + (y - y0) * src_stride;
    if (cc == 3) {
      across_row<3>(r, xa, xb, tx.l1, cc, rows[k].data());
    } else if (cc == 1) {
      across_row<1>(r, xa, xb, tx.l1, cc, rows[k].data());
    } else {
      across_row<0>(r, xa, xb, tx.l1, cc, rows[k].data());
    }
    held[k] = y;
    return rows[k].data();
  };
  for (size_t oy = 0; oy < ty.i0.size(); ++oy) {
    const float* top = across(ty.i0[oy]);
    const float* bottom = across(ty.i1[oy]);
    const float h1 = ty.l1[oy], h0 = 1.0f - h1;
    uint8_t* o = out + oy * n;
    for (size_t i = 0; i < n; ++i) {
      o[i] = round_u8(h0 * top[i] + h1 * bottom[i]);
    }
  }
}

void resize_bilinear_u8(const float* in, ImageDims d, CropBox box, int64_t out_h, int64_t out_w, float* out) {
  const BilinearTaps ty = bilinear_taps(box.top, box.height, out_h), tx = bilinear_taps(box.left, box.width, out_w);
  const int64_t row = d.w * d.c;
  auto at = [&](int64_t y, int64_t x, int64_t c) { return in[y * row + x * d.c + c]; };
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
