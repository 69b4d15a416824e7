// The csv source: CSV (raw or gzip, a UTF-8 BOM skipped) with an optional
// header, a label column of numbers or class names, feature columns chosen by
// name or 0-based index, each a number (missing values filled or refused), a
// category (one-hot over the vocabulary of data.train, or its id) or text
// (token ids, padded or truncated), an optional reshape of each row's
// features, and for a model of several inputs the columns of each input.
// Here: fitting what the columns learn, and the source over a file read by
// csv_read.cpp (csv_raw.hpp), kept as csv_examples.hpp says.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "datasets/csv_examples.hpp"
#include "datasets/csv_raw.hpp"
#include "datasets/source.hpp"
#include "datasets/text_folder_source.hpp"
#include "datasets/utf8.hpp"

namespace dtrain {

namespace {

using namespace csv_internal;

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
