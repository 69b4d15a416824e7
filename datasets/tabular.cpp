// A csv source's fitted preprocessing and its JSON form (see tabular.hpp).
#include "datasets/tabular.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/io/file_util.hpp"

namespace dtrain {

namespace {

constexpr int kFormatVersion = 1;
constexpr size_t kShownClasses = 10;

// A fill written as a number ("0", "-1.5"); nullopt for anything else.
std::optional<float> fill_as_number(const std::string& s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return static_cast<float>(v);
}

std::string shown_list(const std::vector<std::string>& names) {
  std::vector<std::string> shown(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(
                                                                      std::min(names.size(), kShownClasses)));
  if (names.size() > kShownClasses) shown.push_back("...");
  return fmt::format("{}", fmt::join(shown, ", "));
}

}  // namespace

int32_t TabularColumn::id(std::string_view value) const {
  const auto it = ids_.find(std::string(value));
  return it == ids_.end() ? 0 : it->second;
}

void TabularColumn::index_categories() {
  ids_.clear();
  for (size_t k = 0; k < categories.size(); ++k) ids_.emplace(categories[k], static_cast<int32_t>(k + 1));
}

int64_t TabularColumn::width() const {
  if (text()) return max_length;
  if (category() && !category_id()) return static_cast<int64_t>(categories.size()) + 1;
  return 1;
}

int64_t TabularColumn::id_count() const {
  if (text()) return tokens ? tokens->size() : 0;
  return category_id() ? static_cast<int64_t>(categories.size()) + 1 : 0;
}

int64_t TabularPreprocessing::width() const {
  int64_t w = 0;
  for (const TabularColumn& c : columns) w += c.width();
  return w;
}

std::vector<std::string> TabularPreprocessing::inputs() const {
  std::vector<std::string> out;
  for (const TabularColumn& c : columns) {
    if (std::find(out.begin(), out.end(), c.spec.input) == out.end()) out.push_back(c.spec.input);
  }
  if (out.empty()) out.emplace_back();
  return out;
}

int64_t TabularPreprocessing::width(const std::string& input) const {
  int64_t w = 0;
  for (const TabularColumn& c : columns) w += c.spec.input == input ? c.width() : 0;
  return w;
}

int64_t TabularPreprocessing::id_count(const std::string& input) const {
  int64_t n = 0;
  for (const TabularColumn& c : columns) n = c.spec.input == input ? std::max(n, c.id_count()) : n;
  return n;
}

bool TabularPreprocessing::worth_saving() const {
  if (!classes.empty()) return true;
  return std::any_of(columns.begin(), columns.end(), [](const TabularColumn& c) {
    return c.category() || c.text() || !c.spec.fill.empty() || !c.spec.input.empty();
  });
}

std::string TabularPreprocessing::describe() const {
  std::vector<std::string> parts;
  for (const TabularColumn& c : columns) {
    if (c.text()) {
      parts.push_back(fmt::format("{} text ({} tokens, {} ids: <pad>, <unk> + {})", c.spec.name,
                                  tokenizer_name(c.tokens->tokenizer()), c.max_length, c.tokens->size() - 2));
    } else if (c.category()) {
      std::string fill;
      if (c.fill_id > 0) fill = fmt::format(", missing: \"{}\"", c.categories[static_cast<size_t>(c.fill_id - 1)]);
      parts.push_back(fmt::format("{} category{} ({} values + unknown{})", c.spec.name, c.category_id() ? " id" : "",
                                  c.categories.size(), fill));
    } else if (c.fill_number) {
      const bool fitted = c.spec.fill == "mean" || c.spec.fill == "median";
      parts.push_back(fitted ? fmt::format("{} number (fill {} {:.6g})", c.spec.name, c.spec.fill, *c.fill_number)
                             : fmt::format("{} number (fill {:.6g})", c.spec.name, *c.fill_number));
    } else {
      parts.push_back(c.spec.name + " number");
    }
  }
  std::string out = fmt::format("{} column{} -> {} feature{}: {}", columns.size(), columns.size() == 1 ? "" : "s",
                                width(), width() == 1 ? "" : "s", fmt::join(parts, ", "));
  if (!classes.empty()) {
    out += fmt::format("; label {}: {} classes ({})", label_column.empty() ? "(last column)" : "\"" + label_column + "\"",
                       classes.size(), shown_list(classes));
  }
  return out;
}

std::string tabular_difference(const TabularPreprocessing& p, const std::vector<CsvColumnSpec>& columns,
                               const std::string& label_column, const std::vector<std::string>& classes,
                               const std::string& saved_name) {
  auto show = [](const CsvColumnSpec& c) {
    std::string s = c.name + " (" + c.type;
    if (!c.fill.empty()) s += ", fill " + c.fill;
    if (c.max_categories) s += fmt::format(", max_categories {}", *c.max_categories);
    if (c.encoding != "one_hot") s += ", encoding " + c.encoding;
    if (!c.input.empty()) s += ", input " + c.input;
    return s + ")";
  };
  if (p.label_column != label_column) {
    return fmt::format("{} has label_column \"{}\", the job \"{}\"", saved_name, p.label_column, label_column);
  }
  if (!classes.empty() && classes != p.classes) {
    return fmt::format("{} has classes [{}], the job [{}]", saved_name, shown_list(p.classes), shown_list(classes));
  }
  if (columns.empty()) return "";  // all but the label, as numbers: the saved columns were found the same way
  if (columns.size() != p.columns.size()) {
    return fmt::format("{} has {} feature columns, the job {}", saved_name, p.columns.size(), columns.size());
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    if (!(columns[i] == p.columns[i].spec)) {
      return fmt::format("column {}: {} has {}, the job {}", i, saved_name, show(p.columns[i].spec), show(columns[i]));
    }
  }
  return "";
}

std::string tabular_text_difference(const TabularPreprocessing& p, const DataSourceSpec& spec,
                                    const std::string& saved_name) {
  for (const TabularColumn& c : p.columns) {
    if (!c.text()) continue;
    if (tokenizer_name(c.tokens->tokenizer()) != spec.tokenizer) {
      return fmt::format("text column {}: {} has tokenizer {}, the job {}", c.spec.name, saved_name,
                         tokenizer_name(c.tokens->tokenizer()), spec.tokenizer);
    }
    if (c.max_length != spec.max_length) {
      return fmt::format("text column {}: {} has max_length {}, the job {}", c.spec.name, saved_name, c.max_length,
                         spec.max_length);
    }
  }
  return "";
}

Status fit_number_column(TabularColumn& c, const NumberColumnStats& stats, const std::string& prefix) {
  const std::string& fill = c.spec.fill;
  if (fill.empty()) {
    c.fill_number.reset();
    return Status::Ok();
  }
  if (fill != "mean" && fill != "median") {
    c.fill_number = fill_as_number(fill);
    if (!c.fill_number) {
      return config_error(fmt::format("{}columns: {}: fill \"{}\" is not mean, median or a number", prefix,
                                      c.spec.name, fill));
    }
    return Status::Ok();
  }
  if (stats.present == 0) {
    return config_error(fmt::format("{}columns: {}: fill {} needs values, but every value of the column in "
                                    "data.train is missing; give a number as fill",
                                    prefix, c.spec.name, fill));
  }
  if (fill == "mean") {
    c.fill_number = static_cast<float>(stats.sum / static_cast<double>(stats.present));
  } else {
    std::vector<double> present(stats.values.begin(), stats.values.end());
    std::sort(present.begin(), present.end());
    const size_t n = present.size();
    c.fill_number = static_cast<float>(n % 2 == 1 ? present[n / 2] : (present[n / 2 - 1] + present[n / 2]) / 2);
  }
  return Status::Ok();
}

void fit_category_column(TabularColumn& c, const std::vector<std::pair<std::string, int64_t>>& counts) {
  std::vector<std::pair<std::string, int64_t>> sorted = counts;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (c.spec.max_categories && static_cast<int64_t>(sorted.size()) > *c.spec.max_categories) {
    sorted.resize(static_cast<size_t>(*c.spec.max_categories));
  }
  c.categories.clear();
  for (const auto& [value, count] : sorted) c.categories.push_back(value);
  c.index_categories();
  if (c.spec.fill.empty()) {
    c.fill_id = 0;
  } else if (c.spec.fill == "most_frequent") {
    c.fill_id = c.categories.empty() ? 0 : 1;
  } else {
    c.fill_id = c.id(c.spec.fill);
  }
}

void fit_text_column(TabularColumn& c, const std::map<std::string, int64_t>& counts, const DataSourceSpec& spec,
                     const TextTokenizer& tokenizer) {
  c.max_length = spec.max_length;
  if (tokenizer.kind == Tokenizer::kSentencePiece) {
    c.tokens = std::make_shared<const TokenVocabulary>(tokenizer.sentencepiece);
    return;
  }
  c.tokens = std::make_shared<const TokenVocabulary>(
      TokenVocabulary::from_counts(tokenizer.kind, counts, spec.max_tokens.value_or(0), spec.min_count));
}

std::string tabular_json(const TabularPreprocessing& p) {
  nlohmann::ordered_json j;
  j["dtrain_preprocessing"] = kFormatVersion;
  j["format"] = "csv";
  j["file"] = p.file;
  nlohmann::ordered_json columns = nlohmann::ordered_json::array();
  for (const TabularColumn& c : p.columns) {
    nlohmann::ordered_json cj;
    cj["name"] = c.spec.name;
    cj["type"] = c.spec.type;
    if (!c.spec.fill.empty()) cj["fill"] = c.spec.fill;
    if (c.spec.max_categories) cj["max_categories"] = *c.spec.max_categories;
    if (c.spec.encoding != "one_hot") cj["encoding"] = c.spec.encoding;
    if (!c.spec.input.empty()) cj["input"] = c.spec.input;
    if (c.text()) {
      cj["max_length"] = c.max_length;
      cj["vocabulary"] = nlohmann::ordered_json::parse(token_vocabulary_json(*c.tokens));
    } else if (c.category()) {
      cj["categories"] = c.categories;
      cj["fill_id"] = c.fill_id;
    } else if (c.fill_number) {
      cj["fill_value"] = *c.fill_number;
    }
    columns.push_back(cj);
  }
  j["columns"] = columns;
  j["label"] = {{"column", p.label_column}, {"classes", p.classes}};
  return j.dump(1) + "\n";
}

Result<TabularPreprocessing> parse_tabular_json(const std::string& text, const std::string& where,
                                                SentencePieceModelPtr model) {
  auto bad = [&](const std::string& what) {
    return data_error(fmt::format("{}: not a dtrain preprocessing file: {}", where, what));
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("invalid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("dtrain_preprocessing")) return bad("no \"dtrain_preprocessing\" key");
  if (j["dtrain_preprocessing"] != kFormatVersion) {
    return bad(fmt::format("version {} (this dtrain reads {})", j["dtrain_preprocessing"].dump(), kFormatVersion));
  }
  TabularPreprocessing p;
  try {
    if (j.value("format", "") != "csv") return bad("\"format\" is not \"csv\"");
    p.file = j.value("file", "");
    if (!j.contains("columns") || !j["columns"].is_array()) return bad("no \"columns\" list");
    for (const nlohmann::json& cj : j["columns"]) {
      TabularColumn c;
      c.spec.name = cj.at("name").get<std::string>();
      c.spec.type = cj.at("type").get<std::string>();
      if (c.spec.type != "number" && c.spec.type != "category" && c.spec.type != "text") {
        return bad("a column's type is " + cj["type"].dump());
      }
      c.spec.fill = cj.value("fill", "");
      if (cj.contains("max_categories")) c.spec.max_categories = cj["max_categories"].get<int64_t>();
      c.spec.encoding = cj.value("encoding", "one_hot");
      c.spec.input = cj.value("input", "");
      if (c.text()) {
        c.max_length = cj.at("max_length").get<int64_t>();
        if (c.max_length < 1) return bad(fmt::format("column {}: max_length {} is not at least 1", c.spec.name, c.max_length));
        auto v = parse_token_vocabulary_json(cj.at("vocabulary").dump(), where + ": column " + c.spec.name, model);
        if (!v) return v.error();
        c.tokens = std::make_shared<const TokenVocabulary>(std::move(*v));
      } else if (c.category()) {
        c.categories = cj.at("categories").get<std::vector<std::string>>();
        c.fill_id = cj.value("fill_id", 0);
        if (c.fill_id < 0 || c.fill_id > static_cast<int32_t>(c.categories.size())) {
          return bad(fmt::format("column {}: fill_id {} is not an id", c.spec.name, c.fill_id));
        }
        c.index_categories();
      } else if (cj.contains("fill_value")) {
        c.fill_number = cj["fill_value"].get<float>();
      }
      p.columns.push_back(std::move(c));
    }
    const nlohmann::json& label = j.at("label");
    p.label_column = label.value("column", "");
    p.classes = label.value("classes", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  return p;
}

Status write_tabular_file(const std::string& path, const TabularPreprocessing& p) {
  for (const TabularColumn& c : p.columns) {
    if (c.text() && c.tokens->tokenizer() == Tokenizer::kSentencePiece) {
      const std::string model = (std::filesystem::path(path).parent_path() / kSentencePieceModelFile).string();
      if (Status s = io::write_file_atomic(model, {c.tokens->text_tokenizer().sentencepiece->bytes()}); !s) return s;
      break;  // one model for every text column (data.*.sentencepiece_model)
    }
  }
  const std::string text = tabular_json(p);
  return io::write_file_atomic(path, {text});
}

Result<TabularPreprocessing> read_tabular_file(const std::string& path) {
  auto text = io::read_whole_file(path, ErrorKind::kData);
  if (!text) return text.error();
  SentencePieceModelPtr model;
  if (text->find("\"sentencepiece_model\"") != std::string::npos) {
    auto loaded = SentencePieceModel::load((std::filesystem::path(path).parent_path() / kSentencePieceModelFile).string());
    if (!loaded) return loaded.error();
    model = *loaded;
  }
  return parse_tabular_json(*text, path, std::move(model));
}

}  // namespace dtrain
