// The csv source: CSV (raw or gzip, a UTF-8 BOM skipped) with an optional
// header, a label column of numbers or class names, feature columns chosen by
// name or 0-based index, each a number (missing values filled or refused), a
// category (one-hot over the vocabulary of data.train, or its id) or text
// (token ids, padded or truncated), an optional reshape of each row's
// features, and for a model of several inputs the columns of each input.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "datasets/csv_reader.hpp"
#include "datasets/idx_file.hpp"
#include "datasets/source.hpp"
#include "datasets/text_folder_source.hpp"
#include "datasets/utf8.hpp"

namespace dtrain {

namespace {

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  while (!s.empty() && kSpace.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
  while (!s.empty() && kSpace.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
  return s;
}

bool parse_number(std::string_view s, float& out) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return false;
  out = static_cast<float>(v);
  return true;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// What a column is called in messages: "x2" with a header, "3" (1-based field) without.
std::string column_label(const std::vector<std::string>& names, size_t c) {
  return names.empty() ? std::to_string(c + 1) : "\"" + names[c] + "\"";
}

// Resolves a column given by header name or 0-based index.
Result<size_t> find_column(const std::string& key, const std::string& option, const std::vector<std::string>& names,
                           size_t ncols, const std::string& path, const std::string& prefix) {
  for (size_t c = 0; c < names.size(); ++c) {
    if (std::string(trim(names[c])) == key) return c;
  }
  if (all_digits(key) && key.size() < 10) {
    const size_t c = std::stoul(key);
    if (c < ncols) return c;
    return config_error(fmt::format("{}{}: column index {} is out of range: {} has {} columns (0-{})", prefix, option,
                                    c, path, ncols, ncols - 1));
  }
  if (names.empty()) {
    return config_error(fmt::format("{}{}: \"{}\" is not a column index, and {} has no header to look names up in "
                                    "(header: false)", prefix, option, key, path));
  }
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + std::string(trim(n));
  return config_error(fmt::format("{}{}: \"{}\" is not a column of {} (columns: {})", prefix, option, key, path, known));
}


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
  std::string locate(int64_t id, const ExampleValue& value) const {
    const auto i = static_cast<size_t>(id);
    if (id < 0 || i >= row_lines.size()) return "";
    if (value.label && value.output > 0) return "";
    if (value.label && label && i < label_lines.size()) return field(label_lines[i], *label);
    if (value.label || value.input >= features.size() || value.position < 0) {
      return fmt::format("{}:{}", path, row_lines[i]);
    }
    // The column whose features (one, a category's one-hot, a text's ids) hold the position.
    const std::vector<int64_t>& ends = feature_ends[value.input];
    const auto k = static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), value.position) - ends.begin());
    const std::vector<Field>& columns = features[value.input];
    if (k >= columns.size()) return fmt::format("{}:{}", path, row_lines[i]);
    const auto spanning = spanning_rows.find(id);
    const int64_t line = spanning == spanning_rows.end() ? row_lines[i] : spanning->second[columns[k].index];
    return field(line, columns[k]);
  }
  std::string field(int64_t line, const Field& f) const {
    return fmt::format("{}:{}:{} (column {})", path, line, f.index + 1, f.label);
  }
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
  void encode(int64_t i, float* to) const {
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

  Batch gather(const std::vector<int64_t>& indices, float scale) const override {
    const auto b = static_cast<int64_t>(indices.size());
    std::vector<Tensor> features;
    for (const Shape& s : shapes_) {
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
      widths.push_back(num_elements(shapes_[k]));
    }
    if (!weights_.empty()) out.weights = Tensor(Shape{b});
    for (int64_t r = 0; r < b; ++r) {
      const int64_t i = indices[static_cast<size_t>(r)];
      for (const EncodedColumn& c : columns_) c.encode(i, data[c.input] + r * widths[c.input]);
      out.labels.data()[r] = labels_[static_cast<size_t>(i)];
      if (!weights_.empty()) out.weights.data()[r] = weights_[static_cast<size_t>(i)];
    }
    if (scale != 1.0f) {
      for (size_t k = 0; k < features.size(); ++k) {
        for (int64_t j = 0; j < b * widths[k]; ++j) data[k][j] *= scale;
      }
    }
    return out;
  }

 private:
  const std::vector<EncodedColumn> columns_;
  const std::vector<Shape> shapes_;  // per model input, one example's
  const std::vector<float> labels_, weights_;  // per row; weights empty without data.*.weight
  const std::string name_;
  const std::vector<std::string> classes_;
  const std::string summary_;
  const ExampleLocator locate_;
};

bool is_na(std::string_view field, const std::vector<std::string>& na_values) {
  const std::string_view t = trim(field);
  return std::any_of(na_values.begin(), na_values.end(), [&](const std::string& na) { return t == na; });
}

// A csv file's bytes: a plain file mapped read-only (its pages released as
// the reader passes them), a .gz file decompressed into memory.
class MappedText {
 public:
  static Result<MappedText> open(const std::string& path) {
    MappedText m;
    if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      struct stat st {};
      if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        m.size_ = static_cast<size_t>(st.st_size);
        void* p = m.size_ == 0 ? nullptr : ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        ::close(fd);
        if (p != MAP_FAILED) {
          m.map_ = static_cast<char*>(p);
          if (m.map_ != nullptr) ::madvise(m.map_, m.size_, MADV_SEQUENTIAL);
          return m;
        }
        m.size_ = 0;
      } else if (fd >= 0) {
        ::close(fd);
      }
    }
    auto bytes = read_data_file(path);  // .gz, or what cannot be mapped: its errors name the file
    if (!bytes) return bytes.error();
    m.whole_ = std::move(*bytes);
    return m;
  }
  MappedText() = default;
  MappedText(MappedText&& o) noexcept { *this = std::move(o); }
  MappedText& operator=(MappedText&& o) noexcept {
    std::swap(map_, o.map_);
    std::swap(size_, o.size_);
    std::swap(released_, o.released_);
    std::swap(whole_, o.whole_);
    return *this;
  }
  ~MappedText() {
    if (map_ != nullptr) ::munmap(map_, size_);
  }

  std::string_view text() const {
    return map_ != nullptr ? std::string_view(map_, size_)
                           : std::string_view(reinterpret_cast<const char*>(whole_.data()), whole_.size());
  }
  // The pages of a mapping before byte `pos` of `text` (a view of text()
  // that may start later, after a BOM) are given back, every 16 MiB.
  void release_before(std::string_view text, size_t pos) {
    if (map_ == nullptr) return;
    constexpr size_t kStep = size_t{16} << 20;
    const size_t end = static_cast<size_t>(text.data() - map_) + pos;
    if (end < released_ + 2 * kStep) return;
    const size_t upto = (end - kStep) / kStep * kStep;  // page aligned, a step behind the reader
    ::madvise(map_ + released_, upto - released_, MADV_DONTNEED);
    released_ = upto;
  }

 private:
  char* map_ = nullptr;
  size_t size_ = 0, released_ = 0;
  std::vector<uint8_t> whole_;
};

// The feature columns of `spec` (or of the fitted preprocessing, which
// names them as data.train's file did), found in this file.
Result<std::vector<RawColumn>> plan_columns(const DataSourceSpec& spec, const SourceContext& ctx,
                                            const std::vector<std::string>& names, size_t ncols,
                                            const std::optional<size_t>& label_col,
                                            const std::optional<size_t>& weight_col, const std::string& path) {
  std::vector<RawColumn> out;
  std::vector<CsvColumnSpec> wanted;
  if (ctx.tabular) {
    for (const TabularColumn& c : ctx.tabular->columns) wanted.push_back(c.spec);
  } else {
    wanted = spec.columns;
  }
  if (wanted.empty()) {
    for (size_t c = 0; c < ncols; ++c) {
      if (c == label_col || c == weight_col) continue;
      RawColumn r;
      r.index = c;
      r.spec.name = names.empty() ? std::to_string(c) : std::string(trim(names[c]));
      out.push_back(std::move(r));
    }
    return out;
  }
  for (size_t i = 0; i < wanted.size(); ++i) {
    const std::string option = ctx.tabular ? fmt::format("columns[{}] (as in training)", i) : fmt::format("columns[{}]", i);
    auto c = find_column(wanted[i].name, option, names, ncols, path, ctx.prefix);
    if (!c) return c.error();
    if (wanted[i].type != "number" && wanted[i].type != "category" && wanted[i].type != "text") {
      return config_error(fmt::format("{}{}: type \"{}\" is not number, category or text", ctx.prefix, option,
                                      wanted[i].type));
    }
    if (wanted[i].encoding != "one_hot" && (wanted[i].type != "category" || wanted[i].encoding != "id")) {
      return config_error(fmt::format("{}{}: encoding \"{}\" {}", ctx.prefix, option, wanted[i].encoding,
                                      wanted[i].type == "category" ? "is not one_hot or id"
                                                                   : "applies to type category, not " + wanted[i].type));
    }
    if (wanted[i].type == "text" && !ctx.tabular) {
      if (spec.max_length < 1) {
        return config_error(fmt::format("{}{}: a text column needs data's max_length (token ids per example, padded "
                                        "or truncated), e.g. max_length: 64",
                                        ctx.prefix, option));
      }
      if (Status s = check_tokenizer_keys(spec, ctx.prefix); !s) return s.error();
    }
    if (wanted[i].type == "number" && !wanted[i].fill.empty() && wanted[i].fill != "mean" &&
        wanted[i].fill != "median") {
      float v = 0;
      if (!parse_number(wanted[i].fill, v)) {
        return config_error(fmt::format("{}{}: fill \"{}\" of number column {} is not mean, median or a number",
                                        ctx.prefix, option, wanted[i].fill, column_label(names, *c)));
      }
    }
    if (wanted[i].max_categories && wanted[i].type != "category") {
      return config_error(fmt::format("{}{}: max_categories applies to type category, not {}", ctx.prefix, option,
                                      wanted[i].type));
    }
    RawColumn r;
    r.index = *c;
    r.spec = wanted[i];
    out.push_back(std::move(r));
  }
  return out;
}

Result<RawCsv> read_csv(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.path.empty()) return config_error(ctx.prefix + "format csv needs a path");
  if (spec.delimiter.size() != 1 || spec.delimiter == "\"" || spec.delimiter == "\n" || spec.delimiter == "\r") {
    return config_error(fmt::format("{}delimiter must be one character other than a quote or line end, got \"{}\"",
                                    ctx.prefix, spec.delimiter));
  }
  RawCsv raw;
  raw.path = resolve_source_path(spec.path, ctx.base_dir);
  const std::string& path = raw.path;
  // A plain file is mapped and read once, front to back, its pages dropped
  // behind the reader: the file is never held whole. A .gz file is read whole.
  auto bytes = MappedText::open(path);
  if (!bytes) return bytes.error();
  std::string_view text = bytes->text();
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  CsvReader reader(text, spec.delimiter[0], path);

  std::vector<std::string>& names = raw.names;
  std::vector<std::string> fields;
  auto got = reader.next(fields);
  if (!got) return got.error();
  if (!*got) return data_error(path + ": no data rows (the file is empty)");
  const size_t ncols = fields.size();
  const bool have_first_row = !spec.header;  // without a header, `fields` already holds row 1
  if (spec.header) names = fields;
  const std::string width_from = spec.header ? "the header has" : "the first row has";

  const std::string label_key = ctx.tabular ? ctx.tabular->label_column : spec.label_column;
  if (label_key.empty()) {
    if (!ctx.without_labels) raw.label_col = ncols - 1;
  } else {
    auto c = find_column(label_key, "label_column", names, ncols, path, ctx.prefix);
    if (c) raw.label_col = *c;
    else if (!ctx.without_labels || c.error().message.find("is not a column") == std::string::npos) return c.error();
  }
  if (!spec.weight.empty() && !ctx.without_labels) {
    auto c = find_column(spec.weight, "weight", names, ncols, path, ctx.prefix);
    if (!c) return c.error();
    if (*c == raw.label_col) {
      return config_error(fmt::format("{}weight: column {} is the label column", ctx.prefix, column_label(names, *c)));
    }
    raw.weight_col = *c;
  }
  auto planned = plan_columns(spec, ctx, names, ncols, raw.label_col, raw.weight_col, path);
  if (!planned) return planned.error();
  raw.columns = std::move(*planned);
  if (raw.columns.empty()) {
    return config_error(fmt::format("{}{} has no feature columns besides the label", ctx.prefix, path));
  }

  auto take_row = [&]() -> Status {
    if (fields.size() != ncols) {
      return data_error(fmt::format("{}:{}: row has {} fields but {} {}", path, reader.record_line(), fields.size(),
                                    width_from, ncols));
    }
    for (RawColumn& col : raw.columns) {
      const std::string& field = fields[col.index];
      const bool category = col.spec.type == "category";
      if (col.spec.type == "text") {
        if (is_na(field, spec.na_values)) {
          col.texts.push_back(col.spec.fill);
          continue;
        }
        std::vector<uint32_t> code_points;
        Utf8Problem problem;
        if (!decode_utf8(reinterpret_cast<const uint8_t*>(field.data()), field.size(), code_points, &problem)) {
          return data_error(fmt::format("{}:{}:{}: invalid UTF-8 at byte {} of the field (column {}): {}; text "
                                        "columns hold UTF-8 text",
                                        path, reader.field_line(col.index), col.index + 1, problem.offset,
                                        column_label(names, col.index), problem.reason));
        }
        col.texts.push_back(field);
        continue;
      }
      if (is_na(field, spec.na_values)) {
        if (category) {
          col.seen.push_back(-1);
          continue;
        }
        if (col.spec.fill.empty()) {
          return data_error(fmt::format("{}:{}:{}: missing value \"{}\" in number column {}; give the column a fill, "
                                        "e.g. columns: [{{name: {}, fill: mean}}] (or median, or a number)",
                                        path, reader.field_line(col.index), col.index + 1, field,
                                        column_label(names, col.index), names.empty() ? std::to_string(col.index)
                                                                                      : std::string(trim(names[col.index]))));
        }
        col.numbers.push_back(std::nanf(""));
        continue;
      }
      if (category) {
        std::string value(trim(field));
        auto [it, added] = col.lookup.emplace(value, static_cast<int32_t>(col.values.size()));
        if (added) {
          col.values.push_back(std::move(value));
          col.counts.push_back(0);
        }
        ++col.counts[static_cast<size_t>(it->second)];
        col.seen.push_back(it->second);
        continue;
      }
      float v = 0;
      if (!parse_number(field, v)) {
        const std::string what = names.empty() ? "" : " (column " + column_label(names, col.index) + ")";
        return data_error(fmt::format("{}:{}:{}: cannot parse \"{}\" as a number{}; if the column holds names, give "
                                      "it type category in columns",
                                      path, reader.field_line(col.index), col.index + 1, field, what));
      }
      col.numbers.push_back(v);
    }
    if (raw.label_col) {
      raw.labels.emplace_back(trim(fields[*raw.label_col]));
      raw.label_lines.push_back(reader.field_line(*raw.label_col));
    }
    if (raw.weight_col) {
      float w = 0;
      if (!parse_number(fields[*raw.weight_col], w)) {
        return data_error(fmt::format("{}:{}:{}: cannot parse \"{}\" as a number (column {})", path,
                                      reader.field_line(*raw.weight_col), *raw.weight_col + 1, fields[*raw.weight_col],
                                      column_label(names, *raw.weight_col)));
      }
      if (!std::isfinite(w) || w < 0.0f) {
        return data_error(fmt::format("{}:{}:{}: weight \"{}\" (column {}) must be finite and >= 0", path,
                                      reader.field_line(*raw.weight_col), *raw.weight_col + 1, fields[*raw.weight_col],
                                      column_label(names, *raw.weight_col)));
      }
      raw.weights.push_back(w);
    }
    raw.row_lines.push_back(reader.record_line());
    if (reader.field_line(ncols - 1) != reader.record_line()) {
      std::vector<int64_t>& lines = raw.spanning_rows[raw.rows];
      for (size_t c = 0; c < ncols; ++c) lines.push_back(reader.field_line(c));
    }
    ++raw.rows;
    return {};
  };
  if (have_first_row) {
    if (Status s = take_row(); !s) return s.error();
  }
  for (;;) {
    got = reader.next(fields);
    if (!got) return got.error();
    if (!*got) break;
    if (Status s = take_row(); !s) return s.error();
    bytes->release_before(text, reader.position());
  }
  if (raw.rows == 0) return data_error(path + ": no data rows (only a header)");
  return raw;
}

// What the label column holds: class names (sorted, or spec.classes), or
// numbers (an empty list).
Result<std::vector<std::string>> label_classes(const RawCsv& raw, const DataSourceSpec& spec) {
  if (!spec.classes.empty()) return spec.classes;
  const std::string column = column_label(raw.names, *raw.label_col);
  std::optional<size_t> number, name;  // the first row of each kind
  for (size_t r = 0; r < raw.labels.size() && !(number && name); ++r) {
    float v = 0;
    if (is_na(raw.labels[r], spec.na_values)) continue;  // reported when the labels are read
    if (parse_number(raw.labels[r], v)) {
      if (!number) number = r;
    } else if (!name) {
      name = r;
    }
  }
  if (!name) return std::vector<std::string>{};
  if (number) {
    return data_error(fmt::format(
        "{}: the label column {} holds numbers (\"{}\" at line {}) and names (\"{}\" at line {}); give classes: [...] "
        "to read every label as a class name, or correct the file",
        raw.path, column, raw.labels[*number], raw.label_lines[*number], raw.labels[*name], raw.label_lines[*name]));
  }
  std::vector<std::string> classes;
  for (const std::string& label : raw.labels) {
    if (!is_na(label, spec.na_values)) classes.push_back(label);
  }
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  return classes;
}

// The tokens of a text field (valid UTF-8).
std::vector<std::string> field_tokens(const TextTokenizer& tokenizer, const std::string& text) {
  std::vector<uint32_t> code_points;
  Utf8Problem problem;
  decode_utf8(reinterpret_cast<const uint8_t*>(text.data()), text.size(), code_points, &problem);
  return tokenizer.tokens(text, code_points);
}

// Fits raw's columns: what load_csv_source does without a fitted preprocessing.
Result<TabularPreprocessing> fit(const RawCsv& raw, const DataSourceSpec& spec, const SourceContext& ctx) {
  TabularPreprocessing p;
  p.file = raw.path;
  p.label_column = spec.label_column;
  std::optional<TextTokenizer> tokenizer;  // of the text columns: data's tokenizer keys
  for (const RawColumn& r : raw.columns) {
    TabularColumn c;
    c.spec = r.spec;
    c.spec.where.clear();
    if (c.text()) {
      if (!tokenizer) {
        auto t = load_text_tokenizer(spec, ctx);
        if (!t) return t.error();
        tokenizer = *t;
      }
      std::vector<std::vector<std::string>> tokens;
      if (tokenizer->kind != Tokenizer::kSentencePiece) {
        for (const std::string& text : r.texts) tokens.push_back(field_tokens(*tokenizer, text));
      }
      fit_text_column(c, tokens, spec, *tokenizer);
      if (c.tokens->size() > int64_t{1} << 24) {  // ids travel as float32 until the pipeline makes them int32
        return data_error(fmt::format("{}{}: the text column {} has a vocabulary of {} ids, more than csv features "
                                      "hold exactly (2^24); set max_tokens",
                                      ctx.prefix, raw.path, c.spec.name, c.tokens->size()));
      }
    } else if (c.category()) {
      std::vector<std::pair<std::string, int64_t>> counts;
      for (size_t k = 0; k < r.values.size(); ++k) counts.emplace_back(r.values[k], r.counts[k]);
      fit_category_column(c, counts);
    } else if (Status s = fit_number_column(c, r.numbers, ctx.prefix); !s) {
      return s.error();
    }
    p.columns.push_back(std::move(c));
  }
  if (raw.label_col) {
    auto classes = label_classes(raw, spec);
    if (!classes) return classes.error();
    p.classes = std::move(*classes);
  }
  return p;
}

}  // namespace

Result<TabularPreprocessing> fit_csv_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  SourceContext own = ctx;
  own.tabular = nullptr;
  auto raw = read_csv(spec, own);
  if (!raw) return raw.error();
  return fit(*raw, spec, own);
}

Result<SourcePtr> load_csv_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  auto read = read_csv(spec, ctx);
  if (!read) return read.error();
  RawCsv& raw = *read;
  const std::string& path = raw.path;
  TabularPreprocessing own;
  if (!ctx.tabular) {
    auto fitted = fit(raw, spec, ctx);
    if (!fitted) return fitted.error();
    own = std::move(*fitted);
  }
  const TabularPreprocessing& pre = ctx.tabular ? *ctx.tabular : own;
  const int64_t rows = raw.rows;

  // The model input of each column: its `input`, one of ctx.inputs for a
  // model of several inputs; for a model of one, every column.
  const std::vector<std::string> inputs = ctx.inputs.empty() ? std::vector<std::string>{""} : ctx.inputs;
  std::vector<size_t> input_of(pre.columns.size(), 0);
  for (size_t k = 0; k < pre.columns.size(); ++k) {
    const std::string& in = pre.columns[k].spec.input;
    if (ctx.inputs.empty()) {
      if (!in.empty()) {
        return config_error(fmt::format("{}columns[{}] ({}): input \"{}\" applies to a model of several inputs "
                                        "(model.inputs); this model has one: remove input",
                                        ctx.prefix, k, pre.columns[k].spec.name, in));
      }
      continue;
    }
    const auto it = std::find(inputs.begin(), inputs.end(), in);
    if (it == inputs.end()) {
      return config_error(fmt::format("{}columns[{}] ({}): {}; give each column the model input it feeds: input: "
                                      "one of {}",
                                      ctx.prefix, k, pre.columns[k].spec.name,
                                      in.empty() ? "no input, but the model has several inputs"
                                                 : "input \"" + in + "\" is not one of model.inputs",
                                      fmt::join(inputs, ", ")));
    }
    input_of[k] = static_cast<size_t>(it - inputs.begin());
  }
  std::vector<int64_t> widths(inputs.size(), 0);
  for (size_t k = 0; k < pre.columns.size(); ++k) widths[input_of[k]] += pre.columns[k].width();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (widths[i] == 0) {
      return config_error(fmt::format("{}no column feeds model input \"{}\"; give a column input: {}", ctx.prefix,
                                      inputs[i], inputs[i]));
    }
  }
  const int64_t width = widths[0];

  Shape feature_shape{width};
  if (!spec.feature_shape.empty()) {
    if (inputs.size() > 1) {
      return config_error(fmt::format("{}feature_shape applies to a model of one input; the columns of each of the "
                                      "{} inputs give [features] (shape each model input so)",
                                      ctx.prefix, inputs.size()));
    }
    if (num_elements(spec.feature_shape) != width) {
      const std::string given =
          width == std::ssize(pre.columns)
              ? fmt::format("{} feature columns are selected from {}", width, path)
              : fmt::format("the {} feature columns of {} give {} features (one-hot categories, text)",
                            pre.columns.size(), path, width);
      return config_error(fmt::format("{}feature_shape {} has {} elements but {}", ctx.prefix,
                                      shape_str(spec.feature_shape), num_elements(spec.feature_shape), given));
    }
    feature_shape = spec.feature_shape;
  }

  // Each column as compactly as it is read (numbers filled, category ids,
  // token ids up to each text's length); CsvSource encodes batches from them.
  std::vector<EncodedColumn> encoded(raw.columns.size());
  std::vector<int64_t> offsets(inputs.size(), 0);
  int64_t unknown_tokens = 0;
  for (size_t k = 0; k < raw.columns.size(); ++k) {
    RawColumn& r = raw.columns[k];
    const TabularColumn& c = pre.columns[k];
    EncodedColumn& e = encoded[k];
    e.input = input_of[k];
    e.offset = offsets[input_of[k]];
    offsets[input_of[k]] += c.width();
    if (c.text()) {
      e.kind = EncodedColumn::kText;
      e.length = c.max_length;
      const TextTokenizer& tokenizer = c.tokens->text_tokenizer();
      e.starts.reserve(static_cast<size_t>(rows) + 1);
      e.starts.push_back(0);
      for (int64_t i = 0; i < rows; ++i) {
        std::string& text = r.texts[static_cast<size_t>(i)];
        const std::vector<std::string> tokens = field_tokens(tokenizer, text);
        const size_t n = std::min(tokens.size(), static_cast<size_t>(c.max_length));
        for (size_t t = 0; t < n; ++t) {
          const int32_t id = c.tokens->id(tokens[t]);
          unknown_tokens += id == TokenVocabulary::kUnk ? 1 : 0;
          e.ids.push_back(id);
        }
        e.starts.push_back(static_cast<int64_t>(e.ids.size()));
        std::string().swap(text);  // the text is not needed again
      }
    } else if (c.category()) {
      e.kind = c.category_id() ? EncodedColumn::kId : EncodedColumn::kOneHot;
      std::vector<int32_t> ids(r.values.size());  // seen value -> vocabulary id
      for (size_t v = 0; v < r.values.size(); ++v) ids[v] = c.id(r.values[v]);
      e.ids.resize(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) {
        const int32_t seen = r.seen[static_cast<size_t>(i)];
        e.ids[static_cast<size_t>(i)] = seen < 0 ? c.fill_id : ids[static_cast<size_t>(seen)];
      }
    } else {
      e.kind = EncodedColumn::kNumber;
      e.numbers = std::move(r.numbers);
      for (float& v : e.numbers) v = std::isnan(v) ? c.fill_number.value_or(0.0f) : v;
    }
  }

  // The labels: numbers as written, or the ids of class names.
  std::vector<float> labels(static_cast<size_t>(rows), 0.0f);
  if (raw.label_col && !ctx.without_labels) {
    const std::string column = column_label(raw.names, *raw.label_col);
    std::vector<std::string> shown(pre.classes.begin(), pre.classes.begin() + std::min<std::ptrdiff_t>(
                                                                                   10, std::ssize(pre.classes)));
    if (pre.classes.size() > shown.size()) shown.push_back("...");
    std::unordered_map<std::string, int32_t> class_ids;
    for (size_t k = 0; k < pre.classes.size(); ++k) class_ids.emplace(pre.classes[k], static_cast<int32_t>(k));
    for (int64_t i = 0; i < rows; ++i) {
      const std::string& text = raw.labels[static_cast<size_t>(i)];
      const int64_t line = raw.label_lines[static_cast<size_t>(i)];
      if (is_na(text, spec.na_values)) {
        return data_error(fmt::format("{}:{}:{}: missing label \"{}\" (column {})", path, line, *raw.label_col + 1,
                                      text, column));
      }
      if (pre.classes.empty()) {
        if (!parse_number(text, labels[static_cast<size_t>(i)])) {
          return data_error(fmt::format("{}:{}:{}: cannot parse \"{}\" as a number (column {})", path, line,
                                        *raw.label_col + 1, text, column));
        }
        continue;
      }
      const auto it = class_ids.find(text);
      if (it == class_ids.end()) {
        return data_error(fmt::format("{}:{}:{}: label \"{}\" (column {}) is not one of the {} classes{}: {}", path,
                                      line, *raw.label_col + 1, text, column, pre.classes.size(),
                                      spec.classes.empty() ? " of data.train" : " in classes",
                                      fmt::join(shown, ", ")));
      }
      labels[static_cast<size_t>(i)] = static_cast<float>(it->second);
    }
  }

  std::vector<Shape> shapes{feature_shape};
  for (size_t i = 1; i < inputs.size(); ++i) shapes.push_back(Shape{widths[i]});
  // Data errors found later (a label out of the model's range, a feature that
  // is not a token id) name the line and the field.
  auto located = std::make_shared<CsvPlaces>();
  located->path = path;
  located->row_lines = std::move(raw.row_lines);
  located->label_lines = std::move(raw.label_lines);
  located->spanning_rows = std::move(raw.spanning_rows);
  if (raw.label_col) located->label = CsvPlaces::Field{*raw.label_col, column_label(raw.names, *raw.label_col)};
  located->feature_ends.resize(inputs.size());
  located->features.resize(inputs.size());
  std::vector<int64_t> ends(inputs.size(), 0);
  for (size_t k = 0; k < raw.columns.size(); ++k) {
    const size_t in = input_of[k];
    ends[in] += pre.columns[k].width();
    located->feature_ends[in].push_back(ends[in]);
    located->features[in].push_back({raw.columns[k].index, column_label(raw.names, raw.columns[k].index)});
  }
  ExampleLocator locate = [located = std::shared_ptr<const CsvPlaces>(std::move(located))](
                              int64_t id, const ExampleValue& value) { return located->locate(id, value); };
  std::string summary = pre.worth_saving() ? pre.describe() : "";
  if (unknown_tokens > 0) summary += fmt::format("; {} tokens read as <unk>", unknown_tokens);
  return SourcePtr(std::make_shared<CsvSource>(std::move(encoded), std::move(shapes), std::move(labels),
                                               std::move(raw.weights), path, pre.classes, std::move(summary),
                                               std::move(locate)));
}

}  // namespace dtrain
