// TFRecord framing (none, gzip or auto-detected; fail or skip corrupt
// records) and tf.Example decoding: `dtrain data inspect`'s description of
// each record, and the decoding a job's features give (float and int64
// lists, raw uint8 bytes, a PNG). Selector byte: bits 0-1 compression, bit 2
// skip corrupt records, bits 3-4 the features layout. Data errors only.
#include <algorithm>
#include <string>
#include <vector>

#include "datasets/example_convert.hpp"
#include "datasets/example_decode.hpp"
#include "datasets/tfrecord_file.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace dtrain;

namespace {

FeatureSpec feature(std::string name, std::string dtype, std::vector<int64_t> shape, std::string decode = "") {
  FeatureSpec f;
  f.name = std::move(name);
  f.dtype = std::move(dtype);
  f.shape = std::move(shape);
  f.decode = std::move(decode);
  return f;
}

DataSourceSpec layout_spec(int which) {
  DataSourceSpec spec;
  spec.format = "tfrecord";
  spec.label_feature = "label";
  switch (which) {
    case 0: spec.features = {feature("image", "float", {4}), feature("label", "int64", {})}; break;
    case 1: spec.features = {feature("image", "bytes", {2, 2, 1}, "raw_uint8"), feature("label", "int64", {})}; break;
    case 2: spec.features = {feature("image", "bytes", {2, 2, 1}, "png"), feature("label", "float", {})}; break;
    default: {
      FeatureSpec v = feature("tokens", "int64", {3});
      v.variable = true;
      v.default_value = 0;
      FeatureSpec x = feature("x", "float", {2});
      x.default_value = 1.5;
      spec.features = {v, x, feature("label", "float", {2})};
    }
  }
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint8_t selector = fuzz::take_selector(input);
  const TfRecordCompression compression[] = {TfRecordCompression::kNone, TfRecordCompression::kGzip,
                                             TfRecordCompression::kAuto, TfRecordCompression::kAuto};
  const std::string path = fuzz::write_scratch("a.tfrecord", input);
  auto file = read_tfrecord_file(path, compression[selector & 3], (selector & 4) != 0);
  fuzz::expect_ok_or(file, ErrorKind::kData, "read_tfrecord_file");
  // Whole records as tf.Examples (the input itself too, as one record).
  std::vector<std::string_view> records = {input};
  if (file.ok()) records.insert(records.end(), file->records.begin(), file->records.end());
  auto layout = make_example_layout(layout_spec((selector >> 3) & 3), "fuzz: ");
  if (!layout.ok()) fuzz::fail("the harness's own layout is refused: " + layout.error().message);
  std::vector<float> features(static_cast<size_t>(num_elements(layout->feature_shape)));
  std::vector<float> label(static_cast<size_t>(std::max<int64_t>(num_elements(layout->label_shape), 1)));
  for (std::string_view record : records) {
    fuzz::expect_ok_or(describe_example(record, 4, "record"), ErrorKind::kData, "describe_example");
    Status s = decode_example(record, *layout, features.data(), label.data(), "record");
    if (!s.ok()) fuzz::expect_kind(s.error(), ErrorKind::kData, "decode_example");
  }
  fuzz::expect_ok_or(inspect_tfrecord(path, 8, 4), ErrorKind::kData, "inspect_tfrecord");
  return 0;
}
