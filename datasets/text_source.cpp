// The text source: reading and decoding the files, the held-out cut, token
// windows with next-token labels, and the start-up summary (vocabulary and
// unigram entropy).
#include "datasets/text_source.hpp"

#include <fmt/format.h>

#include <cmath>

#include "datasets/file_glob.hpp"
#include "datasets/token_ids.hpp"
#include "datasets/utf8.hpp"
#include "engine/io/file_util.hpp"

namespace dtrain {

namespace {

// Windows over the token ids of one part of the text. Immutable.
class TextSource final : public ExampleSource {
 public:
  TextSource(std::vector<int32_t> ids, int64_t length, int64_t stride, int64_t windows, std::vector<int64_t> file_starts,
             std::string name, std::string summary)
      : ids_(std::move(ids)),
        length_(length),
        stride_(stride),
        windows_(windows),
        file_starts_(std::move(file_starts)),
        name_(std::move(name)),
        summary_(std::move(summary)) {}

  int64_t size() const override { return windows_; }
  Shape feature_shape() const override { return {length_}; }
  Shape label_shape() const override { return {length_}; }
  std::string describe() const override { return name_; }
  std::vector<int64_t> file_starts() const override { return file_starts_; }
  DType feature_dtype() const override { return kTokenDType; }
  std::string summary() const override { return summary_; }

  // Window i: features ids[i*stride .. +length), labels the same shifted by one.
  // `scale` is 1 (load_text_source rejects any other).
  Batch gather(const std::vector<int64_t>& indices, float) const override {
    const auto b = static_cast<int64_t>(indices.size());
    Batch out{token_tensor({b, length_}), Tensor(Shape{b, length_}), indices};
    float* labels = out.labels.data();
    for (int64_t r = 0; r < b; ++r) {
      const int32_t* start = ids_.data() + indices[static_cast<size_t>(r)] * stride_;
      put_tokens(out.features, r * length_, start, length_);
      for (int64_t k = 0; k < length_; ++k) labels[r * length_ + k] = static_cast<float>(start[k + 1]);
    }
    return out;
  }

 private:
  const std::vector<int32_t> ids_;  // the part's token ids
  const int64_t length_, stride_, windows_;
  const std::vector<int64_t> file_starts_;
  const std::string name_, summary_;
};

struct TextOptions {
  TextUnit unit = TextUnit::kChar;
  int64_t length = 0, stride = 0;
};

// The checks of the spec that need no file.
Result<TextOptions> check_text_spec(const DataSourceSpec& spec, const std::string& prefix) {
  TextOptions o;
  if (spec.files.empty()) return config_error(prefix + "format text needs files");
  const auto unit = parse_text_unit(spec.unit);
  if (!unit) return config_error(prefix + "unit \"" + spec.unit + "\" is not one of char, byte");
  o.unit = *unit;
  if (spec.sequence_length < 1) {
    return config_error(fmt::format("{}format text needs sequence_length (tokens per example) of at least 1, got {}",
                                    prefix, spec.sequence_length));
  }
  o.length = spec.sequence_length;
  o.stride = spec.stride.value_or(o.length);
  if (o.stride < 1) return config_error(fmt::format("{}stride must be at least 1, got {}", prefix, o.stride));
  if (!(spec.holdout >= 0.0 && spec.holdout < 1.0)) {
    return config_error(fmt::format("{}holdout must be >= 0 and < 1, got {}", prefix, spec.holdout));
  }
  if (spec.split != "train" && spec.split != "holdout") {
    return config_error(prefix + "split \"" + spec.split + "\" is not one of train, holdout");
  }
  if (spec.split == "holdout" && spec.holdout == 0.0) {
    return config_error(prefix + "split: holdout reads the held-out part, but holdout is 0; give the fraction held out");
  }
  if (spec.scale != 1.0) {
    return config_error(fmt::format("{}scale {} does not apply to token ids (format text); remove it", prefix, spec.scale));
  }
  if (!spec.map.empty()) {
    return config_error(prefix + "map operations do not apply to token ids (format text); remove map");
  }
  return o;
}

Result<std::vector<std::string>> text_files(const DataSourceSpec& spec, const SourceContext& ctx) {
  std::vector<std::string> patterns;
  for (const std::string& p : spec.files) patterns.push_back(resolve_source_path(p, ctx.base_dir));
  return glob_files(patterns);
}

std::string percent(double fraction) { return fmt::format("{:g}%", 100.0 * fraction); }

}  // namespace

Result<TextUnits> read_text_units(const std::vector<std::string>& files, TextUnit unit) {
  TextUnits out;
  for (const std::string& path : files) {
    auto bytes = io::read_whole_file(path, ErrorKind::kData);
    if (!bytes) return bytes.error();
    out.files.push_back(path);
    out.file_starts.push_back(static_cast<int64_t>(out.units.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(bytes->data());
    if (unit == TextUnit::kByte) {
      out.units.insert(out.units.end(), p, p + bytes->size());
      continue;
    }
    Utf8Problem problem;
    if (!decode_utf8(p, bytes->size(), out.units, &problem)) {
      return data_error(fmt::format("{}: invalid UTF-8 at byte offset {}: {}; unit: char reads UTF-8 text (unit: byte "
                                    "reads any file)",
                                    path, problem.offset, problem.reason));
    }
  }
  return out;
}

Result<VocabularyPtr> build_text_vocabulary(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.files.empty()) return config_error(ctx.prefix + "format text needs files");
  const auto unit = parse_text_unit(spec.unit);
  if (!unit) return config_error(ctx.prefix + "unit \"" + spec.unit + "\" is not one of char, byte");
  auto files = text_files(spec, ctx);
  if (!files) return files.error();
  auto text = read_text_units(*files, *unit);
  if (!text) return text.error();
  return VocabularyPtr(std::make_shared<const TextVocabulary>(*unit, std::move(text->units), std::move(text->files)));
}

double unigram_entropy(const std::vector<int32_t>& ids, int64_t vocabulary_size, int64_t* distinct) {
  std::vector<int64_t> counts(static_cast<size_t>(vocabulary_size), 0);
  for (int32_t id : ids) ++counts[static_cast<size_t>(id)];
  double h = 0.0;
  int64_t seen = 0;
  const auto n = static_cast<double>(ids.size());
  for (int64_t c : counts) {
    if (c == 0) continue;
    ++seen;
    const double p = static_cast<double>(c) / n;
    h -= p * std::log(p);
  }
  if (distinct != nullptr) *distinct = seen;
  return h;
}

std::optional<ExampleShapes> text_shapes(const DataSourceSpec& spec) {
  if (spec.sequence_length < 1) return std::nullopt;
  return ExampleShapes{{spec.sequence_length}, {spec.sequence_length}, kTokenDType};
}

Result<SourcePtr> load_text_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  auto options = check_text_spec(spec, ctx.prefix);
  if (!options) return options.error();
  const TextOptions& o = *options;
  if (ctx.vocabulary && ctx.vocabulary->unit() != o.unit) {
    return config_error(fmt::format("{}unit {} does not match the vocabulary of the model, built with unit {}",
                                    ctx.prefix, text_unit_name(o.unit), text_unit_name(ctx.vocabulary->unit())));
  }
  auto files = text_files(spec, ctx);
  if (!files) return files.error();
  auto text = read_text_units(*files, o.unit);
  if (!text) return text.error();
  const std::string name = patterns_text(spec.files);
  VocabularyPtr vocabulary = ctx.vocabulary;
  if (!vocabulary) vocabulary = std::make_shared<const TextVocabulary>(o.unit, text->units, text->files);
  if (vocabulary->size() > kMaxTokenVocabulary) {
    return data_error(fmt::format("{}: the vocabulary has {} ids; token ids are float32 features, exact only below {}",
                                  name, vocabulary->size(), kMaxTokenVocabulary));
  }

  // The part this source reads: [begin, end) of the concatenated units.
  const auto total = static_cast<int64_t>(text->units.size());
  const auto held = static_cast<int64_t>(std::floor(spec.holdout * static_cast<double>(total)));
  const bool holdout_part = spec.split == "holdout";
  const int64_t begin = holdout_part ? total - held : 0, end = holdout_part ? total : total - held;
  std::string part;
  if (holdout_part) part = fmt::format("the held-out last {}", percent(spec.holdout));
  else if (held > 0) part = fmt::format("the part before the held-out last {}", percent(spec.holdout));

  const char* units = text_unit_plural(o.unit);
  const int64_t count = end - begin;
  if (count < o.length + 1) {
    const std::string of = fmt::format("{} file{}", files->size(), files->size() == 1 ? "" : "s");
    return data_error(fmt::format("{}: {} has {} {}{}: fewer than sequence_length + 1 = {}, so no window with its "
                                  "next-token labels fits",
                                  name, part.empty() ? "the text of " + of : part, count, units,
                                  part.empty() ? "" : fmt::format(" (of {} in {})", total, of), o.length + 1));
  }
  std::vector<int32_t> ids(static_cast<size_t>(count));
  int64_t unknown = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int32_t id = vocabulary->id(text->units[static_cast<size_t>(begin + i)]);
    unknown += id == vocabulary->unk_id() ? 1 : 0;
    ids[static_cast<size_t>(i)] = id;
  }
  const int64_t windows = (count - o.length - 1) / o.stride + 1;

  // The first window starting in each file (files starting inside one window share it).
  std::vector<int64_t> starts{0};
  for (int64_t s : text->file_starts) {
    const int64_t rel = s - begin;
    if (rel <= 0) continue;
    const int64_t w = (rel + o.stride - 1) / o.stride;
    if (w < windows && w > starts.back()) starts.push_back(w);
  }

  int64_t distinct = 0;
  const double entropy = unigram_entropy(ids, vocabulary->size(), &distinct);
  std::string summary = fmt::format("text: {} {} in {} file{}", total, units, files->size(), files->size() == 1 ? "" : "s");
  if (!part.empty()) summary += fmt::format(", {}: {} {}", part, count, units);
  summary += fmt::format(" -> {} window{} of {} (stride {}); vocabulary {} ids ({} {} + <unk>)", windows,
                         windows == 1 ? "" : "s", o.length, o.stride, vocabulary->size(), vocabulary->symbols().size(),
                         units);
  if (unknown > 0) summary += fmt::format(", {} {} read as <unk>", unknown, units);
  summary += fmt::format("; unigram entropy {:.4f} nats/token over {} symbols", entropy, distinct);
  return SourcePtr(std::make_shared<TextSource>(std::move(ids), o.length, o.stride, windows, std::move(starts), name,
                                                std::move(summary)));
}

}  // namespace dtrain
