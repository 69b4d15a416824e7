// Tokenizers (char, word), the token vocabulary and its JSON file
// (datasets/tokenizer.hpp).
#include "datasets/tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "datasets/utf8.hpp"
#include "engine/io/file_util.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

constexpr int kFormatVersion = 1;
constexpr const char* kPadToken = "<pad>";
constexpr const char* kUnkToken = "<unk>";

bool is_apostrophe(uint32_t cp) { return cp == '\'' || cp == 0x2019; }

}  // namespace

std::optional<Tokenizer> parse_tokenizer(std::string_view name) {
  if (name == "char") return Tokenizer::kChar;
  if (name == "word") return Tokenizer::kWord;
  if (name == "sentencepiece") return Tokenizer::kSentencePiece;
  return std::nullopt;
}

const char* tokenizer_name(Tokenizer t) {
  switch (t) {
    case Tokenizer::kChar: return "char";
    case Tokenizer::kWord: return "word";
    case Tokenizer::kSentencePiece: return "sentencepiece";
  }
  return "word";
}

uint32_t lower_code_point(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0xc0) return cp;
  if (cp <= 0xde) return cp == 0xd7 ? cp : cp + 32;
  if (cp == 0x178) return 0xff;
  if (cp >= 0x100 && cp <= 0x137) return cp % 2 == 0 ? cp + 1 : cp;
  if (cp >= 0x139 && cp <= 0x148) return cp % 2 == 1 ? cp + 1 : cp;
  if (cp >= 0x14a && cp <= 0x177) return cp % 2 == 0 ? cp + 1 : cp;
  if (cp >= 0x179 && cp <= 0x17e) return cp % 2 == 1 ? cp + 1 : cp;
  if (cp >= 0x391 && cp <= 0x3ab && cp != 0x3a2) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40f) return cp + 80;
  if (cp >= 0x410 && cp <= 0x42f) return cp + 32;
  return cp;
}

bool is_word_code_point(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9');
  if (cp <= 0xbf || cp == 0xd7 || cp == 0xf7) return false;
  if (cp >= 0x2000 && cp <= 0x206f) return false;
  if (cp >= 0x3000 && cp <= 0x303f) return false;
  return true;
}

std::vector<std::string> tokenize(Tokenizer t, const std::vector<uint32_t>& text) {
  std::vector<std::string> out;
  if (t == Tokenizer::kChar) {
    out.reserve(text.size());
    for (uint32_t cp : text) out.push_back(encode_utf8(cp));
    return out;
  }
  std::string word;
  auto flush = [&] {
    // Apostrophes at the ends of a run are quotes, not part of the word.
    size_t b = 0, e = word.size();
    while (b < e && word[b] == '\'') ++b;
    while (e > b && word[e - 1] == '\'') --e;
    if (e > b) out.push_back(word.substr(b, e - b));
    word.clear();
  };
  for (uint32_t cp : text) {
    if (is_apostrophe(cp)) {
      word += '\'';
    } else if (is_word_code_point(cp)) {
      word += encode_utf8(lower_code_point(cp));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

std::vector<std::string> TextTokenizer::tokens(std::string_view text, const std::vector<uint32_t>& code_points) const {
  if (kind == Tokenizer::kSentencePiece) return sentencepiece->encode(text);
  return tokenize(kind, code_points);
}

TokenVocabulary::TokenVocabulary(Tokenizer tokenizer, std::vector<std::string> tokens)
    : tokenizer_{tokenizer, nullptr}, tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) ids_.emplace(tokens_[i], static_cast<int32_t>(i + 2));
}

TokenVocabulary::TokenVocabulary(SentencePieceModelPtr model)
    : tokenizer_{Tokenizer::kSentencePiece, model}, tokens_(model->pieces()) {
  for (size_t i = 0; i < tokens_.size(); ++i) ids_.emplace(tokens_[i], static_cast<int32_t>(i + 2));
}

TokenVocabulary TokenVocabulary::from_counts(Tokenizer tokenizer, const std::map<std::string, int64_t>& counts,
                                             int64_t max_tokens, int64_t min_count) {
  std::vector<std::pair<int64_t, std::string>> ranked;
  for (const auto& kv : counts) {
    if (kv.second >= std::max<int64_t>(min_count, 1)) ranked.emplace_back(-kv.second, kv.first);
  }
  std::sort(ranked.begin(), ranked.end());
  if (max_tokens >= 2 && static_cast<int64_t>(ranked.size()) > max_tokens - 2) {
    ranked.resize(static_cast<size_t>(max_tokens - 2));
  }
  std::vector<std::string> tokens;
  tokens.reserve(ranked.size());
  for (auto& r : ranked) tokens.push_back(std::move(r.second));
  return TokenVocabulary(tokenizer, std::move(tokens));
}

int32_t TokenVocabulary::id(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? kUnk : it->second;
}

std::string token_vocabulary_json(const TokenVocabulary& v) {
  nlohmann::ordered_json tokens = nlohmann::ordered_json::array({kPadToken, kUnkToken});
  for (const std::string& t : v.tokens()) tokens.push_back(t);
  nlohmann::ordered_json j = {{"dtrain_token_vocabulary", kFormatVersion},
                              {"tokenizer", tokenizer_name(v.tokenizer())}};
  if (v.tokenizer() == Tokenizer::kSentencePiece) j["sentencepiece_model"] = kSentencePieceModelFile;
  j["size"] = v.size();
  j["tokens"] = tokens;
  return j.dump(1) + "\n";
}

Result<TokenVocabulary> parse_token_vocabulary_json(const std::string& text, const std::string& where,
                                                    SentencePieceModelPtr model) {
  auto bad = [&](const std::string& what) {
    return data_error(fmt::format("{}: not a dtrain token vocabulary file: {}", where, what));
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("invalid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("dtrain_token_vocabulary")) return bad("no \"dtrain_token_vocabulary\" key");
  if (j["dtrain_token_vocabulary"] != kFormatVersion) {
    return bad(fmt::format("version {} (this dtrain reads {})", j["dtrain_token_vocabulary"].dump(), kFormatVersion));
  }
  const auto tokenizer = j.contains("tokenizer") && j["tokenizer"].is_string()
                             ? parse_tokenizer(j["tokenizer"].get<std::string>())
                             : std::nullopt;
  if (!tokenizer) return bad("\"tokenizer\" is not \"char\", \"word\" or \"sentencepiece\"");
  if (!j.contains("tokens") || !j["tokens"].is_array()) return bad("no \"tokens\" list");
  const nlohmann::json& list = j["tokens"];
  if (list.size() < 2 || list[0] != kPadToken || list[1] != kUnkToken) {
    return bad("\"tokens\" does not start with \"<pad>\", \"<unk>\"");
  }
  std::vector<std::string> tokens;
  for (size_t i = 2; i < list.size(); ++i) {
    if (!list[i].is_string() || list[i].get<std::string>().empty()) {
      return bad(fmt::format("token {} is not a non-empty string: {}", i, list[i].dump()));
    }
    tokens.push_back(list[i].get<std::string>());
  }
  std::vector<std::string> sorted = tokens;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return bad("a token is listed twice");
  if (*tokenizer == Tokenizer::kSentencePiece) {
    if (model == nullptr) return bad("a sentencepiece vocabulary without its model");
    if (model->pieces() != tokens) {
      return bad(fmt::format("its tokens are not the pieces of its SentencePiece model ({} tokens, {} pieces)",
                             tokens.size(), model->pieces().size()));
    }
  }
  TokenVocabulary v = *tokenizer == Tokenizer::kSentencePiece ? TokenVocabulary(std::move(model))
                                                                : TokenVocabulary(*tokenizer, std::move(tokens));
  if (j.contains("size") && j["size"] != v.size()) {
    return bad(fmt::format("\"size\" is {} but \"tokens\" has {}", j["size"].dump(), v.size()));
  }
  return v;
}

Status write_token_vocabulary_file(const std::string& path, const TokenVocabulary& v) {
  if (v.tokenizer() == Tokenizer::kSentencePiece) {
    const std::string model = (fs::path(path).parent_path() / kSentencePieceModelFile).string();
    if (Status s = io::write_file_atomic(model, {v.text_tokenizer().sentencepiece->bytes()}); !s) return s;
  }
  return io::write_file_atomic(path, {token_vocabulary_json(v)});
}

Result<TokenVocabulary> read_token_vocabulary_file(const std::string& path) {
  auto text = io::read_whole_file(path, ErrorKind::kData);
  if (!text) return text.error();
  SentencePieceModelPtr model;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("tokenizer") && j["tokenizer"] == "sentencepiece") {
    const std::string name = j.contains("sentencepiece_model") && j["sentencepiece_model"].is_string()
                                 ? j["sentencepiece_model"].get<std::string>()
                                 : std::string(kSentencePieceModelFile);
    auto loaded = SentencePieceModel::load((fs::path(path).parent_path() / name).string());
    if (!loaded) return loaded.error();
    model = *loaded;
  }
  return parse_token_vocabulary_json(*text, path, std::move(model));
}

std::vector<int32_t> token_ids(const TokenVocabulary& v, const std::vector<std::string>& tokens, int64_t length,
                               int64_t* unknown) {
  std::vector<int32_t> ids(static_cast<size_t>(length), TokenVocabulary::kPad);
  const size_t n = std::min(tokens.size(), static_cast<size_t>(length));
  for (size_t i = 0; i < n; ++i) {
    ids[i] = v.id(tokens[i]);
    if (unknown != nullptr && ids[i] == TokenVocabulary::kUnk) ++*unknown;
  }
  return ids;
}

}  // namespace dtrain
