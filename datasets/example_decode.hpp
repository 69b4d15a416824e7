// Decoding tf.Example records into float features and labels by the feature
// spec of a tfrecord source, and encoding examples for `dtrain data convert`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// Where each feature's values go. The input features (all but the label, in
// the order of the spec) are flattened and concatenated into one row of
// `feature_shape` elements; a single input feature keeps its own shape.
struct ExampleLayout {
  std::vector<FeatureSpec> inputs;
  FeatureSpec label;
  Shape feature_shape;  // e.g. [28, 28, 1], or [n1 + n2 + ...] for several inputs
  Shape label_shape;    // the label feature's shape: [] for class ids
  // For a model of several inputs: inputs[k] is model input k's feature (of
  // its name) and input_shapes[k] its shape; empty otherwise.
  std::vector<Shape> input_shapes;
  // data.*.weight: the feature of each example's weight (one float or
  // int64 value), neither an input nor the label; none without a weight.
  std::optional<FeatureSpec> weight;
};

// Checks the spec's features (known dtype; decode raw_uint8, png or jpeg, only for
// bytes, png with shape [h, w, 1..4]; variable needs a shape; the label is listed and is not bytes; at
// least one input) and builds the layout. Errors are kConfig, starting with
// `prefix` and naming the feature: "<prefix>features.image: ...".
// model_inputs: the model's input names when it has several; every one must
// be a feature, and every feature but the label one of them.
Result<ExampleLayout> make_example_layout(const DataSourceSpec& spec, const std::string& prefix,
                                          const std::vector<std::string>& model_inputs = {});

// What locate() adds after "<file>: record N" for `value` of an example of
// `layout`: the feature and, for a feature of several values, the value's
// position in it: " (feature \"label\")", " (feature \"tokens\", position
// 3)"; "" for a value the layout does not hold (a label of another output
// than the first).
std::string feature_of_value(const ExampleLayout& layout, const ExampleValue& value);

// Decodes one serialized tf.Example: writes num_elements(feature_shape)
// floats to `features` and num_elements(label_shape) to `label`. Errors
// (kData, prefixed "<where>: "): not a tf.Example, a feature missing without
// a default, of another dtype than the spec's, or with a wrong value count
// (raw_uint8: a wrong byte count; png: not a PNG or of another size).
// With a weight feature and `weight` not null, its value goes to *weight (a
// kData error when not finite or negative).
Status decode_example(std::string_view record, const ExampleLayout& layout, float* features, float* label,
                      const std::string& where, float* weight = nullptr);

// The streamed JPEG path's parse: decodes the label as decode_example does
// and moves the encoded bytes of the one input feature (decode: jpeg) into
// `image`, leaving their decoding to the caller. Errors as decode_example's.
// REQUIRES: layout.inputs is one bytes feature.
Status split_example(std::string_view record, const ExampleLayout& layout, float* label, std::string& image,
                     const std::string& where, float* weight = nullptr);

// A serialized tf.Example {"image": n values, "label": label_n values}:
// the image as one bytes value of raw uint8 pixels when `image_uint8` (every
// value must then be an integer in 0..255) else a float_list; the label as an
// int64_list when `label_int64` else a float_list.
std::string encode_example(const float* image, size_t n, bool image_uint8, const float* label, size_t label_n,
                           bool label_int64);

// One line per feature of a serialized tf.Example, sorted by name:
// "  image: bytes[784] 00 00 1a ..." / "  label: int64[1] 5" with at most
// `max_values` values each. Error (kData, "<where>: ...") if not a tf.Example.
Result<std::string> describe_example(std::string_view record, size_t max_values, const std::string& where);

}  // namespace dtrain
