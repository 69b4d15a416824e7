// The csv source's pass over a file (datasets/csv_scan.hpp): RFC 4180 records
// through CsvReader, the header, the label, weight and feature columns found,
// every field parsed and checked (numbers, UTF-8 text, the weight).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "datasets/csv_scan.hpp"
#include "datasets/text_folder_source.hpp"
#include "datasets/utf8.hpp"

namespace dtrain::csv_internal {

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
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

// The feature columns of `spec` (or of the fitted preprocessing, which
// names them as data.train's file did), found in this file.
Result<std::vector<PlannedColumn>> plan_columns(const DataSourceSpec& spec, const SourceContext& ctx,
                                            const std::vector<std::string>& names, size_t ncols,
                                            const std::optional<size_t>& label_col,
                                            const std::optional<size_t>& weight_col, const std::string& path) {
  std::vector<PlannedColumn> out;
  std::vector<CsvColumnSpec> wanted;
  if (ctx.tabular) {
    for (const TabularColumn& c : ctx.tabular->columns) wanted.push_back(c.spec);
  } else {
    wanted = spec.columns;
  }
  if (wanted.empty()) {
    for (size_t c = 0; c < ncols; ++c) {
      if (c == label_col || c == weight_col) continue;
      PlannedColumn r;
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
    PlannedColumn r;
    r.index = *c;
    r.spec = wanted[i];
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

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

// What a column is called in messages: "x2" with a header, "3" (1-based field) without.
std::string column_label(const std::vector<std::string>& names, size_t c) {
  return names.empty() ? std::to_string(c + 1) : "\"" + names[c] + "\"";
}

bool is_na(std::string_view field, const std::vector<std::string>& na_values) {
  const std::string_view t = trim(field);
  return std::any_of(na_values.begin(), na_values.end(), [&](const std::string& na) { return t == na; });
}

bool is_gzip_path(const std::string& path) { return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0; }

Result<std::unique_ptr<CsvScan>> CsvScan::open(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.path.empty()) return config_error(ctx.prefix + "format csv needs a path");
  if (spec.delimiter.size() != 1 || spec.delimiter == "\"" || spec.delimiter == "\n" || spec.delimiter == "\r") {
    return config_error(fmt::format("{}delimiter must be one character other than a quote or line end, got \"{}\"",
                                    ctx.prefix, spec.delimiter));
  }
  std::unique_ptr<CsvScan> scan(new CsvScan());
  scan->path = resolve_source_path(spec.path, ctx.base_dir);
  scan->na_values_ = spec.na_values;
  const std::string& path = scan->path;
  // A plain file is mapped and read once, front to back, its pages dropped
  // behind the reader: the file is never held whole. A .gz file is read whole.
  auto bytes = MappedText::open(path);
  if (!bytes) return bytes.error();
  scan->bytes_ = std::move(*bytes);
  std::error_code ec;
  scan->file_bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  std::string_view text = scan->bytes_.text();
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {  // a UTF-8 byte order mark
    text.remove_prefix(3);
    scan->text_start_ = 3;
  }
  scan->text_ = text;
  scan->reader_ = std::make_unique<CsvReader>(text, spec.delimiter[0], path);
  CsvReader& reader = *scan->reader_;

  std::vector<std::string>& names = scan->names;
  std::vector<std::string>& fields = scan->fields_;
  auto got = reader.next(fields);
  if (!got) return got.error();
  if (!*got) return data_error(path + ": no data rows (the file is empty)");
  const size_t ncols = fields.size();
  scan->width = ncols;
  scan->have_first_row_ = !spec.header;
  if (spec.header) names = fields;

  const std::string label_key = ctx.tabular ? ctx.tabular->label_column : spec.label_column;
  if (label_key.empty()) {
    if (!ctx.without_labels) scan->label_col = ncols - 1;
  } else {
    auto c = find_column(label_key, "label_column", names, ncols, path, ctx.prefix);
    if (c) scan->label_col = *c;
    else if (!ctx.without_labels || c.error().message.find("is not a column") == std::string::npos) return c.error();
  }
  if (!spec.weight.empty() && !ctx.without_labels) {
    auto c = find_column(spec.weight, "weight", names, ncols, path, ctx.prefix);
    if (!c) return c.error();
    if (*c == scan->label_col) {
      return config_error(fmt::format("{}weight: column {} is the label column", ctx.prefix, column_label(names, *c)));
    }
    scan->weight_col = *c;
  }
  auto planned = plan_columns(spec, ctx, names, ncols, scan->label_col, scan->weight_col, path);
  if (!planned) return planned.error();
  scan->columns = std::move(*planned);
  if (scan->columns.empty()) {
    return config_error(fmt::format("{}{} has no feature columns besides the label", ctx.prefix, path));
  }
  scan->numbers_.resize(scan->columns.size());
  return scan;
}

Status CsvScan::check_row() {
  const std::vector<std::string>& fields = fields_;
  const CsvReader& reader = *reader_;
  const size_t ncols = width;
  if (fields.size() != ncols) {
    return data_error(fmt::format("{}:{}: row has {} fields but {} {}", path, reader.record_line(), fields.size(),
                                  names.empty() ? "the first row has" : "the header has", ncols));
  }
  for (size_t k = 0; k < columns.size(); ++k) {
    const PlannedColumn& col = columns[k];
    const std::string& field = fields[col.index];
    numbers_[k] = std::nanf("");
    if (col.spec.type == "category") continue;
    const bool na = is_na(field, na_values_);
    if (col.spec.type == "text") {
      if (na) continue;
      std::vector<uint32_t> code_points;
      Utf8Problem problem;
      if (!decode_utf8(reinterpret_cast<const uint8_t*>(field.data()), field.size(), code_points, &problem)) {
        return data_error(fmt::format("{}:{}:{}: invalid UTF-8 at byte {} of the field (column {}): {}; text "
                                      "columns hold UTF-8 text",
                                      path, reader.field_line(col.index), col.index + 1, problem.offset,
                                      column_label(names, col.index), problem.reason));
      }
      continue;
    }
    if (na) {
      if (col.spec.fill.empty()) {
        return data_error(fmt::format("{}:{}:{}: missing value \"{}\" in number column {}; give the column a fill, "
                                      "e.g. columns: [{{name: {}, fill: mean}}] (or median, or a number)",
                                      path, reader.field_line(col.index), col.index + 1, field,
                                      column_label(names, col.index), names.empty() ? std::to_string(col.index)
                                                                                    : std::string(trim(names[col.index]))));
      }
      continue;
    }
    if (!parse_number(field, numbers_[k])) {
      const std::string what = names.empty() ? "" : " (column " + column_label(names, col.index) + ")";
      return data_error(fmt::format("{}:{}:{}: cannot parse \"{}\" as a number{}; if the column holds names, give "
                                    "it type category in columns",
                                    path, reader.field_line(col.index), col.index + 1, field, what));
    }
  }
  weight_ = 1.0f;
  if (weight_col) {
    const size_t w = *weight_col;
    if (!parse_number(fields[w], weight_)) {
      return data_error(fmt::format("{}:{}:{}: cannot parse \"{}\" as a number (column {})", path,
                                    reader.field_line(w), w + 1, fields[w], column_label(names, w)));
    }
    if (!std::isfinite(weight_) || weight_ < 0.0f) {
      return data_error(fmt::format("{}:{}:{}: weight \"{}\" (column {}) must be finite and >= 0", path,
                                    reader.field_line(w), w + 1, fields[w], column_label(names, w)));
    }
  }
  return {};
}

Status CsvScan::for_each_row(const std::function<Status(const CsvRow&)>& row) {
  CsvReader& reader = *reader_;
  int64_t index = 0;
  auto hand_on = [&](int64_t begin) -> Status {
    if (Status s = check_row(); !s) return s;
    const CsvRow r{fields_, numbers_, weight_, index, reader, text_start_ + begin,
                   text_start_ + static_cast<int64_t>(reader.position())};
    if (Status s = row(r); !s) return s;
    ++index;
    return {};
  };
  if (have_first_row_) {
    if (Status s = hand_on(first_begin_); !s) return s;
  }
  for (;;) {
    const auto begin = static_cast<int64_t>(reader.position());
    auto got = reader.next(fields_);
    if (!got) return got.error();
    if (!*got) break;
    if (Status s = hand_on(begin); !s) return s;
    bytes_.release_before(text_, reader.position());
  }
  if (index == 0) return data_error(path + ": no data rows (only a header)");
  return {};
}

}  // namespace dtrain::csv_internal
