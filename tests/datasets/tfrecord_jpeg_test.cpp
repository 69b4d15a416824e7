// JPEG-encoded tf.Example features written by TensorFlow (tf.io.encode_jpeg)
// decode with libjpeg to exactly the pixels TensorFlow's decode_jpeg gives
// (dct_method INTEGER_ACCURATE); tests/data/gen_jpeg_tfrecord.py made them.
#include <doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "datasets/tfrecord_source.hpp"
#include "tfrecord_test_util.hpp"

namespace dtrain {
namespace {

using data_testing::tfrecord_dir;

DataSourceSpec jpeg_spec() {
  DataSourceSpec spec;
  spec.format = "tfrecord";
  spec.files = {tfrecord_dir() + "/jpeg.tfrecord"};
  spec.features = {data_testing::feature("gray", "bytes", {6, 8, 1}, "jpeg"),
                   data_testing::feature("rgb", "bytes", {5, 4, 3}, "jpeg"), data_testing::feature("label", "int64", {})};
  spec.label_feature = "label";
  return spec;
}

TEST_CASE("tfrecord: JPEG-encoded features written by TensorFlow (tf.io.encode_jpeg)") {
  std::ifstream in(tfrecord_dir() + "/jpeg_expected.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  std::vector<data_testing::ExpectedExample> expected;
  for (const auto& e : want) expected.push_back({e["features"].get<std::vector<float>>(), e["label"].get<float>()});
  REQUIRE(expected.size() == 3);

  auto load = load_tfrecord_examples(jpeg_spec(), SourceContext{});
  REQUIRE_MESSAGE(load.ok(), load.error().message);
  CHECK(load->source->feature_shape() == Shape{6 * 8 + 5 * 4 * 3});
  data_testing::check_examples(*load->source, expected);

  SUBCASE("a JPEG of another size") {
    DataSourceSpec spec = jpeg_spec();
    spec.features[0].shape = {8, 6, 1};
    auto r = load_tfrecord_examples(spec, SourceContext{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kData);
    CHECK(r.error().message ==
          spec.files[0] + ": record 0: feature \"gray\": JPEG is 6x8 (height x width) but the shape needs 8x6");
  }
  SUBCASE("bytes that are not a JPEG") {
    DataSourceSpec raw = data_testing::generated_spec(tfrecord_dir() + "/plain.tfrecord");
    raw.features[0] = data_testing::feature("image", "bytes", {2, 3, 1}, "jpeg");
    auto r = load_tfrecord_examples(raw, SourceContext{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kData);
    CHECK(r.error().message.rfind(raw.files[0] + ": record 0: feature \"image\": not a valid JPEG image (", 0) == 0);
  }
  SUBCASE("jpeg needs 1 or 3 channels") {
    DataSourceSpec spec = jpeg_spec();
    spec.features[1].shape = {5, 4, 4};
    auto r = load_tfrecord_examples(spec, SourceContext{"", "p: "});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          "p: features.rgb: decode jpeg needs a shape [height, width, channels] with 1 or 3 channels, or [null, null, "
          "channels] for images of varying size, got [5, 4, 4]");
  }
}

}  // namespace
}  // namespace dtrain
