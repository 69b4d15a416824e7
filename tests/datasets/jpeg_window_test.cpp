// The streamed JPEG path: windowed decoding at 8/8 equals full decoding +
// the bilinear resize exactly; DCT-scaled decoding picks the smallest scale
// that holds the output and stays close to the exact pixels; JpegRows gives
// the generic decode + map path's values (random_resized_crop, random_flip,
// random_crop, normalize, and the ops left to the batch).
#include <doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <jpeglib.h>

#include "datasets/example_decode.hpp"
#include "datasets/example_jpeg.hpp"
#include "datasets/jpeg_rows.hpp"
#include "datasets/jpeg_window.hpp"
#include "datasets/map_ops.hpp"

namespace dtrain {
namespace {

// A textured test image (gradients, stripes, some noise) as a JPEG of quality
// 90 with libjpeg's default 2x2 chroma subsampling.
std::string encode_jpeg(int h, int w, int c, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> noise(-12, 12);
  std::vector<unsigned char> px(static_cast<size_t>(h * w * c));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int ch = 0; ch < c; ++ch) {
        const double v = 128 + 60 * std::sin(x * 0.21 + ch) * std::cos(y * 0.13) + 0.4 * (x - y) + noise(gen);
        px[static_cast<size_t>((y * w + x) * c + ch)] = static_cast<unsigned char>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buf, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = px.data() + static_cast<size_t>(cinfo.next_scanline) * static_cast<size_t>(w * c);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string out(reinterpret_cast<char*>(buf), size);
  free(buf);
  return out;
}

// decode_jpeg (full size) + resize_bilinear_u8 of the box to the grid, the kept window.
std::vector<uint8_t> exact(const std::string& jpeg, int64_t h, int64_t w, int64_t c, const JpegResample& r) {
  std::vector<float> full(static_cast<size_t>(h * w * c)), grid(static_cast<size_t>(r.grid_h * r.grid_w * c));
  REQUIRE(decode_jpeg(jpeg, h, w, c, full.data(), "test").ok());
  resize_bilinear_u8(full.data(), ImageDims{h, w, c}, r.box, r.grid_h, r.grid_w, grid.data());
  std::vector<uint8_t> out;
  for (int64_t y = r.keep.top; y < r.keep.top + r.keep.height; ++y) {
    for (int64_t x = r.keep.left * c; x < (r.keep.left + r.keep.width) * c; ++x) {
      out.push_back(static_cast<uint8_t>(grid[static_cast<size_t>(y * r.grid_w * c + x)]));
    }
  }
  return out;
}

std::vector<uint8_t> windowed(const std::string& jpeg, int64_t c, const JpegResample& r, bool dct) {
  std::vector<uint8_t> out(static_cast<size_t>(r.keep.height * r.keep.width * c)), scratch;
  auto header = read_jpeg_header(jpeg, "test");
  REQUIRE(header.ok());
  const Status s = decode_jpeg_resampled(jpeg, *header, c, r, dct, out.data(), scratch, "test");
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  return out;
}

JpegResample crop(CropBox box, int64_t out_h, int64_t out_w) { return {box, out_h, out_w, CropBox{0, 0, out_h, out_w}}; }

TEST_CASE("jpeg window: at 8/8 the windowed decode equals full decode + resize, for any window") {
  for (const auto& hwc : {std::tuple{61, 83, 3}, std::tuple{64, 48, 3}, std::tuple{37, 29, 1}}) {
    const int h = std::get<0>(hwc), w = std::get<1>(hwc), c = std::get<2>(hwc);
    const std::string jpeg = encode_jpeg(h, w, c, static_cast<uint32_t>(h * w));
    auto header = read_jpeg_header(jpeg, "test");
    REQUIRE(header.ok());
    CHECK(header->h == h);
    CHECK(header->w == w);
    std::mt19937 gen(7);
    for (int t = 0; t < 60; ++t) {
      const int64_t bh = std::uniform_int_distribution<int64_t>(1, h)(gen);
      const int64_t bw = std::uniform_int_distribution<int64_t>(1, w)(gen);
      const CropBox box{std::uniform_int_distribution<int64_t>(0, h - bh)(gen),
                        std::uniform_int_distribution<int64_t>(0, w - bw)(gen), bh, bw};
      const int64_t oh = std::uniform_int_distribution<int64_t>(1, 40)(gen);
      const int64_t ow = std::uniform_int_distribution<int64_t>(1, 40)(gen);
      const JpegResample r = crop(box, oh, ow);
      CAPTURE(h); CAPTURE(w); CAPTURE(box.top); CAPTURE(box.left); CAPTURE(bh); CAPTURE(bw); CAPTURE(oh); CAPTURE(ow);
      REQUIRE(windowed(jpeg, c, r, false) == exact(jpeg, h, w, c, r));
    }
    // resize_center_crop's form: the whole image to a grid, a window of it kept.
    const ResizeCrop rc = resize_center_crop_box(h, w, 20, 16, 12);
    const JpegResample r{CropBox{0, 0, h, w}, rc.new_h, rc.new_w, rc.crop};
    CHECK(windowed(jpeg, c, r, false) == exact(jpeg, h, w, c, r));
  }
}

TEST_CASE("jpeg window: the DCT scale is the smallest k/8 that still holds the output") {
  CHECK(jpeg_dct_scale(crop(CropBox{0, 0, 400, 400}, 224, 224), true) == 8);   // 5/8 would do: no SIMD there
  CHECK(jpeg_dct_scale(crop(CropBox{0, 0, 448, 448}, 224, 224), true) == 4);   // exactly half
  CHECK(jpeg_dct_scale(crop(CropBox{0, 0, 1800, 900}, 224, 224), true) == 2);  // the narrow side decides
  CHECK(jpeg_dct_scale(crop(CropBox{0, 0, 3000, 1000}, 224, 224), true) == 2);
  CHECK(jpeg_dct_scale(crop(CropBox{0, 0, 3000, 3000}, 224, 224), true) == 1);
  CHECK(jpeg_dct_scale(crop(CropBox{0, 0, 200, 400}, 224, 224), true) == 8);   // an enlargement: full size
  CHECK(jpeg_dct_scale(crop(CropBox{0, 0, 400, 400}, 224, 224), false) == 8);
}

TEST_CASE("jpeg window: DCT-scaled decoding stays close to the exact pixels, window by window") {
  const int h = 301, w = 411;
  const std::string jpeg = encode_jpeg(h, w, 3, 3);
  std::mt19937 gen(11);
  int scaled = 0;
  for (int t = 0; t < 30; ++t) {
    const int64_t bh = std::uniform_int_distribution<int64_t>(120, h)(gen);
    const int64_t bw = std::uniform_int_distribution<int64_t>(120, w)(gen);  // at least twice the output: 4/8 or less
    const CropBox box{std::uniform_int_distribution<int64_t>(0, h - bh)(gen),
                      std::uniform_int_distribution<int64_t>(0, w - bw)(gen), bh, bw};
    const JpegResample r = crop(box, 56, 56);
    const int k = jpeg_dct_scale(r, true);
    REQUIRE(k <= 4);
    scaled += k <= 2;
    const std::vector<uint8_t> a = windowed(jpeg, 3, r, true), b = exact(jpeg, h, w, 3, r);
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
    CAPTURE(box.top); CAPTURE(box.left); CAPTURE(bh); CAPTURE(bw); CAPTURE(k);
    // A window off by a pixel or two of the output gives ~15 here (the stripes).
    CHECK(sum / static_cast<double>(a.size()) < 6.0);
  }
  CHECK(scaled > 3);
}

TEST_CASE("resample: rows first is within one of torch's order, for random images and taps") {
  std::mt19937 gen(5);
  int differ = 0, total = 0;
  for (int t = 0; t < 40; ++t) {
    const int64_t h = std::uniform_int_distribution<int64_t>(1, 50)(gen), w = std::uniform_int_distribution<int64_t>(1, 50)(gen);
    const int64_t c = t % 2 == 0 ? 3 : 1;
    std::vector<uint8_t> img(static_cast<size_t>(h * w * c));
    for (auto& v : img) v = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 255)(gen));
    const int64_t oh = std::uniform_int_distribution<int64_t>(1, 40)(gen), ow = std::uniform_int_distribution<int64_t>(1, 40)(gen);
    const BilinearTaps ty = bilinear_taps(0, h, oh), tx = bilinear_taps(0, w, ow);
    std::vector<uint8_t> a(static_cast<size_t>(oh * ow * c)), b(a.size());
    resample_bilinear_u8(img.data(), w * c, c, 0, 0, ty, tx, a.data(), false);
    resample_bilinear_u8(img.data(), w * c, c, 0, 0, ty, tx, b.data(), true);
    // torch's order equals resize_bilinear_u8 on the same pixels exactly.
    std::vector<float> f(img.begin(), img.end()), r(a.size());
    resize_bilinear_u8(f.data(), ImageDims{h, w, c}, CropBox{0, 0, h, w}, oh, ow, r.data());
    for (size_t i = 0; i < a.size(); ++i) {
      REQUIRE(static_cast<float>(a[i]) == r[i]);
      REQUIRE(std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i])) <= 1);
      differ += a[i] != b[i];
      ++total;
    }
  }
  CHECK(differ * 100 < total);  // rare: only where a value lands next to a half
}

TEST_CASE("jpeg window: a corrupt JPEG is a data error") {
  std::string jpeg = encode_jpeg(40, 40, 3, 1);
  jpeg.resize(jpeg.size() / 3);  // cut inside its tables
  std::vector<uint8_t> out(8 * 8 * 3), scratch;
  const Status t = decode_jpeg_resampled(jpeg, JpegHeader{40, 40}, 3, crop(CropBox{0, 0, 40, 40}, 8, 8), true,
                                         out.data(), scratch, "f: r 3");
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().kind == ErrorKind::kData);
  CHECK(t.error().message == "f: r 3: not a valid JPEG image (Bogus Huffman table definition)");
  const auto s = read_jpeg_header("not a jpeg", "f: r 3");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kData);
  CHECK(s.error().message.rfind("f: r 3: not a valid JPEG image (", 0) == 0);
}

// A tf.Example {image: the JPEG's bytes, label: int64}: encode_example's raw
// uint8 image bytes are the JPEG's when given its bytes as values.
std::string jpeg_example(const std::string& jpeg, float label) {
  std::vector<float> bytes;
  for (char ch : jpeg) bytes.push_back(static_cast<float>(static_cast<unsigned char>(ch)));
  return encode_example(bytes.data(), bytes.size(), true, &label, 1, true);
}

MapOpSpec op_of(const std::string& kind) {
  MapOpSpec op;
  op.op = kind;
  return op;
}

TEST_CASE("JpegRows: equals decode_example + scale + the map, with ops left to the batch") {
  const int h = 45, w = 52;
  FeatureSpec image{"image", "", "bytes", "jpeg", {h, w, 3}};
  FeatureSpec label{"label", "", "int64", "", {}};
  ExampleLayout layout;
  layout.inputs = {image};
  layout.label = label;
  layout.feature_shape = {h, w, 3};
  MapOpSpec rrc = op_of("random_resized_crop");
  rrc.size = {20, 24};
  rrc.fast_jpeg = false;
  MapOpSpec flip = op_of("random_flip");
  flip.mode = "horizontal";
  MapOpSpec crop_op = op_of("random_crop");
  crop_op.padding = 3;
  MapOpSpec norm = op_of("normalize");
  norm.mean = {120, 110, 100};
  norm.std = {50, 60, 70};
  MapOpSpec bright = op_of("random_brightness");
  bright.max_delta = 0.2;
  struct Case {
    std::vector<MapOpSpec> ops;
    size_t rest;
    float scale;
  };
  const Case cases[] = {
      {{rrc, flip, crop_op, norm, bright}, 4, 1.0f},  // everything but the brightness per example
      {{rrc, norm}, 2, 1.0f},
      {{flip, norm}, 2, 1.0f},                   // no resize: the full image, flipped in uint8
      {{flip}, 1, 1.0f / 255},                   // scale without normalize
      {{bright, flip}, 0, 1.0f},                 // a float op first: all of the map on the batch
      {{}, 0, 1.0f / 255},
  };
  for (const Case& cs : cases) {
    auto plan = MapPlan::make(cs.ops, Shape{h, w, 3}, Shape{}, 9, "job.yaml:1:1", "data.train",
                              cs.ops.empty() || cs.ops[0].op != "random_resized_crop" ? cs.scale : 1.0);
    REQUIRE_MESSAGE(plan.ok(), plan.error().message);
    auto rows = JpegRows::make(layout, *plan, cs.scale);
    REQUIRE(rows.has_value());
    CHECK(rows->rest() == cs.rest);
    const int64_t n = 5;
    Batch generic{Tensor(Shape{n, h, w, 3}), Tensor(Shape{n}), {}};
    Shape fused_shape = rows->row_shape();
    fused_shape.insert(fused_shape.begin(), n);
    Batch fused{Tensor(fused_shape), Tensor(Shape{n}), {}};
    const int64_t row = h * w * 3, frow = fused.features.numel() / n;
    std::vector<int64_t> epochs;
    JpegRows::Scratch scratch;
    for (int64_t r = 0; r < n; ++r) {
      const std::string jpeg = encode_jpeg(h, w, 3, static_cast<uint32_t>(r));
      const std::string with_jpeg = jpeg_example(jpeg, static_cast<float>(r));
      const int64_t id = 1000 + 7 * r, epoch = r % 2;
      generic.ids.push_back(id);
      fused.ids.push_back(id);
      epochs.push_back(epoch);
      REQUIRE(decode_example(with_jpeg, layout, generic.features.data() + r * row, generic.labels.data() + r, "t").ok());
      for (int64_t k = 0; k < row; ++k) generic.features.data()[r * row + k] *= cs.scale;
      const Status s = rows->run(with_jpeg, epoch, id, fused.features.data() + r * frow, fused.labels.data() + r,
                                 scratch, "t");
      REQUIRE_MESSAGE(s.ok(), s.error().message);
    }
    REQUIRE(plan->apply(generic, epochs).ok());
    REQUIRE(plan->apply(fused, epochs, rows->rest()).ok());
    REQUIRE(generic.features.shape() == fused.features.shape());
    for (int64_t k = 0; k < generic.features.numel(); ++k) {
      REQUIRE(generic.features.data()[k] == fused.features.data()[k]);
    }
    for (int64_t r = 0; r < n; ++r) CHECK(fused.labels[r] == static_cast<float>(r));
  }
}

}  // namespace
}  // namespace dtrain
