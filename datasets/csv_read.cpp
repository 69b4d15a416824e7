// The csv source's reading step (datasets/csv_raw.hpp): RFC 4180 records
// through CsvReader, the header, the label, weight and feature columns found,
// every field parsed and checked (numbers, UTF-8 text), categories counted.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "datasets/csv_raw.hpp"
#include "datasets/csv_reader.hpp"
#include "datasets/mapped_text.hpp"
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

}  // namespace dtrain::csv_internal
