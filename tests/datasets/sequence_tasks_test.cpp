// The synthetic_sequence source: determinism by (seed, example), the tasks'
// labels, class balance, and the property that makes is_sorted a test of
// order: the multiset of an example's tokens says nothing about its label.
#include <doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>

#include "datasets/token_ids.hpp"
#include "datasets/source.hpp"

namespace dtrain {
namespace {

DataSourceSpec task_spec(const std::string& task, int64_t vocab, int64_t length, int64_t n, uint64_t seed) {
  DataSourceSpec s;
  s.format = "synthetic_sequence";
  s.synthetic_sequence = {task, vocab, length, n, seed};
  return s;
}

SourcePtr make(const DataSourceSpec& spec) {
  auto src = load_source(spec, SourceContext{"", "data.train: "});
  REQUIRE_MESSAGE(src.ok(), src.error().message);
  return *src;
}

std::vector<int64_t> first(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Tokens of example r of a gathered batch.
std::vector<int> tokens_of(const Batch& b, int64_t r) {
  const int64_t t = b.features.dim(1);
  std::vector<int> out;
  for (int64_t k = 0; k < t; ++k) out.push_back(static_cast<int>(b.features.host_data<int32_t>()[r * t + k]));
  return out;
}

// The accuracy on `examples` of the best classifier that sees only each
// example's multiset of tokens (it predicts the majority label of the
// multiset, fitted on these very examples: an optimistic bound for any model
// of token counts, such as a mean of embeddings).
double best_bag_accuracy(const std::vector<std::vector<int>>& examples, const std::vector<int>& labels) {
  std::map<std::vector<int>, std::array<int64_t, 2>> counts;
  for (size_t i = 0; i < examples.size(); ++i) {
    std::vector<int> bag = examples[i];
    std::sort(bag.begin(), bag.end());
    counts[bag][static_cast<size_t>(labels[i])]++;
  }
  int64_t right = 0;
  for (const auto& [bag, c] : counts) right += std::max(c[0], c[1]);
  return static_cast<double>(right) / static_cast<double>(examples.size());
}

TEST_CASE("synthetic_sequence: example i depends only on (seed, i)") {
  for (const char* task : {"is_sorted", "reverse"}) {
    CAPTURE(task);
    const SourcePtr a = make(task_spec(task, 7, 9, 300, 3));
    const SourcePtr b = make(task_spec(task, 7, 9, 300, 3));
    const SourcePtr c = make(task_spec(task, 7, 9, 300, 4));
    const Batch all = a->gather(first(300), 1.0f);
    CHECK(token_vector(all.features) == token_vector(b->gather(first(300), 1.0f).features));
    CHECK(all.labels.to_vector() == b->gather(first(300), 1.0f).labels.to_vector());
    CHECK(token_vector(all.features) != token_vector(c->gather(first(300), 1.0f).features));
    // Gathered alone, or with other examples, or from a source of another size: the same example.
    const Batch one = make(task_spec(task, 7, 9, 1000, 3))->gather({123, 5}, 1.0f);
    CHECK(tokens_of(one, 0) == tokens_of(all, 123));
    CHECK(tokens_of(one, 1) == tokens_of(all, 5));
    CHECK(a->feature_shape() == Shape{9});
    CHECK(a->feature_dtype() == DType::i32);
    for (float v : token_vector(all.features)) CHECK((v >= 0.0f && v < 7.0f && v == std::floor(v)));
  }
}

TEST_CASE("synthetic_sequence: is_sorted labels, balance and tokens") {
  const int64_t n = 4000;
  const SourcePtr src = make(task_spec("is_sorted", 16, 12, n, 1));
  CHECK(src->label_shape() == Shape{});
  const Batch b = src->gather(first(n), 1.0f);
  CHECK(b.labels.shape() == Shape{n});
  int64_t ones = 0;
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<int> x = tokens_of(b, i);
    const bool sorted = std::is_sorted(x.begin(), x.end());
    CHECK(b.labels[i] == (sorted ? 1.0f : 0.0f));
    // Two distinct values at least, so that both orders exist for every multiset.
    CHECK(std::adjacent_find(x.begin(), x.end(), std::not_equal_to<>()) != x.end());
    ones += sorted ? 1 : 0;
  }
  // Balanced: each label with probability 1/2 (4 standard deviations: 126 of 4000).
  CHECK(std::abs(static_cast<double>(ones) - n / 2.0) < 4.0 * std::sqrt(n / 4.0));
}

TEST_CASE("synthetic_sequence: in is_sorted the multiset of tokens carries no information about the label") {
  // Few symbols and short sequences, so that every multiset occurs many times.
  const int64_t n = 30000;
  const Batch b = make(task_spec("is_sorted", 3, 4, n, 9))->gather(first(n), 1.0f);
  std::vector<std::vector<int>> examples;
  std::vector<int> labels, leaky;
  std::map<std::vector<int>, std::array<int64_t, 2>> by_bag;
  for (int64_t i = 0; i < n; ++i) {
    examples.push_back(tokens_of(b, i));
    labels.push_back(static_cast<int>(b.labels[i]));
    // A labelling a bag model can read (does token 0 occur?), to show the measure can fail.
    const std::vector<int>& x = examples.back();
    leaky.push_back(std::find(x.begin(), x.end(), 0) != x.end() ? 1 : 0);
    std::vector<int> bag = x;
    std::sort(bag.begin(), bag.end());
    by_bag[bag][static_cast<size_t>(labels.back())]++;
  }
  // The best multiset classifier, fitted on the sample itself, is at chance.
  const double bag = best_bag_accuracy(examples, labels);
  MESSAGE("best multiset-only accuracy on is_sorted: " << bag);
  CHECK(bag < 0.52);
  CHECK(best_bag_accuracy(examples, leaky) > 0.9);
  // And each multiset (of those with two distinct values, 12 of the 15) comes
  // with both labels equally often, within 4 standard deviations.
  CHECK(by_bag.size() == 12);
  for (const auto& bag : by_bag) {
    const auto& multiset = bag.first;
    const auto& c = bag.second;
    const auto total = static_cast<double>(c[0] + c[1]);
    CAPTURE(multiset[0] * 1000 + multiset[1] * 100 + multiset[2] * 10 + multiset[3]);
    CHECK(total > 500);
    CHECK(std::abs(static_cast<double>(c[1]) - total / 2.0) < 4.0 * std::sqrt(total / 4.0));
  }
}

TEST_CASE("synthetic_sequence: reverse has per-position labels, the tokens reversed") {
  const SourcePtr src = make(task_spec("reverse", 5, 6, 50, 2));
  CHECK(src->label_shape() == Shape{6});
  const Batch b = src->gather(first(50), 1.0f);
  CHECK(b.labels.shape() == Shape{50, 6});
  std::vector<int64_t> counts(5, 0);
  for (int64_t i = 0; i < 50; ++i) {
    const std::vector<int> x = tokens_of(b, i);
    for (int64_t k = 0; k < 6; ++k) {
      CHECK(b.labels[i * 6 + k] == static_cast<float>(x[static_cast<size_t>(5 - k)]));
      counts[static_cast<size_t>(x[static_cast<size_t>(k)])]++;
    }
  }
  for (int64_t c : counts) CHECK(c > 30);  // 300 uniform tokens over 5 ids: about 60 each
}

TEST_CASE("declared_shapes: what the spec alone says equals what the source gives") {
  for (const char* task : {"is_sorted", "reverse"}) {
    const DataSourceSpec spec = task_spec(task, 5, 7, 10, 0);
    const auto shapes = declared_shapes(spec);
    REQUIRE(shapes.has_value());
    CHECK(shapes->features == make(spec)->feature_shape());
    CHECK(shapes->labels == make(spec)->label_shape());
  }
  DataSourceSpec synthetic;
  synthetic.format = "synthetic";
  synthetic.synthetic.shape = {3, 2};
  REQUIRE(declared_shapes(synthetic).has_value());
  CHECK(declared_shapes(synthetic)->features == make(synthetic)->feature_shape());
  CHECK(declared_shapes(synthetic)->labels == make(synthetic)->label_shape());
  DataSourceSpec idx;
  idx.format = "idx";
  CHECK_FALSE(declared_shapes(idx).has_value());  // from the files
  CHECK_FALSE(declared_shapes(task_spec("sorted", 5, 7, 10, 0)).has_value());
}

TEST_CASE("synthetic_sequence: spec mistakes are config errors") {
  auto error_of = [](DataSourceSpec s) {
    auto src = load_source(s, SourceContext{"", "data.train: "});
    REQUIRE_FALSE(src.ok());
    CHECK(src.error().kind == ErrorKind::kConfig);
    return src.error().message;
  };
  CHECK(error_of(task_spec("sorted", 4, 4, 10, 0)) ==
        "data.train: synthetic_sequence.task \"sorted\" is not one of is_sorted, reverse");
  CHECK(error_of(task_spec("is_sorted", 1, 4, 10, 0)) ==
        "data.train: synthetic_sequence.vocab_size must be in 2 .. 16777216, got 1");
  CHECK(error_of(task_spec("is_sorted", 4, 1, 10, 0)) ==
        "data.train: synthetic_sequence.sequence_length must be at least 2, got 1");
  DataSourceSpec scaled = task_spec("is_sorted", 4, 4, 10, 0);
  scaled.scale = 2.0;
  CHECK(error_of(scaled) == "data.train: scale 2 does not apply to token ids (format synthetic_sequence); remove it");
}

}  // namespace
}  // namespace dtrain
