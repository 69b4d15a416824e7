// `dtrain data bench`: reads a job's input as training reads it, without a
// model step, timing the batches and checking each against the model input.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "estimator/estimator.hpp"
#include "estimator/model_outputs.hpp"

namespace dtrain {
namespace {

using Clock = std::chrono::steady_clock;

// Sums of the values and their squares, in double; the first non-finite value's
// index in `n` when there is one, else -1. The blocks are summed in float
// (vectorised), so a non-finite block sum is looked at value by value: a huge
// but finite value may overflow the squares without being an error.
struct ValueSums {
  double sum = 0, squares = 0;
  int64_t bad = -1;
};

ValueSums sum_values(const float* x, int64_t n) {
  constexpr int64_t kBlock = 4096;
  ValueSums out;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    float s = 0, q = 0;
#pragma omp simd reduction(+ : s, q)
    for (int64_t i = start; i < end; ++i) {
      s += x[i];
      q += x[i] * x[i];
    }
    if (std::isfinite(s) && std::isfinite(q)) {
      out.sum += s;
      out.squares += q;
      continue;
    }
    for (int64_t i = start; i < end; ++i) {
      if (!std::isfinite(x[i])) {
        out.bad = i;
        return out;
      }
      out.sum += x[i];
      out.squares += static_cast<double>(x[i]) * x[i];
    }
  }
  return out;
}

}  // namespace

Result<InputBenchResult> Estimator::bench_input(const InputBenchOptions& options) {
  const bool train = options.role == "train";
  const std::optional<DataSourceSpec>& source = train ? job_.data.train : job_.data.eval;
  const std::string name = "data." + options.role;
  if (!source) {
    return config_error(fmt::format("{}: {}: not in the job, so there is no input to read; give the job a {} "
                                    "section, or read {} (--split {})",
                                    job_.source_path, name, name, train ? "data.eval" : "data.train",
                                    train ? "eval" : "train"));
  }
  const DataSourceSpec& spec = *source;
  if (options.batches == 0 && spec.repeat) {
    return config_error(fmt::format("{}: {}: --batches 0 reads to the end of the input, but {} repeats forever; "
                                    "add --set {}.repeat=false, or give --batches N",
                                    spec.where, name, name, name));
  }
  auto plan = batch_plan(spec, options.role.c_str());
  if (!plan) return plan.error();
  const int64_t batch = plan->per_process;
  VocabularyPtr vocabulary;
  if (!train && spec.format == "text") {
    auto found = evaluation_vocabulary();
    if (!found) return found.error();
    vocabulary = *found;
  }
  if (!train && spec.format == "csv") {
    if (auto found = evaluation_tabular(); !found) return found.error();
  }
  InputBenchResult r;
  auto input = open_input(spec, options.role.c_str(), batch, vocabulary, train, &r.stream);
  if (!input) return input.error();

  r.description = (*input)->describe();
  r.threads = threads_line_;
  r.global_batch = batch;
  r.feature_shape = program_.model->inputs()[0].shape;
  Shape want = r.feature_shape;
  want.insert(want.begin(), batch);
  const bool floats = (*input)->feature_dtype() == DType::f32;
  r.float_features = floats;
  double sum = 0, squares = 0, values = 0;
  Clock::time_point start = Clock::now();
  const int64_t total = options.batches == 0 ? -1 : options.warmup + options.batches;
  int64_t delivered = 0;
  for (int64_t n = 0; total < 0 || n < total; ++n) {
    if (n == options.warmup) start = Clock::now();
    auto next = (*input)->next();
    if (!next) return next.error();
    if (!next->has_value()) {
      r.ended = true;
      break;
    }
    const Batch& b = **next;
    delivered += 1;
    const Clock::time_point check_start = Clock::now();
    const Shape& got = b.features.shape();
    // Only the last batch of an input that ends may be short.
    const bool rows_ok = got.size() == want.size() && got[0] >= 1 && got[0] <= want[0];
    if (!rows_ok || !std::equal(got.begin() + 1, got.end(), want.begin() + 1)) {
      return data_error(fmt::format("{}: {}: batch {} has features {}, but the model input takes {} "
                                    "(batch {} x model.input.shape {})",
                                    spec.where, name, n, shape_str(got), shape_str(want), batch,
                                    shape_str(r.feature_shape)));
    }
    if (Status s = check_batch(b, spec, name.c_str(), **input); !s) return s.error();
    if (floats) {
      const ValueSums v = sum_values(b.features.data(), b.features.numel());
      if (v.bad >= 0) {
        const int64_t per_example = b.features.numel() / got[0];
        const int64_t row = v.bad / per_example;
        return data_error(fmt::format("{}: {}: batch {} holds {} at example {} of the source (value {} of its "
                                      "features): every feature must be finite",
                                      spec.where, name, n, b.features.data()[v.bad],
                                      row < static_cast<int64_t>(b.ids.size()) ? b.ids[row] : row,
                                      v.bad % per_example));
      }
      if (n >= options.warmup) {
        sum += v.sum;
        squares += v.squares;
        values += static_cast<double>(b.features.numel());
      }
    }
    if (n < options.warmup) continue;
    r.check_seconds += seconds_since(check_start);
    r.batches += 1;
    r.examples += b.size();
    r.feature_bytes += static_cast<double>(b.features.bytes());
  }
  r.seconds = seconds_since(start);
  r.warmup_batches = std::min<int64_t>(options.warmup, delivered);
  if (r.batches == 0) {
    return data_error(fmt::format("{}: {}: the input ended after {} batch(es), before any timed batch (--warmup {}); "
                                  "give fewer warm-up batches or more data",
                                  spec.where, name, r.warmup_batches, options.warmup));
  }
  if (values > 0) {
    r.feature_mean = sum / values;
    r.feature_std = std::sqrt(std::max(0.0, squares / values - r.feature_mean * r.feature_mean));
  }
  return r;
}

}  // namespace dtrain
