// The synthetic_sequence source: seeded token sequences of tasks that need
// the order of the tokens, for tests and samples of sequence models. Example
// i is computed when gathered from Philox stream i under the key `seed`
// (engine/rng.hpp), so it depends only on (seed, i).
//   is_sorted: tokens drawn first (uniform over the vocabulary, redrawn until
//     at least two distinct values), then a label bit b with P = 1/2; b = 1:
//     the tokens in ascending order; b = 0: a uniformly random order that is
//     not ascending. The multiset of tokens is drawn independently of b, so
//     it carries no information about the label: any model of the token
//     counts alone (a mean of embeddings) is at chance, 50%.
//   reverse: uniform tokens; labels (per position) the tokens reversed.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "datasets/source.hpp"
#include "datasets/token_ids.hpp"
#include "engine/rng.hpp"

namespace dtrain {

namespace {

// Bounded redraws (each succeeds with probability >= 1/2 for is_sorted's
// order, and >= 1/2 for its tokens): after this many, a fixed fallback.
constexpr int kMaxDraws = 64;

// Successive uniform draws from one example's stream.
class Draws {
 public:
  Draws(uint64_t seed, uint64_t example) : rng_(seed, example) {}
  // Uniform in [0, n). REQUIRES: 1 <= n <= 2^24.
  int32_t below(int64_t n) {
    const auto v = static_cast<int64_t>(rng_.uniform(next_++) * static_cast<float>(n));
    return static_cast<int32_t>(std::min(v, n - 1));
  }

 private:
  CounterRng rng_;
  uint64_t next_ = 0;
};

void is_sorted_example(const SyntheticSequenceSpec& s, uint64_t i, int32_t* tokens, float* label) {
  Draws d(s.seed, i);
  const bool sorted = d.below(2) == 1;
  const auto t = static_cast<size_t>(s.sequence_length);
  std::vector<int32_t> x(t);
  for (int attempt = 0;; ++attempt) {
    for (int32_t& v : x) v = d.below(s.vocab_size);
    if (std::adjacent_find(x.begin(), x.end(), std::not_equal_to<>()) != x.end()) break;
    if (attempt + 1 == kMaxDraws) {
      x.back() = (x.front() + 1) % static_cast<int32_t>(s.vocab_size);
      break;
    }
  }
  if (sorted) {
    std::sort(x.begin(), x.end());
  } else {
    for (int attempt = 0; std::is_sorted(x.begin(), x.end()); ++attempt) {
      if (attempt == kMaxDraws) {
        std::sort(x.begin(), x.end(), std::greater<>());  // descending: not ascending (two distinct values)
        break;
      }
      for (size_t k = t - 1; k > 0; --k) std::swap(x[k], x[static_cast<size_t>(d.below(static_cast<int64_t>(k) + 1))]);
    }
  }
  std::copy(x.begin(), x.end(), tokens);
  label[0] = sorted ? 1.0f : 0.0f;
}

void reverse_example(const SyntheticSequenceSpec& s, uint64_t i, int32_t* tokens, float* labels) {
  Draws d(s.seed, i);
  const int64_t t = s.sequence_length;
  for (int64_t k = 0; k < t; ++k) tokens[k] = d.below(s.vocab_size);
  for (int64_t k = 0; k < t; ++k) labels[k] = static_cast<float>(tokens[t - 1 - k]);
}

struct SequenceTask {
  const char* name;
  bool per_position;  // labels [sequence_length], else one label
  void (*example)(const SyntheticSequenceSpec&, uint64_t, int32_t* tokens, float* labels);
};

// One row per task; the only place a task name is looked up.
constexpr SequenceTask kTasks[] = {
    {"is_sorted", false, &is_sorted_example},
    {"reverse", true, &reverse_example},
};

class SequenceTaskSource final : public ExampleSource {
 public:
  SequenceTaskSource(SyntheticSequenceSpec spec, const SequenceTask& task) : spec_(std::move(spec)), task_(task) {}

  int64_t size() const override { return spec_.num_examples; }
  Shape feature_shape() const override { return {spec_.sequence_length}; }
  Shape label_shape() const override { return task_.per_position ? Shape{spec_.sequence_length} : Shape{}; }
  std::string describe() const override { return std::string("synthetic_sequence ") + task_.name; }
  DType feature_dtype() const override { return kTokenDType; }

  Batch gather(const std::vector<int64_t>& indices, float) const override {
    const auto b = static_cast<int64_t>(indices.size());
    const int64_t t = spec_.sequence_length, l = task_.per_position ? t : 1;
    Shape lshape = label_shape();
    lshape.insert(lshape.begin(), b);
    Batch out{token_tensor({b, t}), Tensor(lshape), indices};
    std::vector<int32_t> tokens(static_cast<size_t>(t));
    for (int64_t r = 0; r < b; ++r) {
      task_.example(spec_, static_cast<uint64_t>(indices[static_cast<size_t>(r)]), tokens.data(),
                    out.labels.data() + r * l);
      put_tokens(out.features, r * t, tokens.data(), t);
    }
    return out;
  }

 private:
  const SyntheticSequenceSpec spec_;
  const SequenceTask& task_;
};

}  // namespace

std::optional<ExampleShapes> sequence_task_shapes(const DataSourceSpec& spec) {
  const SyntheticSequenceSpec& s = spec.synthetic_sequence;
  for (const SequenceTask& t : kTasks) {
    if (s.task == t.name) return ExampleShapes{{s.sequence_length}, t.per_position ? Shape{s.sequence_length} : Shape{}, kTokenDType};
  }
  return std::nullopt;
}

Result<SourcePtr> make_sequence_task_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  const SyntheticSequenceSpec& s = spec.synthetic_sequence;
  const SequenceTask* task = nullptr;
  std::string known;
  for (const SequenceTask& t : kTasks) {
    if (s.task == t.name) task = &t;
    known += known.empty() ? t.name : std::string(", ") + t.name;
  }
  const std::string p = ctx.prefix + "synthetic_sequence.";
  if (task == nullptr) return config_error(fmt::format("{}task \"{}\" is not one of {}", p, s.task, known));
  if (s.vocab_size < 2 || s.vocab_size > (int64_t{1} << 24)) {
    return config_error(fmt::format("{}vocab_size must be in 2 .. 16777216, got {}", p, s.vocab_size));
  }
  if (s.sequence_length < 2) return config_error(fmt::format("{}sequence_length must be at least 2, got {}", p, s.sequence_length));
  if (s.num_examples < 1) return config_error(fmt::format("{}num_examples must be positive, got {}", p, s.num_examples));
  if (spec.scale != 1.0) {
    return config_error(fmt::format("{}scale {} does not apply to token ids (format synthetic_sequence); remove it",
                                    ctx.prefix, spec.scale));
  }
  if (!spec.map.empty()) {
    return config_error(ctx.prefix + "map operations do not apply to token ids (format synthetic_sequence); remove map");
  }
  return SourcePtr(std::make_shared<SequenceTaskSource>(s, *task));
}

}  // namespace dtrain
