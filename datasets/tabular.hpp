// What a csv source learns from data.train and applies to every later read
// of the same columns (evaluation, predict, a resumed run): each feature
// column's type and fill, each category column's vocabulary, the label's
// class names. Saved with the model as JSON (model_dir/preprocessing.json)
// so that a model always sees its features encoded as in training.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

struct TabularColumn {
  CsvColumnSpec spec;  // as the job gave it (name, type, fill, max_categories)
  bool category() const { return spec.type == "category"; }
  // number: what a missing value becomes (spec.fill resolved on data.train:
  // its mean or median, or the number given); nullopt: a missing value is an error.
  std::optional<float> fill_number;
  // category: the vocabulary, most frequent first (ties by value): value
  // categories[k] has id k + 1; id 0 is the unknown category.
  std::vector<std::string> categories;
  // category: the id a missing value gets (spec.fill's id, the most frequent
  // value's, or 0 = unknown).
  int32_t fill_id = 0;

  // Features this column gives each example: 1, or 1 + categories for one-hot.
  int64_t width() const { return category() ? static_cast<int64_t>(categories.size()) + 1 : 1; }
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

// The JSON form:
//   {"dtrain_preprocessing": 1, "format": "csv", "file": "...",
//    "columns": [{"name": "age", "type": "number", "fill": "mean", "fill_value": 38.58},
//                {"name": "color", "type": "category", "categories": ["red", "blue"], "fill_id": 0}, ...],
//    "label": {"column": "species", "classes": ["setosa", ...]}}
std::string tabular_json(const TabularPreprocessing& p);
Result<TabularPreprocessing> parse_tabular_json(const std::string& text, const std::string& where);
Status write_tabular_file(const std::string& path, const TabularPreprocessing& p);
Result<TabularPreprocessing> read_tabular_file(const std::string& path);

// Fitting, column by column, from data.train's values.
// Number column: `values` (NaN for missing) -> fill_number per spec.fill.
// Returns a kConfig error (naming `prefix`) when fill is neither mean,
// median nor a number.
Status fit_number_column(TabularColumn& c, const std::vector<float>& values, const std::string& prefix);
// Category column: the distinct values seen and how often (missing values
// not counted) -> categories (most frequent first, ties by value, at most
// max_categories) and fill_id.
void fit_category_column(TabularColumn& c, const std::vector<std::pair<std::string, int64_t>>& counts);

}  // namespace dtrain
