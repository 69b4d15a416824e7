// What a csv source keeps of its file once read (datasets/csv_source.cpp):
// each feature column compact (numbers, category ids, token ids without
// padding), encoded into a batch's features only when the batch is
// gathered, and where each example and field is in the file, for messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "datasets/source.hpp"

namespace dtrain {

// Where a csv source's examples and their fields are, for locate().
struct CsvPlaces {
  struct Field {
    size_t index = 0;   // in the file (0-based)
    std::string label;  // column_label()
  };
  std::string path;
  std::vector<int64_t> row_lines, label_lines;  // RawCsv's
  std::unordered_map<int64_t, std::vector<int64_t>> spanning_rows;
  std::optional<Field> label;
  // Per model input, per feature column of it: the end of its features in
  // the input's example, and the column.
  std::vector<std::vector<int64_t>> feature_ends;
  std::vector<std::vector<Field>> features;

  // "train.csv:14" (the example), "train.csv:14:3 (column \"city\")" (a field).
  std::string locate(int64_t id, const ExampleValue& value) const;
  std::string field(int64_t line, const Field& f) const;  // "train.csv:14:3 (column \"city\")"
};

// One feature column as load_csv_source keeps it: compact, encoded into a
// batch's features only when the batch is gathered (a one-hot category is
// one id per row, not 1 + categories floats; a text is its token ids, not
// max_length floats).
struct EncodedColumn {
  enum Kind { kNumber, kOneHot, kId, kText } kind = kNumber;
  size_t input = 0;     // the model input whose features it gives
  int64_t offset = 0;   // its first feature in that input's example
  std::vector<float> numbers;  // kNumber: per row, missing ones filled
  // kOneHot, kId: per row the vocabulary id; kText: every row's token ids,
  // row i's at [starts[i], starts[i + 1]), at most `length` of them.
  std::vector<int32_t> ids;
  std::vector<int64_t> starts;
  int64_t length = 0;  // kText: max_length

  // Writes row i's features at `to` (its input's example, zeroed).
  void encode(int64_t i, float* to) const;
};

// A csv file's examples, encoded batch by batch from its columns. Immutable.
class CsvSource final : public ExampleSource {
 public:
  CsvSource(std::vector<EncodedColumn> columns, std::vector<Shape> shapes, std::vector<float> labels,
            std::vector<float> weights, std::string name, std::vector<std::string> classes, std::string summary,
            ExampleLocator locate)
      : columns_(std::move(columns)),
        shapes_(std::move(shapes)),
        labels_(std::move(labels)),
        weights_(std::move(weights)),
        name_(std::move(name)),
        classes_(std::move(classes)),
        summary_(std::move(summary)),
        locate_(std::move(locate)) {}

  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  Shape feature_shape() const override { return shapes_[0]; }
  Shape label_shape() const override { return {}; }
  std::vector<Shape> extra_feature_shapes() const override { return {shapes_.begin() + 1, shapes_.end()}; }
  std::string describe() const override { return name_; }
  bool has_weights() const override { return !weights_.empty(); }
  std::vector<std::string> class_names() const override { return classes_; }
  std::string summary() const override { return summary_; }
  std::string locate(int64_t id, const ExampleValue& value) const override { return locate_(id, value); }

  Batch gather(const std::vector<int64_t>& indices, float scale) const override;

 private:
  const std::vector<EncodedColumn> columns_;
  const std::vector<Shape> shapes_;  // per model input, one example's
  const std::vector<float> labels_, weights_;  // per row; weights empty without data.*.weight
  const std::string name_;
  const std::vector<std::string> classes_;
  const std::string summary_;
  const ExampleLocator locate_;
};

}  // namespace dtrain
