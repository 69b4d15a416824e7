// What a csv source keeps of its file (datasets/csv_examples.hpp).
#include "datasets/csv_examples.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtrain {

std::string CsvPlaces::locate(int64_t id, const ExampleValue& value) const {
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

std::string CsvPlaces::field(int64_t line, const Field& f) const {
  return fmt::format("{}:{}:{} (column {})", path, line, f.index + 1, f.label);
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

Batch CsvSource::gather(const std::vector<int64_t>& indices, float scale) const {
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

}  // namespace dtrain
