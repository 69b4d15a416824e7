// The field tables of data.*.map operations and of data.*.columns (CSV),
// written once (engine/base/fields.hpp); data_fields.cpp holds the sources'.
#include "engine/base/job_spec.hpp"

namespace dtrain {
namespace {

constexpr const char* kFastJpegDoc =
    "Streamed JPEG features (stream: auto or true) where this is the first map operation: decode only the rows and "
    "columns the resize reads, at libjpeg's 1/8, 2/8 or 4/8 scale when the window holds the output at that scale, with "
    "libjpeg's fast integer DCT (TensorFlow's decode_jpeg default, INTEGER_FAST). false: the window decoded at full "
    "size with the accurate DCT, torchvision's pixels exactly.";

std::span<const Field> normalize_fields() {
  static const Field kFields[] = {
      field<&MapOpSpec::mean>("mean", "Per-channel mean, or one value for all channels.")
          .shaped(R"({"type": "array", "minItems": 1, "items": {"type": "number"}})")
          .need(),
      field<&MapOpSpec::std>("std", "Per-channel standard deviation, or one value for all channels.")
          .shaped(R"({"type": "array", "minItems": 1, "items": {"type": "number", "exclusiveMinimum": 0}})")
          .need(),
  };
  return kFields;
}

std::span<const Field> one_hot_fields() {
  static const Field kFields[] = {
      field<&MapOpSpec::depth>("depth", "Number of classes.").min(1).need(),
  };
  return kFields;
}

std::span<const Field> random_crop_fields() {
  static const Field kFields[] = {
      field<&MapOpSpec::padding>("padding", "Zeros added on each side of the height and width.").min(0).need(),
  };
  return kFields;
}

std::span<const Field> random_brightness_fields() {
  static const Field kFields[] = {
      field<&MapOpSpec::max_delta>("max_delta", "Largest change.").min(0).need(),
  };
  return kFields;
}

std::span<const Field> random_contrast_fields() {
  static const Field kFields[] = {
      field<&MapOpSpec::lower>("lower", "Smallest factor.").min(0).need(),
      field<&MapOpSpec::upper>("upper", "Largest factor (not below lower).").min(0).need(),
  };
  return kFields;
}

std::span<const Field> random_resized_crop_fields() {
  static const Field kFields[] = {
      field<&MapOpSpec::size>("size", "[height, width] of the result.")
          .shaped(R"({"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 1}})")
          .need(),
      field<&MapOpSpec::scale_range>("scale", "[lo, hi]: range of the window's area as a fraction of the image.")
          .shaped(
              R"({"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}})"),
      field<&MapOpSpec::ratio>("ratio", "[lo, hi]: range of the window's width / height, sampled log-uniformly.")
          .shaped(
              R"({"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "number", "exclusiveMinimum": 0}})"),
      field<&MapOpSpec::fast_jpeg>("fast_jpeg", kFastJpegDoc),
  };
  return kFields;
}

std::span<const Field> resize_center_crop_fields() {
  static const Field kFields[] = {
      field<&MapOpSpec::resize>("resize", "Length of the shorter side after resizing.").min(1).need(),
      field<&MapOpSpec::size>("size", "[height, width] of the central window kept.")
          .shaped(R"({"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 1}})")
          .need(),
      field<&MapOpSpec::fast_jpeg>("fast_jpeg", kFastJpegDoc),
  };
  return kFields;
}
}  // namespace

std::span<const Field> map_op_fields() {
  static const Field kFields[] = {
      field_group<MapOpSpec>("normalize", "(x - mean) / std per channel.", normalize_fields).documented_default("null"),
      field<&MapOpSpec::dtype>("cast", "Saturate to the type's range, then truncate toward zero.")
          .shaped(R"({"enum": ["uint8", "int8", "int32"]})")
          .documented_default("null"),
      field_group<MapOpSpec>("one_hot", "Class-id labels become one-hot vectors.", one_hot_fields)
          .documented_default("null"),
      field_group<MapOpSpec>("random_crop", "Zero padding, then a crop of the original size at a random offset.",
                             random_crop_fields)
          .documented_default("null"),
      field<&MapOpSpec::mode>("random_flip", "Mirror left-right with probability 1/2.")
          .shaped(R"({"enum": ["horizontal"]})")
          .documented_default("null"),
      field_group<MapOpSpec>("random_brightness", "Add one uniform draw from [-max_delta, max_delta).",
                             random_brightness_fields)
          .documented_default("null"),
      field_group<MapOpSpec>("random_contrast",
                             "Scale each channel's deviation from its mean by a uniform draw from [lower, upper).",
                             random_contrast_fields)
          .documented_default("null"),
      field_group<MapOpSpec>("random_resized_crop",
                             "A random window (torchvision RandomResizedCrop.get_params) resized to size.",
                             random_resized_crop_fields)
          .documented_default("null"),
      field_group<MapOpSpec>("resize_center_crop",
                             "Shorter side resized to resize, then the central window of size (evaluation).",
                             resize_center_crop_fields)
          .documented_default("null"),
  };
  return kFields;
}

std::span<const Field> csv_column_fields() {
  static const Field kFields[] = {
      field<&CsvColumnSpec::name>("name", "The column: its header name, or its 0-based index.")
          .shaped(R"({"type": ["string", "integer"]})")
          .need(),
      field<&CsvColumnSpec::type>(
          "type",
          "number: the value as one feature. category: the value's id in the vocabulary of the column's values in "
          "data.train (most frequent first, ties by name; id 0 is the unknown category, for values not seen in "
          "training), one-hot encoded (1 + the number of values features) or the id itself (encoding: id). text: "
          "the value's token ids, max_length features (padded with <pad> 0 or truncated), tokenized as "
          "data.*.tokenizer says; the vocabulary is built from data.train's values of the column (as text_folder "
          "builds it; with tokenizer sentencepiece, the model's pieces) and saved with the model; for an embedding "
          "layer, on a model input of dtype int32.")
          .shaped(R"({"enum": ["number", "category", "text"]})"),
      field<&CsvColumnSpec::fill>(
          "fill",
          "What a missing value (one of na_values) becomes. number: mean or median (of data.train's values in the "
          "column) or a number; category: most_frequent or a value. Not given: a missing number is an error naming "
          "the file and line; a missing category is the unknown category.")
          .shaped(R"({"type": ["string", "number"]})")
          .hidden_at_default(),
      field<&CsvColumnSpec::max_categories>(
          "max_categories",
          "category: keep only this many of the most frequent values; the others are the unknown category. Null: "
          "every value of data.train.")
          .min(1)
          .hidden_at_default(),
      field<&CsvColumnSpec::encoding>(
          "encoding",
          "category: one_hot (1 + the number of categories features, the one of the value's id 1) or id (one "
          "feature, the id itself: 0 unknown, 1.. the categories; for an embedding layer, input_dim 1 + the number "
          "of categories, on a model input of dtype int32).")
          .shaped(R"({"enum": ["one_hot", "id"]})")
          .hidden_at_default(),
      field<&CsvColumnSpec::input>(
          "input",
          "The model input (a name in model.inputs) the column's features go to; the columns of one input are "
          "concatenated in the order listed. Required when the model has several inputs; empty: the model's only "
          "input.")
          .hidden_at_default(),
  };
  return kFields;
}

}  // namespace dtrain
