// The job file as a tree of YAML nodes that remember where they came from
// (file:line:column, 1-based), built from yaml-cpp's parser events so that
// duplicate keys, tags and positions are all visible. yaml-cpp exceptions
// stop here and become an Error with the position of the syntax error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config_schema/diagnostics.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

struct Node {
  struct Entry;  // a mapping's (key, value), defined below: Node is complete there
  enum class Kind { kScalar, kSequence, kMapping };

  Kind kind = Kind::kScalar;
  std::string text;      // scalar text (a YAML null is a plain empty text)
  bool quoted = false;   // written quoted or tagged !!str: always a string
  bool flagged = false;  // a problem was already reported here; validation skips it
  Location loc;
  std::vector<Node> items;                      // kSequence
  std::vector<Entry> entries;                   // kMapping: (key scalar, value), in file order

  static Node scalar(std::string text, Location loc, bool quoted = false);
  static Node sequence(Location loc);
  static Node mapping(Location loc);

  bool is_scalar() const { return kind == Kind::kScalar; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_mapping() const { return kind == Kind::kMapping; }
  // The value of the first entry with this key, or nullptr (also when not a mapping).
  const Node* find(std::string_view key) const;
  Node* find(std::string_view key);
  // The key node of that entry, or nullptr.
  const Node* find_key(std::string_view key) const;
};

// Read as a pair (`for (auto& [key, value] : node.entries)`); a vector of
// std::pair<Node, Node> inside Node itself needs Node complete, which GCC
// does not check and clang does.
struct Node::Entry {
  Node first;   // the key, a scalar
  Node second;  // the value
  Entry(Node key, Node value) : first(std::move(key)), second(std::move(value)) {}
};

// What a node holds under YAML 1.2's core schema: plain scalars "", "~" and
// "null" are null; true/false (any case style) booleans; [-+]?[0-9]+ integers
// (beyond int64 they count as numbers); decimal/exponent forms numbers;
// everything else, and every quoted scalar, strings.
enum class ValueType { kNull, kBool, kInteger, kNumber, kString, kList, kMapping };
ValueType value_type(const Node& node);

// Typed reads. REQUIRES: value_type(node) is the matching type (as_number
// also takes integers).
bool as_bool(const Node& node);
int64_t as_int(const Node& node);
double as_number(const Node& node);

// The value as a message shows it after "got": "ten" in quotes, 3, true,
// null, an empty value, a list of 3 items, a mapping.
std::string describe_value(const Node& node);

// Parses one YAML document. `source` names it in locations ("job.yaml").
// A syntax error gives a kConfig Error "job.yaml:4:3: YAML syntax error: ...".
// An empty document gives a null scalar at 1:1.
Result<Node> parse_yaml(std::string_view text, const std::string& source);

// Gives `node` and everything under it this location (used for nodes made
// from a --set value, which have no file position).
void relocate(Node& node, const Location& loc);

// One issue per key given twice in one mapping, anywhere in the tree.
std::vector<Issue> find_duplicate_keys(const Node& root);

}  // namespace dtrain
