// The tfrecord feature spec: read from a job file in order, checked by the
// loader (kConfig), and records that do not fit it (kData).
#include <doctest.h>

#include <fmt/format.h>

#include "../config_schema/job_test_util.hpp"
#include "data_test_util.hpp"
#include "datasets/example_decode.hpp"
#include "datasets/tfrecord_file.hpp"
#include "datasets/tfrecord_source.hpp"
#include "example.pb.h"
#include "tfrecord_test_util.hpp"

namespace dtrain {
namespace {

using data_testing::feature;

TEST_CASE("tfrecord spec: the job file's fields reach DataSourceSpec in order") {
  auto job = testing::load_text(std::string(testing::kMinimalJob) +
                                "data:\n  train: {format: tfrecord, files: \"data/train-*.tfrecord\", compression: gzip,\n"
                                "    on_error: skip, label_feature: label,\n"
                                "    features: {label: {dtype: int64, shape: []}, image: {dtype: bytes, decode: raw_uint8, "
                                "shape: [28, 28, 1]},\n      extra: {dtype: float, shape: [3], variable: true, default: -1}}}\n");
  REQUIRE_MESSAGE(job.ok(), job.error().message);
  const DataSourceSpec& d = *job->data.train;
  CHECK(d.format == "tfrecord");
  CHECK(d.files == std::vector<std::string>{"/data/jobs/data/train-*.tfrecord"});
  CHECK(d.compression == "gzip");
  CHECK(d.on_error == "skip");
  CHECK(d.label_feature == "label");
  REQUIRE(d.features.size() == 3);
  CHECK(d.features[0].name == "label");
  CHECK(d.features[1].name == "image");
  CHECK(d.features[1].dtype == "bytes");
  CHECK(d.features[1].decode == "raw_uint8");
  CHECK(d.features[1].shape == Shape{28, 28, 1});
  CHECK(d.features[1].where == "job.yaml:8:57");
  CHECK(d.features[2].variable);
  CHECK(d.features[2].default_value == -1.0);
  for (const FeatureSpec& f : d.features) CHECK(f.problem.empty());
}

TEST_CASE("tfrecord spec: the schema checks the new fields") {
  const std::string base = std::string(testing::kMinimalJob) + "data:\n  train: ";
  CHECK(testing::load_error(base + "{format: tfrecord, features: {}, label_feature: y}\n").find("files") != std::string::npos);
  CHECK(testing::load_error(base + "{format: tfrecord, files: a, features: {}, label_feature: y, compression: zip}\n")
            .find("compression") != std::string::npos);
  CHECK(testing::load_error(base + "{format: tfrecord, files: a, features: {}, label_feature: y, on_error: ignore}\n")
            .find("on_error") != std::string::npos);
  CHECK(testing::load_error(base + "{format: npz}\n").find("path") != std::string::npos);
  CHECK(testing::load_text(base + "{format: npz, path: a.npz, features_array: x, labels_array: y}\n").ok());
}

TEST_CASE("tfrecord spec: malformed feature entries are kConfig errors naming the feature") {
  auto job = testing::load_text(std::string(testing::kMinimalJob) +
                                "data:\n  train: {format: tfrecord, files: x, label_feature: y,\n"
                                "    features: {y: {dtype: int64}, x: {dtype: float, shape: [0]}}}\n");
  REQUIRE(job.ok());
  auto load = load_source(*job->data.train, SourceContext{"", "data.train: "});
  REQUIRE_FALSE(load.ok());
  CHECK(load.error().kind == ErrorKind::kConfig);
  CHECK(load.error().message == "data.train: features.x: shape: expected a list of integers >= 1 (or null for a JPEG's varying height and "
        "width), got 0 in it");

  DataSourceSpec s = data_testing::generated_spec(data_testing::tfrecord_dir() + "/plain.tfrecord");
  auto error_of = [&](const DataSourceSpec& spec) {
    auto r = load_tfrecord_examples(spec, SourceContext{"", "p: "});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kConfig);
    return r.error().message;
  };
  DataSourceSpec t = s;
  t.features[2].dtype = "double";
  CHECK(error_of(t) == "p: features.vals: dtype \"double\" is not one of float, int64, bytes");
  t = s;
  t.features[0].decode = "";
  CHECK(error_of(t) == "p: features.image: bytes features need decode: raw_uint8, png or jpeg");
  t = s;
  t.label_feature = "digit";
  CHECK(error_of(t) == "p: label_feature \"digit\" is not one of the features");
  t = s;
  t.features[3].shape = {};
  CHECK(error_of(t) == "p: features.var: variable needs a shape giving the maximum length");
  t = s;
  t.compression = "zip";
  CHECK(error_of(t) == "p: compression \"zip\" is not one of none, gzip, auto");
}

TEST_CASE("tfrecord spec: records that do not fit the spec are kData errors with file and record") {
  const std::string path = data_testing::tfrecord_dir() + "/plain.tfrecord";
  DataSourceSpec s = data_testing::generated_spec(path);
  auto error_of = [&](const DataSourceSpec& spec) {
    auto r = load_tfrecord_examples(spec, SourceContext{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kData);
    return r.error().message;
  };
  DataSourceSpec t = s;
  t.features[2].dtype = "int64";
  CHECK(error_of(t) == path + ": record 0: feature \"vals\" holds float values but the spec says dtype int64");
  t = s;
  t.features[2].shape = {4};
  CHECK(error_of(t) == path + ": record 0: feature \"vals\" has 3 values but shape [4] needs 4");
  t = s;
  t.features[3].shape = {2};  // record 3 has 3 values
  CHECK(error_of(t) == path + ": record 3: feature \"var\" has 3 values but shape [2] needs at most 2");
  t = s;
  t.features[4].default_value.reset();  // weight is missing from odd records
  CHECK(error_of(t) == path + ": record 1: feature \"weight\" is missing and has no default");
  t = s;
  t.features[0].shape = {7};
  CHECK(error_of(t) == path + ": record 0: feature \"image\" has 6 bytes but shape [7] needs 7");
}

TEST_CASE("tfrecord spec: variable-length features are padded with the default") {
  ExampleLayout layout;
  layout.inputs = {feature("v", "float", {4}, "", true, 9.0)};
  layout.label = feature("y", "int64", {});
  layout.feature_shape = {4};
  tensorflow::Example ex;
  auto& map = *ex.mutable_features()->mutable_feature();
  map["v"].mutable_float_list()->add_value(1.5f);
  map["y"].mutable_int64_list()->add_value(-3);
  float f[4], y = 0;
  REQUIRE(decode_example(ex.SerializeAsString(), layout, f, &y, "r").ok());
  CHECK(f[0] == 1.5f);
  CHECK(f[1] == 9.0f);
  CHECK(f[3] == 9.0f);
  CHECK(y == -3.0f);
  CHECK(decode_example("\xff\xff", layout, f, &y, "r").error().message == "r: not a tf.Example (protobuf parse failed)");
}

// Data errors found after loading name the file, the record and the feature
// holding a value (the input features are concatenated in spec order), with
// its position in a feature of several values.
TEST_CASE("tfrecord spec: locate names the record and the feature of a value") {
  const std::string path = data_testing::tfrecord_dir() + "/plain.tfrecord";
  auto load = load_tfrecord_examples(data_testing::generated_spec(path), SourceContext{});
  REQUIRE_MESSAGE(load.ok(), load.error().message);
  const ExampleSource& s = *load->source;
  // image [2, 3, 1] (positions 0..5), vals [3] (6..8), var [4] (9..12), weight [] (13)
  CHECK(s.locate(3, ExampleValue{}) == path + ": record 3");
  CHECK(s.locate(3, ExampleValue{.label = true}) == path + ": record 3 (feature \"label\")");
  CHECK(s.locate(3, ExampleValue{.position = 4}) == path + ": record 3 (feature \"image\", position 4)");
  CHECK(s.locate(3, ExampleValue{.position = 7}) == path + ": record 3 (feature \"vals\", position 1)");
  CHECK(s.locate(3, ExampleValue{.position = 9}) == path + ": record 3 (feature \"var\", position 0)");
  CHECK(s.locate(3, ExampleValue{.position = 13}) == path + ": record 3 (feature \"weight\")");

  // One feature per model input: input k's feature, by its own positions.
  ExampleLayout layout;
  layout.inputs = {data_testing::feature("ids", "int64", {5}), data_testing::feature("dense", "float", {})};
  layout.input_shapes = {{5}, {1}};
  layout.label = data_testing::feature("y", "int64", {});
  CHECK(feature_of_value(layout, ExampleValue{.input = 0, .position = 3}) == " (feature \"ids\", position 3)");
  CHECK(feature_of_value(layout, ExampleValue{.input = 1, .position = 0}) == " (feature \"dense\")");
  CHECK(feature_of_value(layout, ExampleValue{.input = 2, .position = 0}).empty());
}

}  // namespace
}  // namespace dtrain
