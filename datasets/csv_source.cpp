// The csv source: numeric CSV (raw or gzip) with an optional header, a label
// column and feature columns chosen by name or 0-based index, and an optional
// reshape of each row's features.
#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <cmath>
#include <string_view>

#include "datasets/csv_reader.hpp"
#include "datasets/idx_file.hpp"
#include "datasets/source.hpp"

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

}  // namespace

Result<SourcePtr> load_csv_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.path.empty()) return config_error(ctx.prefix + "format csv needs a path");
  if (spec.delimiter.size() != 1 || spec.delimiter == "\"" || spec.delimiter == "\n" || spec.delimiter == "\r") {
    return config_error(fmt::format("{}delimiter must be one character other than a quote or line end, got \"{}\"",
                                    ctx.prefix, spec.delimiter));
  }
  const std::string path = resolve_source_path(spec.path, ctx.base_dir);
  auto bytes = read_data_file(path);
  if (!bytes) return bytes.error();
  const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  CsvReader reader(text, spec.delimiter[0], path);

  std::vector<std::string> names, fields;
  auto got = reader.next(fields);
  if (!got) return got.error();
  if (!*got) return data_error(path + ": no data rows (the file is empty)");
  const size_t ncols = fields.size();
  const bool have_first_row = !spec.header;  // without a header, `fields` already holds row 1
  if (spec.header) names = fields;
  const std::string width_from = spec.header ? "the header has" : "the first row has";

  size_t label_col = ncols - 1;
  if (!spec.label_column.empty()) {
    auto c = find_column(spec.label_column, "label_column", names, ncols, path, ctx.prefix);
    if (!c) return c.error();
    label_col = *c;
  }
  std::optional<size_t> weight_col;  // data.*.weight
  if (!spec.weight.empty()) {
    auto c = find_column(spec.weight, "weight", names, ncols, path, ctx.prefix);
    if (!c) return c.error();
    if (*c == label_col) {
      return config_error(fmt::format("{}weight: column {} is the label column", ctx.prefix, column_label(names, *c)));
    }
    weight_col = *c;
  }
  std::vector<size_t> feature_cols;
  if (spec.columns.empty()) {
    for (size_t c = 0; c < ncols; ++c) {
      if (c != label_col && c != weight_col) feature_cols.push_back(c);
    }
  } else {
    for (size_t i = 0; i < spec.columns.size(); ++i) {
      auto c = find_column(spec.columns[i], fmt::format("columns[{}]", i), names, ncols, path, ctx.prefix);
      if (!c) return c.error();
      feature_cols.push_back(*c);
    }
  }
  if (feature_cols.empty()) return config_error(fmt::format("{}{} has no feature columns besides the label", ctx.prefix, path));
  Shape feature_shape{static_cast<int64_t>(feature_cols.size())};
  if (!spec.feature_shape.empty()) {
    if (num_elements(spec.feature_shape) != feature_shape[0]) {
      return config_error(fmt::format("{}feature_shape {} has {} elements but {} feature columns are selected from {}",
                                      ctx.prefix, shape_str(spec.feature_shape), num_elements(spec.feature_shape),
                                      feature_cols.size(), path));
    }
    feature_shape = spec.feature_shape;
  }

  std::vector<float> features, labels, weights;
  int64_t rows = 0;
  auto take_row = [&]() -> Status {
    if (fields.size() != ncols) {
      return data_error(fmt::format("{}:{}: row has {} fields but {} {}", path, reader.record_line(), fields.size(),
                                    width_from, ncols));
    }
    auto parse = [&](size_t c, std::vector<float>& into) -> Status {
      float v = 0;
      if (!parse_number(fields[c], v)) {
        const std::string what = names.empty() ? "" : " (column " + column_label(names, c) + ")";
        return data_error(fmt::format("{}:{}:{}: cannot parse \"{}\" as a number{}", path, reader.field_line(c), c + 1,
                                      fields[c], what));
      }
      into.push_back(v);
      return {};
    };
    for (size_t c : feature_cols) {
      if (Status s = parse(c, features); !s) return s;
    }
    if (Status s = parse(label_col, labels); !s) return s;
    if (weight_col) {
      if (Status s = parse(*weight_col, weights); !s) return s;
      if (!std::isfinite(weights.back()) || weights.back() < 0.0f) {
        return data_error(fmt::format("{}:{}:{}: weight \"{}\" (column {}) must be finite and >= 0", path,
                                      reader.field_line(*weight_col), *weight_col + 1, fields[*weight_col],
                                      column_label(names, *weight_col)));
      }
    }
    ++rows;
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
  }
  if (rows == 0) return data_error(path + ": no data rows (only a header)");

  Shape fshape{rows};
  fshape.insert(fshape.end(), feature_shape.begin(), feature_shape.end());
  std::vector<Tensor> all_features;
  all_features.push_back(Tensor::from(fshape, features));
  std::vector<Tensor> all_labels;
  all_labels.push_back(Tensor::from(Shape{rows}, labels));
  return make_tensor_source(std::move(all_features), std::move(all_labels), path, {0},
                            weight_col ? Tensor::from(Shape{rows}, weights) : Tensor());
}

}  // namespace dtrain
