// What a csv source learns from data.train and applies to every later read
// of the same columns (evaluation, predict, a resumed run): each feature
// column's type and fill, each category column's vocabulary, each text
// column's token vocabulary, the label's class names. Saved with the model as
// JSON (model_dir/preprocessing.json, and a sentencepiece model beside it) so
// that a model always sees its features encoded as in training.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "datasets/tokenizer.hpp"
#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

struct TabularColumn {
  CsvColumnSpec spec;  // as the job gave it (name, type, fill, max_categories, encoding, input)
  bool category() const { return spec.type == "category"; }
  bool text() const { return spec.type == "text"; }
  // A category column that gives its id (encoding: id), not one-hot features.
  bool category_id() const { return category() && spec.encoding == "id"; }
  // number: what a missing value becomes (spec.fill resolved on data.train:
  // its mean or median, or the number given); nullopt: a missing value is an error.
  std::optional<float> fill_number;
  // category: the vocabulary, most frequent first (ties by value): value
  // categories[k] has id k + 1; id 0 is the unknown category.
  std::vector<std::string> categories;
  // category: the id a missing value gets (spec.fill's id, the most frequent
  // value's, or 0 = unknown).
  int32_t fill_id = 0;

  // text: the token vocabulary (built from data.train's values of the column,
  // or a sentencepiece model's pieces) and the ids per example.
  TokenVocabularyPtr tokens;
  int64_t max_length = 0;

  // Features this column gives each example: 1 (a number, a category id),
  // 1 + categories (one-hot), max_length (text).
  int64_t width() const;
  // How many ids the column's features take (an embedding's input_dim):
  // 1 + categories for a category id, the vocabulary's size for text; 0 for
  // columns of other features.
  int64_t id_count() const;
  // The id of a category value (0 when it is not in the vocabulary).
  int32_t id(std::string_view value) const;
  void index_categories();  // builds id()'s table; call after setting categories

 private:
  std::unordered_map<std::string, int32_t> ids_;
};

struct TabularPreprocessing {
  std::string file;                   // the data.train file it was fitted on
  std::vector<TabularColumn> columns;  // the feature columns, in feature order
  std::string label_column;           // as the job names it ("" = the last column)
  std::vector<std::string> classes;   // label names, in id order; empty: numeric labels

  int64_t width() const;  // features per example (before feature_shape)
  // The model inputs the columns feed (their spec.input), in the order they
  // first appear; {""} when no column names one.
  std::vector<std::string> inputs() const;
  int64_t width(const std::string& input) const;  // features of the columns of `input`
  // The largest id_count() of the columns of `input`; 0 when none gives ids.
  int64_t id_count(const std::string& input) const;
  // Whether anything was learnt or must be kept (a category, a fill, class
  // names): only then is it saved with the model.
  bool worth_saving() const;
  // One line for the log, e.g. "4 columns -> 9 features: age number (fill
  // mean 38.58), color category (3 values + unknown), ...; label "species":
  // 3 classes (setosa, versicolor, virginica)".
  std::string describe() const;
};

using TabularPtr = std::shared_ptr<const TabularPreprocessing>;

// The feature columns a job's spec asks for match those `p` was fitted for
// (names, types, fills, max_categories, label column): "" if so, else what
// differs, naming `p` as `saved_name`.
// `classes` (the job's, empty = not given) must equal p's class names.
std::string tabular_difference(const TabularPreprocessing& p, const std::vector<CsvColumnSpec>& columns,
                               const std::string& label_column, const std::vector<std::string>& classes,
                               const std::string& saved_name);
// The same for the text columns' tokenizer and max_length (`spec`'s).
std::string tabular_text_difference(const TabularPreprocessing& p, const DataSourceSpec& spec,
                                    const std::string& saved_name);

// The JSON form:
//   {"dtrain_preprocessing": 1, "format": "csv", "file": "...",
//    "columns": [{"name": "age", "type": "number", "fill": "mean", "fill_value": 38.58},
//                {"name": "color", "type": "category", "categories": ["red", "blue"], "fill_id": 0},
//                {"name": "review", "type": "text", "max_length": 64, "vocabulary": {token vocabulary JSON}}, ...],
//    "label": {"column": "species", "classes": ["setosa", ...]}}
// ("encoding": "id" and "input": "name" where the job gave them.) A text
// column of tokenizer sentencepiece needs its model (`model`, the file
// kSentencePieceModelFile beside the JSON, which write_tabular_file writes
// and read_tabular_file reads).
std::string tabular_json(const TabularPreprocessing& p);
Result<TabularPreprocessing> parse_tabular_json(const std::string& text, const std::string& where,
                                                SentencePieceModelPtr model = nullptr);
Status write_tabular_file(const std::string& path, const TabularPreprocessing& p);
Result<TabularPreprocessing> read_tabular_file(const std::string& path);

// Fitting, column by column, from what one pass over data.train's values
// gathers (datasets/csv_scan.hpp), so that no column is held whole to fit it.
// A number column's present values: their sum in double in row order (the
// same on every machine), their count, and the values themselves only when
// `keep` (fill: median needs them).
struct NumberColumnStats {
  double sum = 0;
  int64_t present = 0;
  bool keep = false;
  std::vector<float> values;
  void add(float v) {
    sum += static_cast<double>(v);
    ++present;
    if (keep) values.push_back(v);
  }
};
// Number column -> fill_number per spec.fill (its mean or median, or the
// number given). Returns a kConfig error (naming `prefix`) when fill is
// neither mean, median nor a number, or needs values the column lacks.
// REQUIRES: stats.keep when spec.fill is median.
Status fit_number_column(TabularColumn& c, const NumberColumnStats& stats, const std::string& prefix);
// Category column: the distinct values seen and how often (missing values
// not counted) -> categories (most frequent first, ties by value, at most
// max_categories) and fill_id.
void fit_category_column(TabularColumn& c, const std::vector<std::pair<std::string, int64_t>>& counts);
// Text column: the vocabulary of its values' tokens (`counts`, each token's
// count over the rows) as text_folder builds it (max_tokens, min_count of
// `spec`), or `model`'s pieces for tokenizer sentencepiece (counts unused);
// max_length from spec.
void fit_text_column(TabularColumn& c, const std::map<std::string, int64_t>& counts, const DataSourceSpec& spec,
                     const TextTokenizer& tokenizer);

}  // namespace dtrain
