// What a csv source keeps of its file (datasets/csv_examples.hpp).
#include "datasets/csv_examples.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "datasets/csv_reader.hpp"
#include "datasets/csv_scan.hpp"
#include "datasets/utf8.hpp"

namespace dtrain {

namespace {

using csv_internal::is_na;
using csv_internal::parse_number;
using csv_internal::trim;

// The token ids of a text field (NA: the column's fill), at most max_length,
// appended to `ids`; false when the text is not UTF-8.
bool text_ids(const TabularColumn& c, const std::string& field, const std::vector<std::string>& na_values,
              std::vector<int32_t>& ids, int64_t* unknown) {
  const std::string& text = is_na(field, na_values) ? c.spec.fill : field;
  std::vector<uint32_t> code_points;
  Utf8Problem problem;
  if (!decode_utf8(reinterpret_cast<const uint8_t*>(text.data()), text.size(), code_points, &problem)) return false;
  const std::vector<std::string> tokens = c.tokens->text_tokenizer().tokens(text, code_points);
  const size_t n = std::min(tokens.size(), static_cast<size_t>(c.max_length));
  for (size_t t = 0; t < n; ++t) {
    const int32_t id = c.tokens->id(tokens[t]);
    if (unknown != nullptr && id == TokenVocabulary::kUnk) ++*unknown;
    ids.push_back(id);
  }
  return true;
}

int32_t category_id(const TabularColumn& c, const std::string& field, const std::vector<std::string>& na_values) {
  return is_na(field, na_values) ? c.fill_id : c.id(trim(field));
}

}  // namespace

void RowLines::add(int64_t line) {
  if (rows_ == 0 || line != last_ + 1) jumps_.emplace_back(rows_, line);
  last_ = line;
  ++rows_;
}

int64_t RowLines::line(int64_t row) const {
  const auto it = std::upper_bound(jumps_.begin(), jumps_.end(), row,
                                   [](int64_t r, const std::pair<int64_t, int64_t>& j) { return r < j.first; });
  const auto& jump = *(it - 1);
  return jump.second + (row - jump.first);
}

std::string CsvPlaces::locate(int64_t id, const ExampleValue& value) const {
  if (id < 0 || id >= rows.size()) return "";
  if (value.label && value.output > 0) return "";
  if (value.label && label) return field(line_of(id, label->index), *label);
  if (value.label || value.input >= features.size() || value.position < 0) {
    return fmt::format("{}:{}", path, rows.line(id));
  }
  // The column whose features (one, a category's one-hot, a text's ids) hold the position.
  const std::vector<int64_t>& ends = feature_ends[value.input];
  const auto k = static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), value.position) - ends.begin());
  const std::vector<Field>& columns = features[value.input];
  if (k >= columns.size()) return fmt::format("{}:{}", path, rows.line(id));
  return field(line_of(id, columns[k].index), columns[k]);
}

std::string CsvPlaces::field(int64_t line, const Field& f) const {
  return fmt::format("{}:{}:{} (column {})", path, line, f.index + 1, f.label);
}

int64_t CsvPlaces::line_of(int64_t row, size_t index) const {
  const auto spanning = spanning_rows.find(row);
  return spanning == spanning_rows.end() ? rows.line(row) : spanning->second[index];
}

void EncodedColumn::append(const std::string& field, float number, const std::vector<std::string>& na_values,
                           int64_t& unknown_tokens) {
  const TabularColumn& c = *column;
  switch (kind) {
    case kNumber: numbers.push_back(std::isnan(number) ? c.fill_number.value_or(0.0f) : number); break;
    case kOneHot:
    case kId: ids.push_back(category_id(c, field, na_values)); break;
    case kText:
      text_ids(c, field, na_values, ids, &unknown_tokens);  // the scan checked the UTF-8
      starts.push_back(static_cast<int64_t>(ids.size()));
      break;
  }
}

void EncodedColumn::encode(int64_t i, float* to) const {
  const auto r = static_cast<size_t>(i);
  switch (kind) {
    case kNumber: to[offset] = numbers[r]; break;
    case kOneHot: to[offset + ids[r]] = 1.0f; break;
    case kId: to[offset] = static_cast<float>(ids[r]); break;
    case kText:
      for (int64_t t = starts[r]; t < starts[r + 1]; ++t) {
        to[offset + t - starts[r]] = static_cast<float>(ids[static_cast<size_t>(t)]);
      }
      break;
  }
}

bool EncodedColumn::encode_field(const std::string& text, const std::vector<std::string>& na_values,
                                 float* to) const {
  const TabularColumn& c = *column;
  switch (kind) {
    case kNumber: {
      float v = 0;
      if (is_na(text, na_values)) {
        if (!c.fill_number) return false;
        v = *c.fill_number;
      } else if (!parse_number(text, v)) {
        return false;
      }
      to[offset] = v;
      return true;
    }
    case kOneHot: to[offset + category_id(c, text, na_values)] = 1.0f; return true;
    case kId: to[offset] = static_cast<float>(category_id(c, text, na_values)); return true;
    case kText: {
      std::vector<int32_t> row;
      if (!text_ids(c, text, na_values, row, nullptr)) return false;
      for (size_t t = 0; t < row.size(); ++t) to[offset + static_cast<int64_t>(t)] = static_cast<float>(row[t]);
      return true;
    }
  }
  return false;
}

Result<std::shared_ptr<const CsvRowFile>> CsvRowFile::open(const std::string& path, char delimiter, size_t width,
                                                           std::vector<int64_t> starts) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return data_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  return std::shared_ptr<const CsvRowFile>(new CsvRowFile(fd, path, delimiter, width, std::move(starts)));
}

CsvRowFile::~CsvRowFile() { ::close(fd_); }

bool CsvRowFile::read(int64_t i, std::vector<std::string>& fields, std::string& why) const {
  const int64_t begin = starts_[static_cast<size_t>(i)], end = starts_[static_cast<size_t>(i) + 1];
  std::string bytes(static_cast<size_t>(end - begin), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd_, bytes.data() + got, bytes.size() - got, begin + static_cast<int64_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = n < 0 ? std::string("cannot read: ") + std::strerror(errno) : "the file is shorter than when it was read";
      return false;
    }
    got += static_cast<size_t>(n);
  }
  CsvReader reader(bytes, delimiter_, path_);
  auto next = reader.next(fields);
  if (!next || !*next || fields.size() != width_ || reader.position() != bytes.size()) {
    why = "the row is not the one read at start-up";
    return false;
  }
  return true;
}

Batch CsvSource::gather(const std::vector<int64_t>& indices, float scale) const {
  const auto b = static_cast<int64_t>(indices.size());
  std::vector<Tensor> features;
  for (const Shape& s : p_.shapes) {
    Shape batched{b};
    batched.insert(batched.end(), s.begin(), s.end());
    features.push_back(Tensor::zeros(batched, DType::f32, kHost));
  }
  Batch out{features[0], Tensor(Shape{b}), indices};
  for (size_t k = 1; k < features.size(); ++k) out.extra_features.push_back(features[k]);
  std::vector<float*> data;
  std::vector<int64_t> widths;
  for (size_t k = 0; k < features.size(); ++k) {
    data.push_back(features[k].data());
    widths.push_back(num_elements(p_.shapes[k]));
  }
  if (!p_.weights.empty()) out.weights = Tensor(Shape{b});
  std::vector<std::string> fields;
  std::string why;
  for (int64_t r = 0; r < b; ++r) {
    const int64_t i = indices[static_cast<size_t>(r)];
    if (!p_.rows) {
      for (const EncodedColumn& c : p_.columns) c.encode(i, data[c.input] + r * widths[c.input]);
    } else {
      // Read back as training goes: the row as it was scanned, unless the file changed since.
      if (!p_.rows->read(i, fields, why)) {
        throw ErrorException{data_error(fmt::format("{}:{}: the file changed since training started ({}); restart "
                                                    "the job",
                                                    p_.places->path, p_.places->rows.line(i), why))};
      }
      for (const EncodedColumn& c : p_.columns) {
        if (!c.encode_field(fields[c.field], p_.na_values, data[c.input] + r * widths[c.input])) {
          const std::string where = p_.places->field(p_.places->line_of(i, c.field), {c.field, c.name});
          throw ErrorException{data_error(fmt::format("{}: \"{}\" is not the value read at start-up: the file changed "
                                                      "since training started; restart the job",
                                                      where, fields[c.field]))};
        }
      }
    }
    out.labels.data()[r] = p_.labels[static_cast<size_t>(i)];
    if (!p_.weights.empty()) out.weights.data()[r] = p_.weights[static_cast<size_t>(i)];
  }
  if (scale != 1.0f) {
    for (size_t k = 0; k < features.size(); ++k) {
      for (int64_t j = 0; j < b * widths[k]; ++j) data[k][j] *= scale;
    }
  }
  return out;
}

}  // namespace dtrain
