// The csv source's reading step (datasets/csv_read.cpp), shared with its
// fitting and loading (datasets/csv_source.cpp): a file read once, front to
// back, column by column, every field checked, nothing encoded yet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

// One feature column's values as read, before they are encoded.
struct RawColumn {
  size_t index = 0;  // in the file
  CsvColumnSpec spec;
  std::vector<float> numbers;  // number: per row, NaN when missing
  std::vector<std::string> texts;  // text: per row (valid UTF-8; a missing value is its fill, or "")
  // category: per row the value's place in `values` (-1 when missing), and
  // each distinct value with how often it occurs.
  std::vector<int32_t> seen;
  std::vector<std::string> values;
  std::vector<int64_t> counts;
  std::unordered_map<std::string, int32_t> lookup;
};

// A csv file read column by column: what fitting and encoding need.
struct RawCsv {
  std::string path;
  std::vector<std::string> names;  // the header; empty without one
  std::vector<RawColumn> columns;
  std::optional<size_t> label_col;          // absent only for predict's rows without labels
  std::vector<std::string> labels;          // per row, trimmed
  std::vector<int64_t> label_lines;         // per row, where the label is
  std::optional<size_t> weight_col;
  std::vector<float> weights;
  std::vector<int64_t> row_lines;           // per row, the line it starts on
  // The rows whose record spans several lines (a quoted field holds a line
  // end): each field's line, by row.
  std::unordered_map<int64_t, std::vector<int64_t>> spanning_rows;
  int64_t rows = 0;
};

// The file of `spec` read (its feature columns those of ctx.tabular when
// given, else of spec.columns, else every column but the label and weight).
// kConfig errors (prefixed ctx.prefix) for the spec; kData errors naming
// file:line:column for the data.
Result<RawCsv> read_csv(const DataSourceSpec& spec, const SourceContext& ctx);

}  // namespace dtrain::csv_internal
