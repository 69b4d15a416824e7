// An RFC 4180 CSV tokenizer over text in memory: quoted fields may hold the
// delimiter, newlines and doubled quotes (""); CRLF or LF line ends; blank
// lines are skipped. Records are read one at a time into reused buffers, so
// a large file costs no more than its text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

class CsvReader {
 public:
  // `path` only names the file in errors. REQUIRES: `text` outlives the reader.
  CsvReader(std::string_view text, char delimiter, std::string path);

  // Reads the next record into `fields` (quotes removed, "" unescaped,
  // unquoted fields as written). Returns false at the end of the text.
  // Errors (kData, "path:line:field: ..."): an unterminated quoted field, a
  // character other than a delimiter or line end after a closing quote.
  Result<bool> next(std::vector<std::string>& fields);

  // Line (1-based) on which field `i` of the last record began.
  int64_t field_line(size_t i) const { return field_lines_[i]; }
  // Line on which the last record began.
  int64_t record_line() const { return field_lines_.empty() ? line_ : field_lines_[0]; }
  // Bytes of the text consumed so far.
  size_t position() const { return pos_; }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  bool at_line_end() const;   // '\n', "\r\n" or the end of the text
  void skip_line_end();       // consumes '\n' or "\r\n" if present
  bool skip_blank_line();     // consumes a line of only spaces/tabs, if at one
  Result<bool> read_quoted(std::string& out, size_t field);

  std::string_view text_;
  char delim_;
  std::string path_;
  size_t pos_ = 0;
  int64_t line_ = 1;                  // line of text_[pos_]
  std::vector<int64_t> field_lines_;  // per field of the last record
};

}  // namespace dtrain
