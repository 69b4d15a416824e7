// parse_yaml: builds the Node tree from yaml-cpp parser events, keeping each
// node's position, and turns yaml-cpp exceptions into positioned Errors.
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "config_schema/yaml_tree.hpp"

namespace dtrain {
namespace {

// What a job file may hold, so that a file of aliases of aliases (a "billion
// laughs") or a runaway generator ends in a clear error at once instead of
// exhausting memory. Real jobs hold a few hundred nodes, a few levels deep.
constexpr size_t kMaxNodes = 100000;
constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxBytes = size_t{4} << 20;

// Thrown by the tree builder when the document passes a limit; parse_yaml
// turns it into a config error.
struct LimitExceeded {
  Location where;
  std::string what;
};

class TreeBuilder : public YAML::EventHandler {
 public:
  TreeBuilder(const std::string& source, std::string_view text) : source_(source), text_(text) {}

  std::optional<Node> root;
  std::optional<Issue> problem;  // a structural problem yaml-cpp accepts (e.g. a list as a key)
  Location document_start;

  // The innermost flow collection still open ("[" or "{") and where it began.
  std::optional<std::pair<char, Location>> open_flow() const {
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it)
      if (it->flow) return std::make_pair(it->node.is_sequence() ? '[' : '{', it->node.loc);
    return std::nullopt;
  }

  void OnDocumentStart(const YAML::Mark& mark) override { document_start = at(mark); }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    // yaml-cpp reports "null", "~" and an empty value alike; keep the spelling
    // of an explicit null so messages can say "null" rather than "an empty value".
    std::string spelled;
    if (!mark.is_null() && mark.pos >= 0 && static_cast<size_t>(mark.pos) < text_.size()) {
      const std::string_view rest = text_.substr(static_cast<size_t>(mark.pos));
      for (std::string_view word : {"null", "Null", "NULL", "~"}) {
        if (rest.substr(0, word.size()) != word) continue;
        const bool ends = rest.size() == word.size() ||
                          std::string_view(" \t\r\n,]}#").find(rest[word.size()]) != std::string_view::npos;
        if (ends) spelled = std::string(word);
      }
    }
    if (!spelled.empty()) {
      finish(Node::scalar(spelled, at(mark)), anchor, nodes_);
      return;
    }
    Location loc = at(mark);
    // yaml-cpp marks an empty mapping value at the next token; point at its key instead.
    if (!stack_.empty() && stack_.back().key && stack_.back().key->loc.line != loc.line) loc = stack_.back().key->loc;
    finish(Node::scalar("", loc), anchor, nodes_);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    const size_t size = it != anchors_.end() ? anchor_sizes_[anchor] : 1;
    if (nodes_ + size > kMaxNodes) {
      throw LimitExceeded{at(mark), "the alias " + alias_name(mark) + " expands the document past " +
                                        std::to_string(kMaxNodes) + " nodes; expected at most that (a job file "
                                        "holds a few hundred): check for aliases of aliases"};
    }
    nodes_ += size - 1;  // finish() counts the copy's root
    Node copy = it != anchors_.end() ? it->second : Node::scalar("", at(mark));
    copy.loc = at(mark);
    finish(std::move(copy), 0, nodes_);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    const bool is_string = tag == "!" || tag == "tag:yaml.org,2002:str";
    finish(Node::scalar(value, at(mark), is_string), anchor, nodes_);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value style) override {
    check_depth(mark);
    stack_.push_back({Node::sequence(at(mark)), anchor, style == YAML::EmitterStyle::Flow, std::nullopt, nodes_});
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    check_depth(mark);
    stack_.push_back({Node::mapping(at(mark)), anchor, style == YAML::EmitterStyle::Flow, std::nullopt, nodes_});
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    Node node;
    YAML::anchor_t anchor;
    bool flow;
    std::optional<Node> key;  // mapping: the key waiting for its value
    size_t first_node = 0;    // nodes_ when the collection opened
  };

  void check_depth(const YAML::Mark& mark) const {
    if (stack_.size() >= kMaxDepth) {
      throw LimitExceeded{at(mark), "collections nest deeper than " + std::to_string(kMaxDepth) +
                                        " levels; expected at most that (a job file needs a few)"};
    }
  }

  // "*name" as written at the alias's mark.
  std::string alias_name(const YAML::Mark& mark) const {
    if (mark.is_null() || mark.pos < 0 || static_cast<size_t>(mark.pos) >= text_.size()) return "here";
    const std::string_view rest = text_.substr(static_cast<size_t>(mark.pos));
    const size_t end = rest.find_first_of(" \t\r\n,]}#");
    return std::string(rest.substr(0, std::min<size_t>(end, 64)));
  }

  Location at(const YAML::Mark& mark) const {
    if (mark.is_null()) return {source_, 0, 0};
    return {source_, mark.line + 1, mark.column + 1};
  }

  void close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    finish(std::move(frame.node), frame.anchor, frame.first_node);
  }

  void finish(Node node, YAML::anchor_t anchor, size_t first_node) {
    ++nodes_;
    if (nodes_ > kMaxNodes) {
      throw LimitExceeded{node.loc, "the document holds more than " + std::to_string(kMaxNodes) +
                                        " nodes; expected at most that (a job file holds a few hundred)"};
    }
    if (anchor != 0) {
      anchors_[anchor] = node;
      anchor_sizes_[anchor] = nodes_ - first_node;
    }
    if (stack_.empty()) {
      root = std::move(node);
      return;
    }
    Frame& parent = stack_.back();
    if (parent.node.is_sequence()) {
      parent.node.items.push_back(std::move(node));
    } else if (!parent.key) {
      if (!node.is_scalar() && !problem)
        problem = Issue{node.loc, "", "YAML syntax error: a mapping key must be a plain value, not a list or mapping"};
      parent.key = std::move(node);
    } else {
      parent.node.entries.emplace_back(std::move(*parent.key), std::move(node));
      parent.key.reset();
    }
  }

  const std::string& source_;
  std::string_view text_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, Node> anchors_;
  std::map<YAML::anchor_t, size_t> anchor_sizes_;  // nodes in each anchored value
  size_t nodes_ = 0;                               // nodes in the tree so far, alias copies included
};

// yaml-cpp reports a tab in indentation as "illegal map value" somewhere
// later; name the tab instead when one comes before the error.
std::optional<Location> first_indent_tab(std::string_view text, const std::string& source, int up_to_line) {
  int line = 1;
  size_t pos = 0;
  while (pos < text.size() && (up_to_line <= 0 || line <= up_to_line)) {
    size_t col = 0;
    while (pos + col < text.size() && (text[pos + col] == ' ' || text[pos + col] == '\t')) {
      if (text[pos + col] == '\t') return Location{source, line, static_cast<int>(col) + 1};
      ++col;
    }
    const size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
    ++line;
  }
  return std::nullopt;
}

Error syntax_error(const Location& where, const std::string& what) {
  return config_error(where.str() + ": YAML syntax error: " + what);
}

// The byte offset of the first byte that does not belong to a well-formed
// UTF-8 character (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF), or npos. YAML text is Unicode; yaml-cpp passes bad bytes on,
// and the resolved job (JSON) could not hold them.
size_t first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) {
      n = 1;
    } else if (b >= 0xe0 && b <= 0xef) {
      n = 2;
      if (b == 0xe0) lo = 0xa0;
      if (b == 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 3;
      if (b == 0xf0) lo = 0x90;
      if (b == 0xf4) hi = 0x8f;
    } else {
      return i;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const auto c = static_cast<unsigned char>(s[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xbf)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

}  // namespace

Result<Node> parse_yaml(std::string_view text, const std::string& source) {
  if (text.size() > kMaxBytes) {
    return config_error(source + ": the job file is " + std::to_string(text.size()) + " bytes; expected at most " +
                        std::to_string(kMaxBytes) + " (a job file describes a run; data belongs in data files)");
  }
  if (const size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    const std::string_view before = text.substr(0, bad);
    const size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
    const Location where{source, static_cast<int>(std::count(before.begin(), before.end(), '\n')) + 1,
                         static_cast<int>(bad - line_start) + 1};
    return config_error(fmt::format("{}: the job file is not UTF-8 text: byte 0x{:02x} cannot start or continue a "
                                    "character here (save the file as UTF-8)",
                                    where.str(), static_cast<unsigned char>(text[bad])));
  }
  const std::string owned(text);
  TreeBuilder builder(source, owned);
  try {
    std::istringstream in(owned);
    YAML::Parser parser(in);
    parser.HandleNextDocument(builder);
    TreeBuilder second(source, owned);
    if (parser.HandleNextDocument(second))
      return syntax_error(second.document_start, "a second YAML document (\"---\"); expected one job per file");
  } catch (const LimitExceeded& e) {
    return config_error(e.where.str() + ": " + e.what);
  } catch (const YAML::Exception& e) {
    Location where = e.mark.is_null() ? Location{source, 0, 0} : Location{source, e.mark.line + 1, e.mark.column + 1};
    if (auto tab = first_indent_tab(text, source, where.line))
      return syntax_error(*tab, "tab character in indentation; expected spaces");
    std::string what = e.msg;
    if (what == "end of sequence not found" || what == "end of map not found") what += "; check the indentation";
    if (what.find("flow") != std::string::npos) {
      if (auto open = builder.open_flow()) {
        const char close = open->first == '[' ? ']' : '}';
        what += std::string("; expected \"") + close + "\" to close the \"" + open->first + "\" at " +
                std::to_string(open->second.line) + ":" + std::to_string(open->second.column);
      }
    }
    return syntax_error(where, what);
  }
  if (builder.problem) return config_error(format_issue(*builder.problem));
  if (!builder.root) return Node::scalar("", Location{source, 1, 1});
  return std::move(*builder.root);
}

}  // namespace dtrain
