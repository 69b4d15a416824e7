// What a csv source keeps of its file once scanned (datasets/csv_source.cpp),
// held or read as training goes: held, each feature column compact (numbers,
// category ids, token ids without padding) and encoded into a batch's
// features only when the batch is gathered; read as training goes, only
// where each row starts in the file, each batch's rows read back from the
// file and encoded then. Either way the same features, and where each
// example and field is in the file, for messages.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "datasets/source.hpp"
#include "datasets/tabular.hpp"

namespace dtrain {

// The line each row starts on, kept as the rows where it is not the
// previous row's line + 1 (a blank line, a quoted line end): one entry for
// most files, not one per row.
class RowLines {
 public:
  void add(int64_t line);  // the next row's
  int64_t line(int64_t row) const;  // REQUIRES: 0 <= row < size()
  int64_t size() const { return rows_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> jumps_;  // (row, its line), rows ascending
  int64_t rows_ = 0, last_ = 0;
};

// Where a csv source's examples and their fields are, for locate().
struct CsvPlaces {
  struct Field {
    size_t index = 0;   // in the file (0-based)
    std::string label;  // column_label()
  };
  std::string path;
  RowLines rows;
  // The rows whose record spans several lines (a quoted field holds a line
  // end): each field's line, by row.
  std::unordered_map<int64_t, std::vector<int64_t>> spanning_rows;
  std::optional<Field> label;
  // Per model input, per feature column of it: the end of its features in
  // the input's example, and the column.
  std::vector<std::vector<int64_t>> feature_ends;
  std::vector<std::vector<Field>> features;

  // "train.csv:14" (the example), "train.csv:14:3 (column \"city\")" (a field).
  std::string locate(int64_t id, const ExampleValue& value) const;
  std::string field(int64_t line, const Field& f) const;  // "train.csv:14:3 (column \"city\")"
  int64_t line_of(int64_t row, size_t index) const;       // where field `index` of `row` is
};

// One feature column as a csv source encodes it: from a field as the scan
// checked it (datasets/csv_scan.hpp), either kept compact as rows are
// scanned (append) and encoded when a batch is gathered (encode), or
// encoded from the field itself when a batch is gathered (encode_field).
struct EncodedColumn {
  enum Kind { kNumber, kOneHot, kId, kText } kind = kNumber;
  const TabularColumn* column = nullptr;  // its fit; outlives this
  size_t field = 0;     // its field in the file's rows
  std::string name;     // what messages call it (column_label())
  size_t input = 0;     // the model input whose features it gives
  int64_t offset = 0;   // its first feature in that input's example
  std::vector<float> numbers;  // kNumber: per row, missing ones filled
  // kOneHot, kId: per row the vocabulary id; kText: every row's token ids,
  // row i's at [starts[i], starts[i + 1]), at most max_length of them.
  std::vector<int32_t> ids;
  std::vector<int64_t> starts{0};

  // Keeps the next row's value: `field` (checked), `number` its value as
  // the scan parsed it (NaN: missing). Counts unknown tokens of a text.
  void append(const std::string& field, float number, const std::vector<std::string>& na_values,
              int64_t& unknown_tokens);
  // Writes kept row i's features at `to` (its input's example, zeroed).
  void encode(int64_t i, float* to) const;
  // Writes the features of `field` at `to`; false when the field is not one
  // the scan would pass (the file changed since).
  bool encode_field(const std::string& field, const std::vector<std::string>& na_values, float* to) const;
};

// A csv file's rows read back as training goes: where each starts, each
// batch's records read with pread (the file is not mapped, so its pages
// never count towards this process's memory). Thread safety: read() may be
// called from any thread.
class CsvRowFile {
 public:
  // `starts`: row i's record at [starts[i], starts[i + 1]) of the file.
  // kData error when the file cannot be opened.
  static Result<std::shared_ptr<const CsvRowFile>> open(const std::string& path, char delimiter, size_t width,
                                                        std::vector<int64_t> starts);
  ~CsvRowFile();
  CsvRowFile(const CsvRowFile&) = delete;
  CsvRowFile& operator=(const CsvRowFile&) = delete;

  // Row i's fields; false when they cannot be read as scanned (the file
  // changed since): then `why` says what differs.
  bool read(int64_t i, std::vector<std::string>& fields, std::string& why) const;
  int64_t rows() const { return static_cast<int64_t>(starts_.size()) - 1; }

 private:
  CsvRowFile(int fd, std::string path, char delimiter, size_t width, std::vector<int64_t> starts)
      : fd_(fd), path_(std::move(path)), delimiter_(delimiter), width_(width), starts_(std::move(starts)) {}
  const int fd_;
  const std::string path_;
  const char delimiter_;
  const size_t width_;
  const std::vector<int64_t> starts_;
};

// A csv file's examples, encoded batch by batch from its kept columns or,
// with a row file, from its rows read back. Immutable; gather() is
// thread-safe. Read as training goes, gather() throws ErrorException (a
// kData error naming file:line) when the file changed since it was scanned.
class CsvSource final : public ExampleSource {
 public:
  struct Parts {
    TabularPtr preprocessing;             // what the columns point at
    std::vector<EncodedColumn> columns;   // kept compact unless `rows`
    std::shared_ptr<const CsvRowFile> rows;  // null: the columns are kept
    std::vector<std::string> na_values;
    std::vector<Shape> shapes;            // per model input, one example's
    std::vector<float> labels, weights;   // per row; weights empty without data.*.weight
    std::vector<std::string> classes;
    std::string summary;
    std::shared_ptr<const CsvPlaces> places;
  };
  explicit CsvSource(Parts parts) : p_(std::move(parts)) {}

  int64_t size() const override { return static_cast<int64_t>(p_.labels.size()); }
  Shape feature_shape() const override { return p_.shapes[0]; }
  Shape label_shape() const override { return {}; }
  std::vector<Shape> extra_feature_shapes() const override { return {p_.shapes.begin() + 1, p_.shapes.end()}; }
  std::string describe() const override { return p_.places->path; }
  bool has_weights() const override { return !p_.weights.empty(); }
  std::vector<std::string> class_names() const override { return p_.classes; }
  std::string summary() const override { return p_.summary; }
  std::string locate(int64_t id, const ExampleValue& value) const override { return p_.places->locate(id, value); }

  Batch gather(const std::vector<int64_t>& indices, float scale) const override;

 private:
  const Parts p_;
};

}  // namespace dtrain
