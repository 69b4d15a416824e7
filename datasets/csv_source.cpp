// The csv source: CSV (raw or gzip, a UTF-8 BOM skipped) with an optional
// header, a label column of numbers or class names, feature columns chosen by
// name or 0-based index, each a number (missing values filled or refused), a
// category (one-hot over the vocabulary of data.train, or its id) or text
// (token ids, padded or truncated), an optional reshape of each row's
// features, and for a model of several inputs the columns of each input.
// Here: fitting what the columns learn from one pass over data.train
// (aggregates only: sums, counts, vocabularies; values only for a median),
// and the source over a second pass (csv_scan.hpp) that keeps the columns
// compact or, read as training goes, where each row starts
// (csv_examples.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "datasets/csv_examples.hpp"
#include "datasets/csv_scan.hpp"
#include "datasets/source.hpp"
#include "datasets/stream_choice.hpp"
#include "datasets/text_folder_source.hpp"
#include "datasets/utf8.hpp"

namespace dtrain {

namespace {

using namespace csv_internal;

// What fitting needs of one feature column, gathered row by row.
struct ColumnStats {
  NumberColumnStats number;
  // category: each distinct value (trimmed) with its count, in first-seen order.
  std::unordered_map<std::string, size_t> lookup;
  std::vector<std::pair<std::string, int64_t>> counts;
  std::map<std::string, int64_t> tokens;  // text (not sentencepiece): each token's count
};

// What the label column holds: the first number and the first name (value,
// line), and every distinct name.
struct LabelStats {
  std::optional<std::pair<std::string, int64_t>> number, name;
  std::unordered_set<std::string> names;
};

// The label's class names: spec.classes, else the sorted names, or none
// (numbers).
Result<std::vector<std::string>> label_classes(const LabelStats& seen, const DataSourceSpec& spec,
                                               const CsvScan& scan) {
  if (!spec.classes.empty()) return spec.classes;
  if (!seen.name) return std::vector<std::string>{};
  if (seen.number) {
    return data_error(fmt::format(
        "{}: the label column {} holds numbers (\"{}\" at line {}) and names (\"{}\" at line {}); give classes: [...] "
        "to read every label as a class name, or correct the file",
        scan.path, column_label(scan.names, *scan.label_col), seen.number->first, seen.number->second,
        seen.name->first, seen.name->second));
  }
  std::vector<std::string> classes(seen.names.begin(), seen.names.end());
  std::sort(classes.begin(), classes.end());
  return classes;
}

// The tokens of a text field (valid UTF-8).
std::vector<std::string> field_tokens(const TextTokenizer& tokenizer, const std::string& text) {
  std::vector<uint32_t> code_points;
  Utf8Problem problem;
  decode_utf8(reinterpret_cast<const uint8_t*>(text.data()), text.size(), code_points, &problem);
  return tokenizer.tokens(text, code_points);
}

}  // namespace

Result<TabularPreprocessing> fit_csv_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  SourceContext own = ctx;
  own.tabular = nullptr;
  auto opened = CsvScan::open(spec, own);
  if (!opened) return opened.error();
  CsvScan& scan = **opened;
  std::optional<TextTokenizer> tokenizer;  // of the text columns: data's tokenizer keys
  for (const PlannedColumn& r : scan.columns) {
    if (r.spec.type == "text" && !tokenizer) {
      auto t = load_text_tokenizer(spec, own);
      if (!t) return t.error();
      tokenizer = *t;
    }
  }
  std::vector<ColumnStats> stats(scan.columns.size());
  for (size_t k = 0; k < scan.columns.size(); ++k) stats[k].number.keep = scan.columns[k].spec.fill == "median";
  LabelStats seen;
  const bool count_tokens = tokenizer && tokenizer->kind != Tokenizer::kSentencePiece;
  Status read = scan.for_each_row([&](const CsvRow& row) -> Status {
    for (size_t k = 0; k < scan.columns.size(); ++k) {
      const PlannedColumn& col = scan.columns[k];
      const std::string& field = row.fields[col.index];
      ColumnStats& st = stats[k];
      if (col.spec.type == "number") {
        if (!std::isnan(row.numbers[k])) st.number.add(row.numbers[k]);
      } else if (is_na(field, spec.na_values)) {
        if (col.spec.type == "text" && count_tokens) {
          for (const std::string& t : field_tokens(*tokenizer, col.spec.fill)) ++st.tokens[t];
        }
      } else if (col.spec.type == "category") {
        std::string value(trim(field));
        auto [it, added] = st.lookup.emplace(value, st.counts.size());
        if (added) st.counts.emplace_back(std::move(value), 0);
        ++st.counts[it->second].second;
      } else if (count_tokens) {
        for (const std::string& t : field_tokens(*tokenizer, field)) ++st.tokens[t];
      }
    }
    if (scan.label_col && spec.classes.empty()) {
      const std::string_view label = trim(row.fields[*scan.label_col]);
      float v = 0;
      if (is_na(label, spec.na_values)) return {};  // reported when the labels are read
      if (parse_number(label, v)) {
        if (!seen.number) seen.number.emplace(label, row.reader.field_line(*scan.label_col));
      } else {
        if (!seen.name) seen.name.emplace(label, row.reader.field_line(*scan.label_col));
        seen.names.emplace(label);
      }
    }
    return {};
  });
  if (!read) return read.error();

  TabularPreprocessing p;
  p.file = scan.path;
  p.label_column = spec.label_column;
  for (size_t k = 0; k < scan.columns.size(); ++k) {
    TabularColumn c;
    c.spec = scan.columns[k].spec;
    c.spec.where.clear();
    if (c.text()) {
      fit_text_column(c, stats[k].tokens, spec, *tokenizer);
      if (c.tokens->size() > int64_t{1} << 24) {  // ids travel as float32 until the pipeline makes them int32
        return data_error(fmt::format("{}{}: the text column {} has a vocabulary of {} ids, more than csv features "
                                      "hold exactly (2^24); set max_tokens",
                                      own.prefix, scan.path, c.spec.name, c.tokens->size()));
      }
    } else if (c.category()) {
      fit_category_column(c, stats[k].counts);
    } else if (Status s = fit_number_column(c, stats[k].number, own.prefix); !s) {
      return s.error();
    }
    p.columns.push_back(std::move(c));
  }
  if (scan.label_col) {
    auto classes = label_classes(seen, spec, scan);
    if (!classes) return classes.error();
    p.classes = std::move(*classes);
  }
  return p;
}

Result<SourcePtr> load_csv_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  const bool gzip = is_gzip_path(spec.path);
  if (gzip && spec.stream.value_or(false)) {
    return config_error(fmt::format("{}stream: true reads the rows of {} as training goes, which a gzip file does "
                                    "not allow; decompress it (gunzip), or use stream: false",
                                    ctx.prefix, resolve_source_path(spec.path, ctx.base_dir)));
  }
  TabularPtr pre = ctx.tabular;
  if (!pre) {
    auto fitted = fit_csv_source(spec, ctx);
    if (!fitted) return fitted.error();
    pre = std::make_shared<const TabularPreprocessing>(std::move(*fitted));
  }
  SourceContext fitted_ctx = ctx;
  fitted_ctx.tabular = pre;
  auto opened = CsvScan::open(spec, fitted_ctx);
  if (!opened) return opened.error();
  CsvScan& scan = **opened;
  const std::string& path = scan.path;

  // The model input of each column: its `input`, one of ctx.inputs for a
  // model of several inputs; for a model of one, every column.
  const std::vector<std::string> inputs = ctx.inputs.empty() ? std::vector<std::string>{""} : ctx.inputs;
  std::vector<size_t> input_of(pre->columns.size(), 0);
  for (size_t k = 0; k < pre->columns.size(); ++k) {
    const std::string& in = pre->columns[k].spec.input;
    if (ctx.inputs.empty()) {
      if (!in.empty()) {
        return config_error(fmt::format("{}columns[{}] ({}): input \"{}\" applies to a model of several inputs "
                                        "(model.inputs); this model has one: remove input",
                                        ctx.prefix, k, pre->columns[k].spec.name, in));
      }
      continue;
    }
    const auto it = std::find(inputs.begin(), inputs.end(), in);
    if (it == inputs.end()) {
      return config_error(fmt::format("{}columns[{}] ({}): {}; give each column the model input it feeds: input: "
                                      "one of {}",
                                      ctx.prefix, k, pre->columns[k].spec.name,
                                      in.empty() ? "no input, but the model has several inputs"
                                                 : "input \"" + in + "\" is not one of model.inputs",
                                      fmt::join(inputs, ", ")));
    }
    input_of[k] = static_cast<size_t>(it - inputs.begin());
  }
  std::vector<int64_t> widths(inputs.size(), 0);
  for (size_t k = 0; k < pre->columns.size(); ++k) widths[input_of[k]] += pre->columns[k].width();
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
          width == std::ssize(pre->columns)
              ? fmt::format("{} feature columns are selected from {}", width, path)
              : fmt::format("the {} feature columns of {} give {} features (one-hot categories, text)",
                            pre->columns.size(), path, width);
      return config_error(fmt::format("{}feature_shape {} has {} elements but {}", ctx.prefix,
                                      shape_str(spec.feature_shape), num_elements(spec.feature_shape), given));
    }
    feature_shape = spec.feature_shape;
  }

  // Held (the columns compact) or read as training goes (where each row
  // starts): the same examples either way, so the file's size may decide.
  const bool held = gzip || !reads_as_training_goes(spec, scan.file_bytes);

  CsvSource::Parts parts;
  parts.preprocessing = pre;
  parts.na_values = spec.na_values;
  parts.classes = pre->classes;
  std::vector<EncodedColumn>& encoded = parts.columns;
  encoded.resize(pre->columns.size());
  std::vector<int64_t> offsets(inputs.size(), 0);
  for (size_t k = 0; k < pre->columns.size(); ++k) {
    const TabularColumn& c = pre->columns[k];
    EncodedColumn& e = encoded[k];
    e.column = &c;
    e.field = scan.columns[k].index;
    e.name = column_label(scan.names, e.field);
    e.input = input_of[k];
    e.offset = offsets[input_of[k]];
    offsets[input_of[k]] += c.width();
    e.kind = c.text()          ? EncodedColumn::kText
             : c.category_id() ? EncodedColumn::kId
             : c.category()    ? EncodedColumn::kOneHot
                               : EncodedColumn::kNumber;
  }

  // Data errors found later (a label out of the model's range, a feature that
  // is not a token id) name the line and the field.
  auto places = std::make_shared<CsvPlaces>();
  places->path = path;
  if (scan.label_col) places->label = CsvPlaces::Field{*scan.label_col, column_label(scan.names, *scan.label_col)};
  places->feature_ends.resize(inputs.size());
  places->features.resize(inputs.size());
  std::vector<int64_t> ends(inputs.size(), 0);
  for (size_t k = 0; k < encoded.size(); ++k) {
    const size_t in = input_of[k];
    ends[in] += pre->columns[k].width();
    places->feature_ends[in].push_back(ends[in]);
    places->features[in].push_back({encoded[k].field, encoded[k].name});
  }

  // The labels: numbers as written, or the ids of class names.
  const bool read_labels = scan.label_col && !ctx.without_labels;
  const std::string label_name = scan.label_col ? column_label(scan.names, *scan.label_col) : "";
  std::vector<std::string> shown(pre->classes.begin(),
                                 pre->classes.begin() + std::min<std::ptrdiff_t>(10, std::ssize(pre->classes)));
  if (pre->classes.size() > shown.size()) shown.push_back("...");
  std::unordered_map<std::string, int32_t> class_ids;
  for (size_t k = 0; k < pre->classes.size(); ++k) class_ids.emplace(pre->classes[k], static_cast<int32_t>(k));

  int64_t unknown_tokens = 0;
  std::vector<int64_t> starts;  // read as training goes: where each row starts, then the end of the last
  int64_t last_end = 0;
  Status read = scan.for_each_row([&](const CsvRow& row) -> Status {
    if (held) {
      for (size_t k = 0; k < encoded.size(); ++k) {
        encoded[k].append(row.fields[encoded[k].field], row.numbers[k], spec.na_values, unknown_tokens);
      }
    } else {
      starts.push_back(row.begin);
    }
    last_end = row.end;
    float label = 0.0f;
    if (read_labels) {
      const size_t lc = *scan.label_col;
      const std::string text(trim(row.fields[lc]));
      const int64_t line = row.reader.field_line(lc);
      if (is_na(text, spec.na_values)) {
        return data_error(fmt::format("{}:{}:{}: missing label \"{}\" (column {})", path, line, lc + 1, text,
                                      label_name));
      }
      if (pre->classes.empty()) {
        if (!parse_number(text, label)) {
          return data_error(fmt::format("{}:{}:{}: cannot parse \"{}\" as a number (column {})", path, line, lc + 1,
                                        text, label_name));
        }
      } else {
        const auto it = class_ids.find(text);
        if (it == class_ids.end()) {
          return data_error(fmt::format("{}:{}:{}: label \"{}\" (column {}) is not one of the {} classes{}: {}", path,
                                        line, lc + 1, text, label_name, pre->classes.size(),
                                        spec.classes.empty() ? " of data.train" : " in classes",
                                        fmt::join(shown, ", ")));
        }
        label = static_cast<float>(it->second);
      }
    }
    parts.labels.push_back(label);
    if (scan.weight_col) parts.weights.push_back(row.weight);
    places->rows.add(row.reader.record_line());
    if (row.reader.field_line(scan.width - 1) != row.reader.record_line()) {
      std::vector<int64_t>& lines = places->spanning_rows[row.index];
      for (size_t c = 0; c < scan.width; ++c) lines.push_back(row.reader.field_line(c));
    }
    return {};
  });
  if (!read) return read.error();
  if (!held) {
    starts.push_back(last_end);
    auto rows = CsvRowFile::open(path, spec.delimiter[0], scan.width, std::move(starts));
    if (!rows) return rows.error();
    parts.rows = std::move(*rows);
  }

  parts.shapes = {feature_shape};
  for (size_t i = 1; i < inputs.size(); ++i) parts.shapes.push_back(Shape{widths[i]});
  parts.places = std::move(places);
  parts.summary = pre->worth_saving() ? pre->describe() : "";
  if (unknown_tokens > 0) parts.summary += fmt::format("; {} tokens read as <unk>", unknown_tokens);
  return SourcePtr(std::make_shared<CsvSource>(std::move(parts)));
}

}  // namespace dtrain
