// Helpers for the tfrecord tests: the spec of the committed files written by
// tests/data/gen_tfrecords.py, their expected values, and reading a source out.
#pragma once

#include <doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "datasets/source.hpp"

namespace dtrain::data_testing {

inline std::string tfrecord_dir() { return std::string(DTRAIN_SOURCE_ROOT "/tests/data/tfrecord"); }

inline FeatureSpec feature(const std::string& name, const std::string& dtype, Shape shape, const std::string& decode = "",
                           bool variable = false, std::optional<double> def = std::nullopt) {
  FeatureSpec f;
  f.name = name;
  f.dtype = dtype;
  f.shape = std::move(shape);
  f.decode = decode;
  f.variable = variable;
  f.default_value = def;
  return f;
}

// The generator's records as a tfrecord spec: image, vals, var, weight
// concatenated (6 + 3 + 4 + 1 = 14 floats), label int64 [].
inline DataSourceSpec generated_spec(const std::string& files, const std::string& compression = "auto") {
  DataSourceSpec s;
  s.format = "tfrecord";
  s.files = {files};
  s.compression = compression;
  s.features = {feature("image", "bytes", {2, 3, 1}, "raw_uint8"), feature("label", "int64", {}),
                feature("vals", "float", {3}), feature("var", "int64", {4}, "", true, -1.0),
                feature("weight", "float", {}, "", false, 0.5)};
  s.label_feature = "label";
  return s;
}

// expected.json's examples of `file`: 14 features and the label each.
struct ExpectedExample {
  std::vector<float> features;
  float label;
};

inline std::vector<ExpectedExample> expected_examples(const std::string& file) {
  std::ifstream in(tfrecord_dir() + "/expected.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<ExpectedExample> out;
  for (const auto& e : j["files"][file]) {
    out.push_back({e["features"].get<std::vector<float>>(), e["label"].get<float>()});
  }
  return out;
}

// Every example of `source` in order, compared exactly with `want`.
inline void check_examples(const ExampleSource& source, const std::vector<ExpectedExample>& want) {
  REQUIRE(source.size() == static_cast<int64_t>(want.size()));
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < source.size(); ++i) idx.push_back(i);
  const Batch b = source.gather(idx, 1.0f);
  const size_t row = want.empty() ? 0 : want[0].features.size();
  REQUIRE(static_cast<size_t>(num_elements(source.feature_shape())) == row);
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("example " << i);
    for (size_t k = 0; k < row; ++k) {
      INFO("feature value " << k);
      CHECK(b.features.data()[i * row + k] == want[i].features[k]);
    }
    CHECK(b.labels.data()[i] == want[i].label);
  }
}

}  // namespace dtrain::data_testing
