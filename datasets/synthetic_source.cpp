// The synthetic source: seeded normal features and labels given by the argmax
// of a fixed random linear map of the features, so a model can learn them.
// A pure function of spec.synthetic (seed, num_examples, shape, num_classes).
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "datasets/source.hpp"
#include "engine/rng.hpp"

namespace dtrain {

namespace {
// CounterRng streams under the key spec.synthetic.seed.
constexpr uint64_t kFeatureStream = 0;  // element i*D + j: feature j of example i
constexpr uint64_t kWeightStream = 1;   // element j*C + c: weight of feature j for class c
}  // namespace

std::optional<ExampleShapes> synthetic_shapes(const DataSourceSpec& spec) {
  return ExampleShapes{spec.synthetic.shape, {}};
}

Result<SourcePtr> make_synthetic_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  const SyntheticSpec& s = spec.synthetic;
  if (s.num_examples <= 0) return config_error(fmt::format("{}synthetic.num_examples must be positive, got {}", ctx.prefix, s.num_examples));
  if (s.num_classes <= 0) return config_error(fmt::format("{}synthetic.num_classes must be positive, got {}", ctx.prefix, s.num_classes));
  if (s.shape.empty()) return config_error(ctx.prefix + "synthetic.shape must have at least one dimension");
  for (int64_t d : s.shape) {
    if (d <= 0) return config_error(fmt::format("{}synthetic.shape {} has a dimension that is not positive", ctx.prefix, shape_str(s.shape)));
  }
  const int64_t n = s.num_examples, dim = num_elements(s.shape), classes = s.num_classes;

  const CounterRng feature_rng(s.seed, kFeatureStream), weight_rng(s.seed, kWeightStream);
  std::vector<float> w(static_cast<size_t>(dim * classes));  // (D, C)
  for (size_t k = 0; k < w.size(); ++k) w[k] = weight_rng.normal(k);

  Shape fshape{n};
  fshape.insert(fshape.end(), s.shape.begin(), s.shape.end());
  Tensor features(fshape);  // (N, shape...)
  Tensor labels(Shape{n});  // (N) class ids
  std::vector<double> logits(static_cast<size_t>(classes));
  for (int64_t i = 0; i < n; ++i) {
    float* x = features.data() + i * dim;
    std::fill(logits.begin(), logits.end(), 0.0);
    for (int64_t j = 0; j < dim; ++j) {
      x[j] = feature_rng.normal(static_cast<uint64_t>(i * dim + j));
      const float* wj = w.data() + j * classes;
      for (int64_t c = 0; c < classes; ++c) logits[static_cast<size_t>(c)] += double{x[j]} * wj[c];
    }
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (logits[static_cast<size_t>(c)] > logits[static_cast<size_t>(best)]) best = c;
    }
    labels[i] = static_cast<float>(best);
  }
  return make_tensor_source(std::move(features), std::move(labels), "synthetic data");
}

}  // namespace dtrain
