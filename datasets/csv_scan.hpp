// The csv source's one front-to-back pass over a file (datasets/csv_scan.cpp),
// shared by fitting and loading (datasets/csv_source.cpp): the header, the
// label, weight and feature columns found, every row checked field by field
// and handed on; nothing is kept here, so a pass costs no more memory than
// what its caller keeps of each row.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/csv_reader.hpp"
#include "datasets/mapped_text.hpp"
#include "datasets/source.hpp"

namespace dtrain::csv_internal {

// `s` without spaces, tabs and line ends at its ends.
std::string_view trim(std::string_view s);
// A finite number (trimmed, an optional +); false for anything else.
bool parse_number(std::string_view s, float& out);
// What a column is called in messages: "x2" with a header, "3" (1-based field) without.
std::string column_label(const std::vector<std::string>& names, size_t c);
// Whether a field is one of na_values (trimmed).
bool is_na(std::string_view field, const std::vector<std::string>& na_values);
// Whether `path` names a gzip file (read whole: it cannot be read row by row).
bool is_gzip_path(const std::string& path);

// A feature column found in the file.
struct PlannedColumn {
  size_t index = 0;  // in the file (0-based)
  CsvColumnSpec spec;
};

// One data row as the scan hands it on, every field checked: the row has the
// header's width, each number field is a number (or missing, with a fill),
// each text field is UTF-8, the weight is a finite number >= 0. The label is
// not checked (what it may be depends on the fit).
struct CsvRow {
  const std::vector<std::string>& fields;  // all of the row's, in file order
  const std::vector<float>& numbers;       // per planned column: its number (NaN: missing, or not a number column)
  float weight = 1.0f;                     // the weight column's value (1 without one)
  int64_t index = 0;                       // 0-based among the data rows
  const CsvReader& reader;                 // field_line(), record_line() of this row
  int64_t begin = 0, end = 0;              // the record's bytes in the file: [begin, end)
};

// A csv file opened for one pass. Not copyable or movable (the reader views
// the file's bytes).
class CsvScan {
 public:
  // The file of `spec` opened and its header read; its feature columns those
  // of ctx.tabular when given, else of spec.columns, else every column but
  // the label and weight. kConfig errors (prefixed ctx.prefix) for the spec;
  // kData errors naming file:line:column for the data.
  static Result<std::unique_ptr<CsvScan>> open(const DataSourceSpec& spec, const SourceContext& ctx);

  CsvScan(const CsvScan&) = delete;
  CsvScan& operator=(const CsvScan&) = delete;

  // Each data row in file order, checked (CsvRow), given to `row`; stops at
  // the first error (kData, file:line:column) or at an error of `row`. A file
  // without data rows is a kData error. Call once.
  Status for_each_row(const std::function<Status(const CsvRow&)>& row);

  std::string path;                  // resolved
  std::vector<std::string> names;    // the header; empty without one
  size_t width = 0;                  // fields per row
  std::vector<PlannedColumn> columns;
  std::optional<size_t> label_col;   // absent only for predict's rows without labels
  std::optional<size_t> weight_col;
  int64_t file_bytes = 0;            // the file's size on disk

 private:
  CsvScan() = default;
  Status check_row();  // fields_ checked; numbers_ and weight_ set

  std::vector<std::string> na_values_;
  MappedText bytes_;
  std::string_view text_;  // bytes_ after a byte order mark
  int64_t text_start_ = 0;  // where text_ starts in the file
  std::unique_ptr<CsvReader> reader_;
  std::vector<std::string> fields_;
  std::vector<float> numbers_;
  float weight_ = 1.0f;
  bool have_first_row_ = false;  // without a header, fields_ holds row 1 already
  int64_t first_begin_ = 0;
};

}  // namespace dtrain::csv_internal
