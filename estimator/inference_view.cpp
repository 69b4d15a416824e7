// The evaluation's view of the data for predict and export (see inference_view.hpp).
#include "estimator/inference_view.hpp"

#include <fmt/format.h>

#include <numeric>

#include "datasets/map_ops.hpp"

namespace dtrain {

namespace {

bool is_random(const MapOpSpec& op) { return op.op.rfind("random_", 0) == 0; }

}  // namespace

InferenceView inference_view(const JobSpec& job) {
  InferenceView v;
  const DataSourceSpec* spec = nullptr;
  if (job.data.predict) {
    spec = &*job.data.predict;
    v.role = "data.predict";
  } else if (job.data.eval) {
    spec = &*job.data.eval;
    v.role = "data.eval";
  } else if (job.data.train) {
    spec = &*job.data.train;
    v.role = "data.train";
  }
  if (spec == nullptr) return v;
  v.where = spec->where;
  v.scale = spec->scale;
  for (const MapOpSpec& op : spec->map) {
    if (v.role == "data.train" && is_random(op)) {
      v.dropped.push_back(op.op);
    } else {
      v.map.push_back(op);
    }
  }
  if (v.map.size() == 1 && v.map[0].op == "normalize") {
    for (double m : v.map[0].mean) v.mean.push_back(static_cast<float>(m));
    for (double s : v.map[0].std) v.std.push_back(static_cast<float>(s));
  }
  return v;
}

std::string describe_inference_view(const InferenceView& v) {
  std::vector<std::string> parts;
  if (v.scale != 1.0) parts.push_back(fmt::format("scale {:.6g}", v.scale));
  if (!v.map.empty()) {
    std::vector<std::string> ops;
    for (const MapOpSpec& op : v.map) ops.push_back(op.op);
    parts.push_back(fmt::format("map {}", fmt::join(ops, ", ")));
  }
  std::string line;
  if (!parts.empty()) line = fmt::format("applies {}'s preprocessing: {}", v.role, fmt::join(parts, ", "));
  if (!v.dropped.empty()) {
    line += fmt::format("{}left out {}'s random operations {} (augmentation is for training)",
                        line.empty() ? "" : "; ", v.role, fmt::join(v.dropped, ", "));
  }
  return line;
}

Result<Tensor> apply_inference_view(Tensor x, const InferenceView& v, bool scaled) {
  if (!scaled && v.scale != 1.0) {
    const auto s = static_cast<float>(v.scale);
    for (int64_t i = 0; i < x.numel(); ++i) x[i] *= s;
  }
  if (v.map.empty()) return x;
  const int64_t n = x.dim(0);
  const Shape example(x.shape().begin() + 1, x.shape().end());
  auto plan = MapPlan::make(v.map, example, Shape{}, 0, v.where, v.role, v.scale);
  if (!plan) return plan.error();
  Batch b;
  b.features = std::move(x);
  b.labels = Tensor(Shape{n});  // zeros: one_hot has class 0 to encode
  b.ids.resize(static_cast<size_t>(n));
  std::iota(b.ids.begin(), b.ids.end(), int64_t{0});
  const std::vector<int64_t> epochs(static_cast<size_t>(n), 0);
  if (Status s = plan->apply(b, epochs); !s) return s.error();
  return std::move(b.features);
}

}  // namespace dtrain
