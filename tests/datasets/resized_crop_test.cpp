// random_resized_crop and resize_center_crop against torchvision itself
// (tests/datasets/reference/resized_crop.py): crop boxes from the same uniform
// draws, resizes of real JPEGs; the map stage's shapes, determinism and errors.
#include <doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "datasets/example_jpeg.hpp"
#include "datasets/map_ops.hpp"
#include "datasets/resized_crop.hpp"

namespace dtrain {
namespace {

nlohmann::json reference() {
  std::ifstream f(DTRAIN_SOURCE_ROOT "/tests/datasets/reference/resized_crop.json");
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

// Largest |a - b| over two equal-length vectors.
float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

TEST_CASE("random_resized_crop: boxes equal torchvision's get_params for the same uniform draws") {
  const nlohmann::json ref = reference();
  REQUIRE(ref["boxes"].size() >= 100);
  int fallbacks = 0;
  for (const auto& c : ref["boxes"]) {
    const auto draws = c["draws"].get<std::vector<double>>();
    size_t used = 0;
    const auto scale = c["scale"].get<std::vector<double>>(), ratio = c["ratio"].get<std::vector<double>>();
    const CropBox box = random_resized_crop_box(c["h"].get<int64_t>(), c["w"].get<int64_t>(), scale[0], scale[1],
                                                ratio[0], ratio[1], [&] { return draws.at(used++); });
    const auto want = c["box"].get<std::vector<int64_t>>();
    INFO("h ", c["h"], " w ", c["w"], " scale ", c["scale"], " ratio ", c["ratio"]);
    CHECK(box == CropBox{want[0], want[1], want[2], want[3]});
    CHECK(used == c["used"].get<size_t>());
    if (used == 20) ++fallbacks;
  }
  CHECK(fallbacks > 10);  // the central-crop fallback is exercised too

  // A 10 x 1 image with ratio >= 3: every attempt misses and the fallback's
  // height round(1 / 3) = 0 is kept at 1 (torchvision's crop would be empty).
  const CropBox thin = random_resized_crop_box(10, 1, 0.5, 1.0, 3.0, 4.0, [] { return 0.5; });
  CHECK(thin == CropBox{4, 0, 1, 1});
}

TEST_CASE("resized crops of real JPEGs equal torchvision's (bilinear, antialias off) within 1 of 255") {
  const nlohmann::json ref = reference();
  REQUIRE(ref["resizes"].size() == 3);
  for (const auto& c : ref["resizes"]) {
    const auto h = c["h"].get<int64_t>(), w = c["w"].get<int64_t>();
    const auto bytes = c["jpeg"].get<std::vector<unsigned char>>();
    std::vector<float> pixels(static_cast<size_t>(h * w * 3));
    REQUIRE(decode_jpeg(std::string(bytes.begin(), bytes.end()), h, w, 3, pixels.data(), "test").ok());
    // libjpeg-turbo here and PIL's decoder agree within 1 (JDCT_ISLOW both).
    CHECK(max_diff(pixels, c["decoded"].get<std::vector<float>>()) <= 1.0f);
    const ImageDims d{h, w, 3};
    const auto pil = c["decoded"].get<std::vector<float>>();  // resize PIL's pixels: isolates the resize

    const auto b = c["box"].get<std::vector<int64_t>>();
    const auto size = c["size"].get<std::vector<int64_t>>();
    std::vector<float> out(static_cast<size_t>(size[0] * size[1] * 3));
    resize_bilinear_u8(pil.data(), d, CropBox{b[0], b[1], b[2], b[3]}, size[0], size[1], out.data());
    CHECK(max_diff(out, c["resized_crop"].get<std::vector<float>>()) <= 1.0f);

    MapOpSpec op;
    op.op = "resize_center_crop";
    op.resize = c["resize"].get<int64_t>();
    op.size = c["crop"].get<std::vector<int64_t>>();
    auto plan = MapPlan::make({op}, Shape{h, w, 3}, Shape{}, 1, "job.yaml:1:1", "data.eval");
    REQUIRE_MESSAGE(plan.ok(), plan.error().message);
    CHECK(plan->feature_shape() == Shape{op.size[0], op.size[1], 3});
    Batch batch{Tensor::from(Shape{1, h, w, 3}, pil), Tensor(Shape{1}), {0}};
    REQUIRE(plan->apply(batch, {0}).ok());
    CHECK(batch.features.shape() == Shape{1, op.size[0], op.size[1], 3});
    const std::vector<float> got(batch.features.data(), batch.features.data() + batch.features.numel());
    CHECK(max_diff(got, c["resize_center_crop"].get<std::vector<float>>()) <= 1.0f);
  }
}

TEST_CASE("resize_center_crop: torchvision's new size and crop offsets") {
  // Resize(256) of 480 x 640: 256 x int(256 * 640 / 480) = 256 x 341; CenterCrop(224):
  // top round(32 / 2) = 16, left round(117 / 2) = round(58.5) = 58 (half to even).
  const ResizeCrop r = resize_center_crop_box(480, 640, 256, 224, 224);
  CHECK(r.new_h == 256);
  CHECK(r.new_w == 341);
  CHECK(r.crop == CropBox{16, 58, 224, 224});
  const ResizeCrop t = resize_center_crop_box(500, 333, 256, 224, 224);  // portrait: int(256 * 500 / 333) = 384
  CHECK(t.new_h == 384);
  CHECK(t.new_w == 256);
  CHECK(t.crop == CropBox{80, 16, 224, 224});
}

// A batch of n (h, w, 3) images with pixel values (7 * k) % 256 and ids 100.. .
Batch images(int64_t n, int64_t h, int64_t w) {
  std::vector<float> v(static_cast<size_t>(n * h * w * 3));
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>((7 * k) % 256);
  Batch b{Tensor::from(Shape{n, h, w, 3}, v), Tensor(Shape{n}), {}};
  for (int64_t r = 0; r < n; ++r) b.ids.push_back(100 + r);
  return b;
}

TEST_CASE("random_resized_crop in the map: shape, uint8 values, keyed by (seed, epoch, example id) only") {
  MapOpSpec op;
  op.op = "random_resized_crop";
  op.size = {8, 6};
  auto plan = MapPlan::make({op}, Shape{20, 30, 3}, Shape{}, 5, "job.yaml:1:1", "data.train");
  REQUIRE_MESSAGE(plan.ok(), plan.error().message);
  CHECK(plan->feature_shape() == Shape{8, 6, 3});

  Batch whole = images(4, 20, 30);
  REQUIRE(whole.features.shape() == Shape{4, 20, 30, 3});
  REQUIRE(plan->apply(whole, {0, 0, 0, 0}).ok());
  REQUIRE(whole.features.shape() == Shape{4, 8, 6, 3});
  const int64_t row = 8 * 6 * 3;
  for (int64_t k = 0; k < whole.features.numel(); ++k) {
    const float x = whole.features.data()[k];
    REQUIRE((x >= 0 && x <= 255 && x == std::floor(x)));
  }
  // Example 102 alone (as another thread or a restored run would gather it)
  // gets the same crop; another epoch gets another.
  Batch one = images(3, 20, 30);
  one.ids = {7, 8, 102};
  REQUIRE(plan->apply(one, {0, 0, 0}).ok());
  const std::vector<float> a(whole.features.data() + 2 * row, whole.features.data() + 3 * row);
  const std::vector<float> b(one.features.data() + 2 * row, one.features.data() + 3 * row);
  CHECK(a == b);
  Batch later = images(4, 20, 30);
  REQUIRE(plan->apply(later, {1, 1, 1, 1}).ok());
  const std::vector<float> c(later.features.data() + 2 * row, later.features.data() + 3 * row);
  CHECK(a != c);
}

std::string error_of(const MapOpSpec& op, const Shape& shape, double scale = 1.0) {
  auto plan = MapPlan::make({op}, shape, Shape{}, 0, "job.yaml:3:5", "data.train", scale);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.error().kind == ErrorKind::kConfig);
  return plan.error().message;
}

TEST_CASE("random_resized_crop and resize_center_crop: configuration errors") {
  MapOpSpec rrc;
  rrc.op = "random_resized_crop";
  rrc.size = {224, 224};
  MapOpSpec bad = rrc;
  bad.size = {224};
  CHECK(error_of(bad, {32, 32, 3}) ==
        "job.yaml:3:5: data.train.map[0]: random_resized_crop: size must be [height, width], both at least 1, got [224]");
  bad = rrc;
  bad.scale_range = {0.5, 0.2};
  CHECK(error_of(bad, {32, 32, 3}) ==
        "job.yaml:3:5: data.train.map[0]: random_resized_crop: scale must be [lo, hi] with 0 < lo <= hi <= 1, got "
        "[0.5, 0.2]");
  bad = rrc;
  bad.ratio = {0, 1};
  CHECK(error_of(bad, {32, 32, 3}) ==
        "job.yaml:3:5: data.train.map[0]: random_resized_crop: ratio must be [lo, hi] with 0 < lo <= hi, got [0, 1]");
  CHECK(error_of(rrc, {784}) == "job.yaml:3:5: data.train.map[0]: random_resized_crop needs images of shape [H, W] or "
                                "[H, W, C], got features of shape [784]");
  CHECK(error_of(rrc, {32, 32, 3}, 1.0 / 255) ==
        "job.yaml:3:5: data.train.map[0]: random_resized_crop works on pixels 0..255, but data scale 0.00392156862745098 "
        "is applied before the map; remove scale and normalize after the resize instead");
  MapOpSpec rcc;
  rcc.op = "resize_center_crop";
  rcc.size = {224, 224};
  CHECK(error_of(rcc, {480, 640, 3}) ==
        "job.yaml:3:5: data.train.map[0]: resize_center_crop: resize must be at least 1, got 0");
  rcc.resize = 200;
  CHECK(error_of(rcc, {480, 640, 3}) ==
        "job.yaml:3:5: data.train.map[0]: resize_center_crop: size [224, 224] does not fit in the resized image [200, "
        "266] (the shorter side of [480, 640] resized to 200); expected resize >= 224");
}

}  // namespace
}  // namespace dtrain
