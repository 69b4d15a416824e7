// TextVocabulary, its JSON file and the comparison of two vocabularies.
#include "datasets/text_vocab.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "datasets/utf8.hpp"
#include "engine/io/file_util.hpp"

namespace dtrain {

namespace {

constexpr int kFormatVersion = 1;  // "dtrain_vocabulary" in the JSON

// At most this many symbols are listed in a difference.
constexpr size_t kShownSymbols = 8;

bool valid_code_point(int64_t cp) { return cp >= 0 && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff); }

// The elements of `a` not in `b` (both ascending, distinct).
std::vector<uint32_t> missing_from(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<uint32_t> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

std::optional<TextUnit> parse_text_unit(std::string_view name) {
  if (name == "char") return TextUnit::kChar;
  if (name == "byte") return TextUnit::kByte;
  return std::nullopt;
}

const char* text_unit_name(TextUnit unit) { return unit == TextUnit::kChar ? "char" : "byte"; }
const char* text_unit_plural(TextUnit unit) { return unit == TextUnit::kChar ? "chars" : "bytes"; }

TextVocabulary::TextVocabulary(TextUnit unit, std::vector<uint32_t> units, std::vector<std::string> files)
    : unit_(unit), symbols_(std::move(units)), files_(std::move(files)) {
  std::sort(symbols_.begin(), symbols_.end());
  symbols_.erase(std::unique(symbols_.begin(), symbols_.end()), symbols_.end());
}

int32_t TextVocabulary::id(uint32_t unit) const {
  const auto it = std::lower_bound(symbols_.begin(), symbols_.end(), unit);
  return it != symbols_.end() && *it == unit ? static_cast<int32_t>(it - symbols_.begin()) : unk_id();
}

std::string TextVocabulary::show(uint32_t unit) const {
  if (unit_ == TextUnit::kByte) return fmt::format("0x{:02x}", unit);
  switch (unit) {
    case '\n': return "'\\n'";
    case '\t': return "'\\t'";
    case '\r': return "'\\r'";
    default: break;
  }
  if (unit < 0x20 || unit == 0x7f) return fmt::format("U+{:04X}", unit);
  if (unit < 0x80) return fmt::format("'{}'", static_cast<char>(unit));
  return fmt::format("U+{:04X} '{}'", unit, encode_utf8(unit));
}

std::string vocabulary_json(const TextVocabulary& v) {
  nlohmann::ordered_json symbols = nlohmann::ordered_json::array();
  for (uint32_t s : v.symbols()) {
    if (v.unit() == TextUnit::kChar) symbols.push_back(encode_utf8(s));
    else symbols.push_back(s);
  }
  const nlohmann::ordered_json j = {{"dtrain_vocabulary", kFormatVersion}, {"unit", text_unit_name(v.unit())},
                                    {"size", v.size()},                    {"unk_id", v.unk_id()},
                                    {"files", v.files()},                  {"symbols", symbols}};
  return j.dump(1) + "\n";
}

Result<TextVocabulary> parse_vocabulary_json(const std::string& text, const std::string& where) {
  auto bad = [&](const std::string& what) {
    return data_error(fmt::format("{}: not a dtrain vocabulary file: {}", where, what));
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("invalid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("dtrain_vocabulary")) return bad("no \"dtrain_vocabulary\" key");
  if (j["dtrain_vocabulary"] != kFormatVersion) {
    return bad(fmt::format("version {} (this dtrain reads {})", j["dtrain_vocabulary"].dump(), kFormatVersion));
  }
  const auto unit = j.contains("unit") && j["unit"].is_string() ? parse_text_unit(j["unit"].get<std::string>())
                                                                 : std::nullopt;
  if (!unit) return bad("\"unit\" is not \"char\" or \"byte\"");
  if (!j.contains("symbols") || !j["symbols"].is_array()) return bad("no \"symbols\" list");
  std::vector<uint32_t> symbols;
  for (const auto& s : j["symbols"]) {
    if (*unit == TextUnit::kByte) {
      if (!s.is_number_integer() || s.get<int64_t>() < 0 || s.get<int64_t>() > 255) {
        return bad("a byte symbol is not an integer 0..255: " + s.dump());
      }
      symbols.push_back(s.get<uint32_t>());
      continue;
    }
    std::vector<uint32_t> cps;
    Utf8Problem problem;
    const std::string str = s.is_string() ? s.get<std::string>() : std::string();
    if (!s.is_string() ||
        !decode_utf8(reinterpret_cast<const uint8_t*>(str.data()), str.size(), cps, &problem) || cps.size() != 1 ||
        !valid_code_point(cps[0])) {
      return bad("a char symbol is not one character: " + s.dump());
    }
    symbols.push_back(cps[0]);
  }
  if (!std::is_sorted(symbols.begin(), symbols.end()) ||
      std::adjacent_find(symbols.begin(), symbols.end()) != symbols.end()) {
    return bad("the symbols are not ascending and distinct");
  }
  std::vector<std::string> files;
  if (j.contains("files") && j["files"].is_array()) {
    for (const auto& f : j["files"]) {
      if (f.is_string()) files.push_back(f.get<std::string>());
    }
  }
  TextVocabulary v(*unit, std::move(symbols), std::move(files));
  if (j.contains("size") && j["size"] != v.size()) {
    return bad(fmt::format("\"size\" is {} but the symbols and <unk> make {}", j["size"].dump(), v.size()));
  }
  if (j.contains("unk_id") && j["unk_id"] != v.unk_id()) {
    return bad(fmt::format("\"unk_id\" is {}, expected {} (after the symbols)", j["unk_id"].dump(), v.unk_id()));
  }
  return v;
}

Status write_vocabulary_file(const std::string& path, const TextVocabulary& v) {
  const std::string text = vocabulary_json(v);
  return io::write_file_atomic(path, {text});
}

Result<TextVocabulary> read_vocabulary_file(const std::string& path) {
  auto text = io::read_whole_file(path, ErrorKind::kData);
  if (!text) return text.error();
  return parse_vocabulary_json(*text, path);
}

std::string vocabulary_difference(const TextVocabulary& a, const std::string& a_name, const TextVocabulary& b,
                                  const std::string& b_name) {
  if (a.unit() != b.unit()) {
    return fmt::format("{} has unit {}, {} unit {}", a_name, text_unit_name(a.unit()), b_name, text_unit_name(b.unit()));
  }
  if (a.symbols() == b.symbols()) return "";
  auto list = [&](const std::vector<uint32_t>& units, const std::string& where) {
    std::vector<std::string> shown;
    for (size_t i = 0; i < units.size() && i < kShownSymbols; ++i) shown.push_back(a.show(units[i]));
    if (units.size() > kShownSymbols) shown.push_back("...");
    return fmt::format("{} not in {} ({})", units.size(), where, fmt::join(shown, ", "));
  };
  std::vector<std::string> parts;
  if (auto only_b = missing_from(b.symbols(), a.symbols()); !only_b.empty()) parts.push_back(list(only_b, a_name));
  if (auto only_a = missing_from(a.symbols(), b.symbols()); !only_a.empty()) parts.push_back(list(only_a, b_name));
  return fmt::format("{} has {} {}, {} {}: {}", a_name, a.symbols().size(), text_unit_plural(a.unit()), b_name,
                     b.symbols().size(), fmt::join(parts, "; "));
}

}  // namespace dtrain
