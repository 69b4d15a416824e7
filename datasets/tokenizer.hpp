// Tokenizers of text classification data (format text_folder) and the
// vocabulary of their tokens: char (every Unicode character a token), word
// (lower-cased, split into runs of letters, digits and inner apostrophes) or
// sentencepiece (the subword pieces of a trained SentencePiece model). The
// vocabulary is built from data.train's training files (sentencepiece: the
// model's pieces) and saved with the model (model_dir/token_vocab.json, and
// the SentencePiece model beside it) so that ids never change under it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "datasets/sentencepiece.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

enum class Tokenizer { kChar, kWord, kSentencePiece };

std::optional<Tokenizer> parse_tokenizer(std::string_view name);  // "char" | "word" | "sentencepiece"
const char* tokenizer_name(Tokenizer t);

// The lower case of one code point: ASCII A-Z, Latin-1 (U+00C0-U+00DE but
// U+00D7), Latin Extended-A (U+0100-U+017F, U+0178 -> U+00FF), Greek
// (U+0391-U+03AB) and Cyrillic (U+0400-U+042F); any other code point as it is.
uint32_t lower_code_point(uint32_t cp);

// Whether a code point belongs to a word: ASCII letters and digits, and every
// code point above U+007F but the Latin-1 punctuation and symbols
// (U+0080-U+00BF, U+00D7, U+00F7), general punctuation and spaces
// (U+2000-U+206F) and CJK punctuation (U+3000-U+303F).
bool is_word_code_point(uint32_t cp);

// The tokens of decoded text (code points):
//   char: each code point, as its UTF-8 bytes;
//   word: the text lower-cased (lower_code_point), then every maximal run of
//         word code points and apostrophes (' and U+2019, read as ') with the
//         apostrophes at its ends removed; everything else separates. E.g.
//         "Don't STOP -- it's 3pm!" -> don't, stop, it's, 3pm.
// REQUIRES: t is kChar or kWord.
std::vector<std::string> tokenize(Tokenizer t, const std::vector<uint32_t>& text);

// A tokenizer ready to use: its kind and, for sentencepiece, its model.
struct TextTokenizer {
  Tokenizer kind = Tokenizer::kWord;
  SentencePieceModelPtr sentencepiece = nullptr;  // REQUIRED for kSentencePiece

  // The tokens of `text` (valid UTF-8, no BOM), whose code points are
  // `code_points`: tokenize() for char and word, the model's pieces for
  // sentencepiece.
  std::vector<std::string> tokens(std::string_view text, const std::vector<uint32_t>& code_points) const;
};

// Token ids: 0 <pad>, 1 <unk>, then the tokens. Immutable after
// construction; safe to share between threads.
class TokenVocabulary {
 public:
  static constexpr int32_t kPad = 0, kUnk = 1;

  // `tokens`: the ids 2, 3, ... in order (distinct; not <pad> or <unk>).
  // REQUIRES: tokenizer is kChar or kWord.
  TokenVocabulary(Tokenizer tokenizer, std::vector<std::string> tokens);
  // A SentencePiece model's vocabulary: <pad>, <unk>, then its pieces()
  // (its unknown piece reads as <unk>). REQUIRES: model != nullptr.
  explicit TokenVocabulary(SentencePieceModelPtr model);

  // From token counts: the tokens seen at least min_count times, by count
  // descending, ties by token (byte order), cut so that the vocabulary has at
  // most max_tokens ids (<pad> and <unk> included; 0 = no cap).
  // REQUIRES: max_tokens == 0 or >= 2.
  static TokenVocabulary from_counts(Tokenizer tokenizer, const std::map<std::string, int64_t>& counts,
                                     int64_t max_tokens, int64_t min_count);

  Tokenizer tokenizer() const { return tokenizer_.kind; }
  const TextTokenizer& text_tokenizer() const { return tokenizer_; }
  const std::vector<std::string>& tokens() const { return tokens_; }  // ids 2 ..
  int64_t size() const { return static_cast<int64_t>(tokens_.size()) + 2; }
  int32_t id(const std::string& token) const;  // kUnk when absent

 private:
  TextTokenizer tokenizer_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
};

using TokenVocabularyPtr = std::shared_ptr<const TokenVocabulary>;

// The JSON form: {"dtrain_token_vocabulary": 1, "tokenizer": "word",
// "size": 5012, "tokens": ["<pad>", "<unk>", "the", ...]} (index = id); a
// sentencepiece vocabulary also names its model's file, beside the JSON:
// "sentencepiece_model": "sentencepiece.model".
std::string token_vocabulary_json(const TokenVocabulary& v);
// The file name of a sentencepiece vocabulary's model, beside its JSON.
inline constexpr const char* kSentencePieceModelFile = "sentencepiece.model";
// Parses that form; anything else is a kData error starting "<where>: ". A
// sentencepiece vocabulary needs its model (`model`, whose pieces must be the
// listed tokens); the others ignore it.
Result<TokenVocabulary> parse_token_vocabulary_json(const std::string& text, const std::string& where,
                                                    SentencePieceModelPtr model = nullptr);
// Atomic write (temporary file, fsync, rename; a sentencepiece vocabulary's
// model first, beside it) and read (with the model named in the file); kData
// errors name the path.
Status write_token_vocabulary_file(const std::string& path, const TokenVocabulary& v);
Result<TokenVocabulary> read_token_vocabulary_file(const std::string& path);

// ids of `tokens` padded with kPad or truncated to `length`. REQUIRES: length >= 1.
std::vector<int32_t> token_ids(const TokenVocabulary& v, const std::vector<std::string>& tokens, int64_t length,
                               int64_t* unknown = nullptr);

}  // namespace dtrain
