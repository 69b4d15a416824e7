// Example weights (strategies/class_weights.hpp).
#include "strategies/class_weights.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dtrain {

Result<ClassWeights> make_class_weights(const ClassWeightSpec& spec, LossKind loss, const Shape& output,
                                        const std::string& at) {
  ClassWeights w;
  w.loss = loss;
  w.where = spec.where;
  if (!spec.given()) return w;
  switch (loss) {
    case LossKind::kSparseSoftmaxCrossEntropy:
    case LossKind::kSoftmaxCrossEntropy:
      if (output.size() != 1) {
        return config_error(fmt::format("{}: class weights need one class per example, but the output {} has {} "
                                        "positions per example (Keras refuses class_weight for such outputs too); "
                                        "give per-example weights with data.train.weight instead",
                                        at, shape_str(output), output.empty() ? 0 : num_elements(output) / output.back()));
      }
      w.classes = output[0];
      break;
    case LossKind::kSigmoidCrossEntropy:
      if (num_elements(output) != 1) {
        return config_error(fmt::format("{}: class weights need one class per example, but the sigmoid output {} has "
                                        "{} units (multi-label); give per-example weights with data.train.weight "
                                        "instead",
                                        at, shape_str(output), num_elements(output)));
      }
      w.classes = 2;
      break;
    case LossKind::kMeanSquaredError:
      return config_error(fmt::format("{}: class weights need a classification loss, not mean_squared_error; give "
                                      "per-example weights with data.train.weight instead",
                                      at));
  }
  w.balanced = spec.balanced;
  if (w.balanced) return w;
  w.per_class.assign(static_cast<size_t>(w.classes), 1.0f);
  for (const auto& [id, weight] : spec.weights) {
    if (id < 0 || id >= w.classes) {
      return config_error(fmt::format("{}: class {} is not a class of the output {} (classes 0..{})", at, id,
                                      shape_str(output), w.classes - 1));
    }
    w.per_class[static_cast<size_t>(id)] = static_cast<float>(weight);
  }
  return w;
}

std::vector<int64_t> example_classes(const ClassWeights& w, const Tensor& labels) {
  const int64_t b = labels.empty() ? 0 : labels.dim(0);
  const int64_t per = b == 0 ? 0 : labels.numel() / b;
  const float* y = labels.data();
  std::vector<int64_t> out(static_cast<size_t>(b), -1);
  for (int64_t i = 0; i < b; ++i) {
    const float* row = y + i * per;
    int64_t c = -1;
    switch (w.loss) {
      case LossKind::kSparseSoftmaxCrossEntropy:
        if (row[0] >= 0.0f && row[0] < static_cast<float>(w.classes) && row[0] == std::floor(row[0])) {
          c = static_cast<int64_t>(row[0]);
        }
        break;
      case LossKind::kSoftmaxCrossEntropy: {
        c = 0;
        for (int64_t j = 1; j < per; ++j) {
          if (row[j] > row[c]) c = j;
        }
        break;
      }
      case LossKind::kSigmoidCrossEntropy:
        c = row[0] > 0.5f ? 1 : 0;
        break;
      case LossKind::kMeanSquaredError:
        break;
    }
    out[static_cast<size_t>(i)] = c;
  }
  return out;
}

std::vector<float> balanced_class_weights(const std::vector<int64_t>& counts) {
  int64_t n = 0, present = 0;
  for (int64_t c : counts) {
    n += c;
    present += c > 0 ? 1 : 0;
  }
  std::vector<float> out(counts.size(), 1.0f);
  for (size_t c = 0; c < counts.size(); ++c) {
    if (counts[c] > 0) {
      out[c] = static_cast<float>(static_cast<double>(n) / (static_cast<double>(present) * static_cast<double>(counts[c])));
    }
  }
  return out;
}

Tensor example_weights(const ClassWeights& w, const Tensor& labels, const Tensor& data_weights, bool training) {
  const bool by_class = training && w.active();
  if (!by_class && data_weights.empty()) return {};
  const int64_t b = labels.dim(0);
  Tensor out = data_weights.empty() ? Tensor::from(Shape{b}, std::vector<float>(static_cast<size_t>(b), 1.0f))
                                    : data_weights.clone();
  if (by_class) {
    const std::vector<int64_t> classes = example_classes(w, labels);
    float* o = out.data();
    for (int64_t i = 0; i < b; ++i) {
      const int64_t c = classes[static_cast<size_t>(i)];
      if (c >= 0) o[i] *= w.per_class[static_cast<size_t>(c)];
    }
  }
  return out;
}

std::string describe_class_weights(const std::vector<float>& per_class) {
  std::string out;
  for (size_t c = 0; c < per_class.size(); ++c) {
    out += fmt::format("{}class {}: {:.4g}", out.empty() ? "" : ", ", c, per_class[c]);
  }
  return out;
}

}  // namespace dtrain
