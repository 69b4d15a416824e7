// The vocabulary of the text source: the sorted distinct units (bytes or
// Unicode code points) of the training text, ids 0 .. V-1 in that order, then
// <unk> (id V) for units of other text that are not in it. Saved with the
// model as JSON (model_dir/vocab.json) so that ids never change.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

enum class TextUnit { kChar, kByte };

std::optional<TextUnit> parse_text_unit(std::string_view name);  // "char" | "byte"
const char* text_unit_name(TextUnit unit);
const char* text_unit_plural(TextUnit unit);  // "chars" | "bytes", for messages

// Immutable after construction; safe to share between threads.
class TextVocabulary {
 public:
  // `units`: any units, in any order, repeats allowed (they are sorted and
  // made distinct). `files`: what it was built from (recorded, for messages).
  TextVocabulary(TextUnit unit, std::vector<uint32_t> units, std::vector<std::string> files);

  TextUnit unit() const { return unit_; }
  const std::vector<uint32_t>& symbols() const { return symbols_; }  // ascending, distinct
  const std::vector<std::string>& files() const { return files_; }
  int64_t size() const { return static_cast<int64_t>(symbols_.size()) + 1; }  // with <unk>
  int32_t unk_id() const { return static_cast<int32_t>(symbols_.size()); }
  // The id of `unit`: its index in symbols(), or unk_id() when absent.
  int32_t id(uint32_t unit) const;
  // How messages show a symbol: 'a', '\n', U+00E9 'é' (char) or 0x0a (byte).
  std::string show(uint32_t unit) const;

 private:
  TextUnit unit_;
  std::vector<uint32_t> symbols_;
  std::vector<std::string> files_;
};

using VocabularyPtr = std::shared_ptr<const TextVocabulary>;

// The JSON form (symbols as strings for char, as numbers for byte):
//   {"dtrain_vocabulary": 1, "unit": "char", "size": 66, "unk_id": 65,
//    "files": ["/usr/share/common-licenses/GPL-3"], "symbols": ["\n", " ", ...]}
std::string vocabulary_json(const TextVocabulary& v);
// Parses vocabulary_json's form; anything else is a kData error starting "<where>: ".
Result<TextVocabulary> parse_vocabulary_json(const std::string& text, const std::string& where);

// Writes `v` to `path` atomically (a temporary file, fsynced, renamed over it).
Status write_vocabulary_file(const std::string& path, const TextVocabulary& v);
// Reads a file written by write_vocabulary_file (kData errors name the path).
Result<TextVocabulary> read_vocabulary_file(const std::string& path);

// "" when `a` and `b` give every unit the same id (same unit and symbols; the
// files they were built from may differ); else what differs, naming them
// `a_name` and `b_name`, e.g. "model_dir/vocab.json has 65 chars, data.train's
// files 67: 2 not in model_dir/vocab.json ('é', 'ß')" or "model_dir/vocab.json
// has unit byte, data.train's files unit char".
std::string vocabulary_difference(const TextVocabulary& a, const std::string& a_name, const TextVocabulary& b,
                                  const std::string& b_name);

}  // namespace dtrain
