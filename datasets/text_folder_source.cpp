// format: text_folder (datasets/text_folder_source.hpp): the class folders'
// file lists and holdout split, tokenizing, the vocabulary of the training
// split, and padded token-id examples.
#include "datasets/text_folder_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "datasets/class_folders.hpp"
#include "datasets/stream_choice.hpp"
#include "datasets/token_ids.hpp"
#include "datasets/utf8.hpp"
#include "engine/io/file_util.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

Status check_spec(const DataSourceSpec& spec, const std::string& prefix) {
  if (spec.dir.empty()) return config_error(prefix + "format text_folder needs dir (a folder of class folders of .txt files)");
  if (spec.max_length < 1) {
    return config_error(fmt::format("{}format text_folder needs max_length (token ids per example, padded or "
                                    "truncated) of at least 1, got {}",
                                    prefix, spec.max_length));
  }
  if (Status s = check_tokenizer_keys(spec, prefix); !s) return s;
  if (spec.max_tokens && *spec.max_tokens < 3) {
    return config_error(fmt::format("{}max_tokens must be at least 3 (<pad>, <unk> and one token), got {}", prefix,
                                    *spec.max_tokens));
  }
  if (spec.split == "holdout" && spec.holdout <= 0.0) {
    return config_error(prefix + "split: holdout reads the held-out files, but holdout is 0; set holdout (e.g. 0.2)");
  }
  if (spec.scale != 1.0) {
    return config_error(fmt::format("{}scale {} does not apply to token ids (format text_folder); remove it", prefix,
                                    spec.scale));
  }
  if (!spec.map.empty()) {
    return config_error(prefix + "map operations do not apply to token ids (format text_folder); remove map");
  }
  return Status::Ok();
}

// The split's files of each class, at least one in all.
Result<ClassFolderFiles> list_files(const DataSourceSpec& spec, const SourceContext& ctx, const std::string& split) {
  auto out = list_text_folder_files(spec, ctx, split);
  if (!out) return out.error();
  size_t total = 0;
  for (const auto& f : out->files) total += f.size();
  if (total == 0) {
    return data_error(fmt::format("{}dir {}: no .txt files in the class folders ({}){}", ctx.prefix, out->dir,
                                  fmt::join(out->classes, ", "), split == "holdout" ? " for the held-out split" : ""));
  }
  return out;
}

// The examples of one split: each file (path and class id) and either its
// token ids up to max_length, kept without their padding (padded as a batch
// is gathered), or, read as training goes, nothing more: each batch's files
// are then read and tokenized by gather(), a file that cannot be read or is
// not UTF-8 being the batch's error (ErrorException), naming it. Immutable.
class TextFolderSource final : public ExampleSource {
 public:
  // The files' ids: file i's at ids[starts[i] .. starts[i + 1]); `ids` and
  // `starts` empty: read as training goes, tokenized with `vocabulary`.
  TextFolderSource(std::vector<std::pair<std::string, float>> files, std::vector<int32_t> ids,
                   std::vector<int64_t> starts, TokenVocabularyPtr vocabulary, int64_t length, std::string name,
                   std::string summary, std::vector<std::string> classes)
      : files_(std::move(files)),
        ids_(std::move(ids)),
        starts_(std::move(starts)),
        vocabulary_(std::move(vocabulary)),
        length_(length),
        name_(std::move(name)),
        summary_(std::move(summary)),
        classes_(std::move(classes)) {}

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Shape feature_shape() const override { return {length_}; }
  Shape label_shape() const override { return {}; }
  std::string describe() const override { return name_; }
  std::string summary() const override { return summary_; }
  std::vector<std::string> class_names() const override { return classes_; }
  DType feature_dtype() const override { return kTokenDType; }
  std::string locate(int64_t id, const ExampleValue&) const override {
    return id >= 0 && id < size() ? files_[static_cast<size_t>(id)].first : "";
  }

  // `scale` is 1 (the loader rejects any other).
  Batch gather(const std::vector<int64_t>& indices, float) const override {
    const auto b = static_cast<int64_t>(indices.size());
    Batch out{token_tensor({b, length_}), Tensor(Shape{b}), indices};
    for (int64_t r = 0; r < b; ++r) {
      const auto i = static_cast<size_t>(indices[static_cast<size_t>(r)]);
      // token_tensor is zeros: <pad> after the file's ids.
      if (!starts_.empty()) {
        put_tokens(out.features, r * length_, ids_.data() + starts_[i], starts_[i + 1] - starts_[i]);
      } else {
        auto tokens = read_text_file_tokens(files_[i].first, vocabulary_->text_tokenizer());
        if (!tokens) throw ErrorException{tokens.error()};
        const std::vector<int32_t> ids = token_ids(*vocabulary_, *tokens, length_);
        put_tokens(out.features, r * length_, ids.data(), length_);
      }
      out.labels.data()[r] = files_[i].second;
    }
    return out;
  }

 private:
  const std::vector<std::pair<std::string, float>> files_;  // path, class id
  const std::vector<int32_t> ids_;     // every file's ids (at most length each), file after file
  const std::vector<int64_t> starts_;  // file i's at [starts_[i], starts_[i + 1]); empty: read as training goes
  const TokenVocabularyPtr vocabulary_;
  const int64_t length_;
  const std::string name_, summary_;
  const std::vector<std::string> classes_;
};

}  // namespace

Status check_tokenizer_keys(const DataSourceSpec& spec, const std::string& prefix) {
  const auto tokenizer = parse_tokenizer(spec.tokenizer);
  if (!tokenizer) {
    return config_error(prefix + "tokenizer \"" + spec.tokenizer + "\" is not one of word, char, sentencepiece");
  }
  if (*tokenizer == Tokenizer::kSentencePiece) {
    if (spec.sentencepiece_model.empty()) {
      return config_error(prefix + "tokenizer sentencepiece needs sentencepiece_model (a .model file; train one with "
                                   "`dtrain data sentencepiece --dir DIR --vocab-size N --out m.model`)");
    }
    if (spec.max_tokens || spec.min_count != 1) {
      return config_error(prefix + "max_tokens and min_count do not apply to tokenizer sentencepiece: the model's "
                                   "pieces are the vocabulary (set its size with dtrain data sentencepiece "
                                   "--vocab-size); remove them");
    }
  } else if (!spec.sentencepiece_model.empty()) {
    return config_error(fmt::format("{}sentencepiece_model applies to tokenizer sentencepiece, not {}; remove it or "
                                    "set tokenizer: sentencepiece",
                                    prefix, spec.tokenizer));
  }
  return Status::Ok();
}

Result<TextTokenizer> load_text_tokenizer(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (Status s = check_tokenizer_keys(spec, ctx.prefix); !s) return s.error();
  TextTokenizer t{*parse_tokenizer(spec.tokenizer)};
  if (t.kind != Tokenizer::kSentencePiece) return t;
  auto model = SentencePieceModel::load(resolve_source_path(spec.sentencepiece_model, ctx.base_dir));
  if (!model) return Error{model.error().kind, ctx.prefix + "sentencepiece_model: " + model.error().message};
  if ((*model)->size() + 2 > kMaxTokenVocabulary) {
    return data_error(fmt::format("{}sentencepiece_model {}: {} pieces, more than token ids hold ({})", ctx.prefix,
                                  spec.sentencepiece_model, (*model)->size(), kMaxTokenVocabulary));
  }
  t.sentencepiece = *model;
  return t;
}

Result<ClassFolderFiles> list_text_folder_files(const DataSourceSpec& spec, const SourceContext& ctx,
                                                const std::string& split) {
  return list_class_folders(spec, ctx, split,
                            ClassFolderKind{&is_text_file_name, ".txt files", "neg/*.txt and {dir}/pos/*.txt"});
}

bool is_text_file_name(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".txt";
}

Result<std::vector<std::string>> read_text_file_tokens(const std::string& path, const TextTokenizer& tokenizer) {
  auto bytes = io::read_whole_file(path, ErrorKind::kData);
  if (!bytes) return bytes.error();
  std::vector<uint32_t> text;
  Utf8Problem problem;
  if (!decode_utf8(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), text, &problem)) {
    return data_error(fmt::format("{}: invalid UTF-8 at byte offset {}: {}; text_folder reads UTF-8 text files", path,
                                  problem.offset, problem.reason));
  }
  std::string_view utf8(*bytes);
  if (!text.empty() && text[0] == 0xfeff) {
    text.erase(text.begin());
    utf8.remove_prefix(3);
  }
  return tokenizer.tokens(utf8, text);
}

Result<TokenVocabularyPtr> build_text_folder_vocabulary(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (Status s = check_spec(spec, ctx.prefix); !s) return s.error();
  auto loaded = load_text_tokenizer(spec, ctx);
  if (!loaded) return loaded.error();
  const Tokenizer tokenizer = loaded->kind;
  if (tokenizer == Tokenizer::kSentencePiece) {
    return TokenVocabularyPtr(std::make_shared<const TokenVocabulary>(loaded->sentencepiece));
  }
  auto listed = list_files(spec, ctx, "train");
  if (!listed) return listed.error();
  std::map<std::string, int64_t> counts;
  for (const auto& files : listed->files) {
    for (const std::string& path : files) {
      auto tokens = read_text_file_tokens(path, TextTokenizer{tokenizer});
      if (!tokens) return tokens.error();
      for (const std::string& t : *tokens) ++counts[t];
    }
  }
  auto v = TokenVocabulary::from_counts(tokenizer, counts, spec.max_tokens.value_or(0), spec.min_count);
  if (v.size() > kMaxTokenVocabulary) {
    return data_error(fmt::format("{}dir {}: the vocabulary has {} ids, more than token ids hold ({}); set max_tokens",
                                  ctx.prefix, listed->dir, v.size(), kMaxTokenVocabulary));
  }
  return TokenVocabularyPtr(std::make_shared<const TokenVocabulary>(std::move(v)));
}

Result<std::vector<std::string>> text_folder_class_names(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (Status s = check_spec(spec, ctx.prefix); !s) return s.error();
  auto listed = list_files(spec, ctx, "train");
  if (!listed) return listed.error();
  return std::move(listed->classes);
}

std::optional<ExampleShapes> text_folder_shapes(const DataSourceSpec& spec) {
  if (spec.max_length < 1) return std::nullopt;
  return ExampleShapes{{spec.max_length}, {}, kTokenDType};
}

Result<SourcePtr> load_text_folder_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (Status s = check_spec(spec, ctx.prefix); !s) return s.error();
  TokenVocabularyPtr vocabulary = ctx.tokens;
  if (vocabulary && vocabulary->tokenizer() != *parse_tokenizer(spec.tokenizer)) {
    return config_error(fmt::format("{}tokenizer {} does not match the vocabulary of the model, built with tokenizer {}",
                                    ctx.prefix, spec.tokenizer, tokenizer_name(vocabulary->tokenizer())));
  }
  if (!vocabulary) {
    auto built = build_text_folder_vocabulary(spec, ctx);
    if (!built) return built.error();
    vocabulary = *built;
  }
  const TextTokenizer& tokenizer = vocabulary->text_tokenizer();
  auto listed = list_files(spec, ctx, spec.split);
  if (!listed) return listed.error();
  const int64_t length = spec.max_length;
  std::vector<std::pair<std::string, float>> files;  // path, class id
  std::string counts;  // "0 neg (45), 1 pos (45)"
  int64_t bytes = 0;
  for (size_t k = 0; k < listed->files.size(); ++k) {
    for (const std::string& path : listed->files[k]) {
      files.emplace_back(path, static_cast<float>(k));
      std::error_code ec;
      bytes += static_cast<int64_t>(fs::file_size(path, ec));
    }
    counts += fmt::format("{}{} {} ({})", k == 0 ? "" : ", ", k, listed->classes[k], listed->files[k].size());
  }
  const auto n = static_cast<int64_t>(files.size());
  const std::string head = fmt::format("text_folder {}: {} files{} in {} classes: {}; ", listed->dir, n,
                                       spec.holdout > 0 ? fmt::format(" ({} split)", spec.split) : "",
                                       listed->classes.size(), counts);
  std::vector<int32_t> ids;
  std::vector<int64_t> starts;
  std::string summary;
  if (reads_as_training_goes(spec, bytes)) {
    summary = head + fmt::format("read and tokenized ({}) as training goes, padded or truncated to {}; vocabulary {} "
                                 "ids",
                                 tokenizer_name(tokenizer.kind), length, vocabulary->size());
  } else {
    starts.push_back(0);
    int64_t tokens_total = 0, truncated = 0, unknown = 0;
    for (const auto& file : files) {
      auto tokens = read_text_file_tokens(file.first, tokenizer);
      if (!tokens) return tokens.error();
      tokens_total += static_cast<int64_t>(tokens->size());
      truncated += static_cast<int64_t>(tokens->size()) > length ? 1 : 0;
      const std::vector<int32_t> row = token_ids(*vocabulary, *tokens, length, &unknown);
      const auto kept = static_cast<std::ptrdiff_t>(std::min<size_t>(tokens->size(), static_cast<size_t>(length)));
      ids.insert(ids.end(), row.begin(), row.begin() + kept);
      starts.push_back(static_cast<int64_t>(ids.size()));
    }
    summary = head + fmt::format("{} {} tokens, {:.1f} per file, padded or truncated to {} ({} truncated); vocabulary "
                                 "{} ids (<pad>, <unk> + {} {} tokens)",
                                 tokens_total, tokenizer_name(tokenizer.kind),
                                 static_cast<double>(tokens_total) / static_cast<double>(n), length, truncated,
                                 vocabulary->size(), vocabulary->tokens().size(),
                                 tokenizer_name(vocabulary->tokenizer()));
    if (unknown > 0) summary += fmt::format(", {} tokens read as <unk>", unknown);
  }
  return SourcePtr(std::make_shared<TextFolderSource>(std::move(files), std::move(ids), std::move(starts),
                                                      std::move(vocabulary), length, listed->dir, std::move(summary),
                                                      std::move(listed->classes)));
}

}  // namespace dtrain
