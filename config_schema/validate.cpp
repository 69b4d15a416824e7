// The JSON Schema subset validator over the YAML node tree.
#include "config_schema/validate.hpp"

#include <algorithm>
#include <regex>

#include "engine/base/did_you_mean.hpp"

namespace dtrain {
namespace {

bool type_admits(const std::string& type, ValueType vt) {
  switch (vt) {
    case ValueType::kNull: return type == "null";
    case ValueType::kBool: return type == "boolean";
    case ValueType::kInteger: return type == "integer" || type == "number";
    case ValueType::kNumber: return type == "number";
    case ValueType::kString: return type == "string";
    case ValueType::kList: return type == "array";
    case ValueType::kMapping: return type == "object";
  }
  return false;
}

bool types_admit(const std::vector<std::string>& types, ValueType vt) {
  if (types.empty()) return true;
  return std::any_of(types.begin(), types.end(), [&](const std::string& t) { return type_admits(t, vt); });
}

// " (needed when format is idx)" for an "if" of the form {properties: {K: {const: V}}}.
std::string condition_text(const Json& if_schema) {
  if (!if_schema.contains("properties") || if_schema["properties"].size() != 1) return "";
  const auto it = if_schema["properties"].begin();
  if (!it.value().contains("const")) return "";
  return " (needed when " + it.key() + " is " + it.value()["const"].get<std::string>() + ")";
}

class Validator {
 public:
  Validator(const Json& root, std::vector<Issue>* out) : root_(root), out_(out) {}

  // required_note and outer_props apply to the "then" of an if/then: why its
  // keys are required, and the enclosing object's properties that describe them.
  void check(const Node& node, const Json& schema, const std::string& path, const std::string& required_note = "",
             const Json* outer_props = nullptr) {
    if (node.flagged) return;
    const Json s = resolve_ref(root_, schema);
    if (s.contains("oneOf")) {
      check_one_of(node, s, path);
      return;
    }
    const ValueType vt = value_type(node);
    if (!types_admit(schema_types(s), vt)) {
      report(node.loc, path, "expected " + describe_expected(root_, s) + ", got " + describe_value(node));
      return;
    }
    if (s.contains("enum") || s.contains("const")) check_enum(node, s, path);
    if (vt == ValueType::kInteger || vt == ValueType::kNumber) check_range(node, s, path);
    if (vt == ValueType::kString) check_string(node, s, path);
    if (vt == ValueType::kList) check_list(node, s, path);
    if (vt == ValueType::kMapping) check_mapping(node, s, path, required_note, outer_props);
    if (s.contains("allOf"))
      for (const Json& part : s["allOf"]) check_part(node, part, path, s.contains("properties") ? &s["properties"] : nullptr);
  }

 private:
  void report(const Location& where, const std::string& path, std::string message) {
    out_->push_back({where, path, std::move(message)});
  }

  void check_part(const Node& node, const Json& part, const std::string& path, const Json* props) {
    if (!part.contains("if")) {
      check(node, part, path, "", props);
      return;
    }
    if (matches(node, root_, part["if"]) && part.contains("then"))
      check(node, part["then"], path, condition_text(part["if"]), props);
  }

  void check_enum(const Node& node, const Json& s, const std::string& path) {
    const std::vector<std::string> names = enum_names(s);
    if (value_type(node) == ValueType::kString && std::find(names.begin(), names.end(), node.text) != names.end())
      return;
    std::string message = describe_value(node) + " is not one of " + join_names(names);
    if (value_type(node) == ValueType::kString) message += did_you_mean(node.text, names);
    report(node.loc, path, message);
  }

  void check_range(const Node& node, const Json& s, const std::string& path) {
    const double v = as_number(node);
    const std::string shown = node.text;
    auto bound = [&](const char* key) { return s[key].get<double>(); };
    auto bound_text = [&](const char* key) { return s[key].dump(); };
    if (s.contains("minimum") && v < bound("minimum"))
      report(node.loc, path, shown + " is below the minimum " + bound_text("minimum"));
    if (s.contains("exclusiveMinimum") && v <= bound("exclusiveMinimum"))
      report(node.loc, path, shown + " is not above " + bound_text("exclusiveMinimum") + "; expected " + describe_expected(root_, s));
    if (s.contains("maximum") && v > bound("maximum"))
      report(node.loc, path, shown + " is above the maximum " + bound_text("maximum"));
    if (s.contains("exclusiveMaximum") && v >= bound("exclusiveMaximum"))
      report(node.loc, path, shown + " is not below " + bound_text("exclusiveMaximum") + "; expected " + describe_expected(root_, s));
  }

  void check_string(const Node& node, const Json& s, const std::string& path) {
    const size_t n = node.text.size();
    if ((s.contains("minLength") && n < s["minLength"].get<size_t>()) ||
        (s.contains("maxLength") && n > s["maxLength"].get<size_t>())) {
      report(node.loc, path, "expected " + describe_expected(root_, s) + ", got " + describe_value(node));
      return;
    }
    if (s.contains("pattern") && !std::regex_search(node.text, std::regex(s["pattern"].get<std::string>())))
      report(node.loc, path, describe_value(node) + " does not match the pattern " + s["pattern"].get<std::string>() +
                                 "; expected " + describe_expected(root_, s));
  }

  void check_list(const Node& node, const Json& s, const std::string& path) {
    const size_t n = node.items.size();
    if ((s.contains("minItems") && n < s["minItems"].get<size_t>()) ||
        (s.contains("maxItems") && n > s["maxItems"].get<size_t>()))
      report(node.loc, path, "expected " + describe_expected(root_, s) + ", got " + describe_value(node));
    if (s.contains("items"))
      for (size_t i = 0; i < n; ++i) check(node.items[i], s["items"], index_path(path, i));
  }

  void check_mapping(const Node& node, const Json& s, const std::string& path, const std::string& required_note,
                     const Json* outer_props) {
    const Json* props = s.contains("properties") ? &s["properties"] : nullptr;
    const Json* described = props != nullptr ? props : outer_props;
    const bool closed = s.contains("additionalProperties") && s["additionalProperties"] == false;
    // additionalProperties as a schema: every other key's value must match it.
    const Json* others =
        s.contains("additionalProperties") && s["additionalProperties"].is_object() ? &s["additionalProperties"] : nullptr;
    for (const auto& [key, value] : node.entries) {
      if (node.find_key(key.text) != &key) continue;  // a duplicate key: reported by find_duplicate_keys
      if (props != nullptr && props->contains(key.text)) {
        check(value, (*props)[key.text], child_path(path, key.text));
      } else if (others != nullptr) {
        check(value, *others, child_path(path, key.text));
      } else if (closed) {
        const std::vector<std::string> names = property_names(s);
        report(key.loc, child_path(path, key.text),
               "unknown key; expected one of " + join_names(names) + did_you_mean(key.text, names));
      }
    }
    if (s.contains("required"))
      for (const Json& r : s["required"]) {
        const std::string name = r.get<std::string>();
        if (node.find(name) != nullptr) continue;
        const std::string expected = described != nullptr && described->contains(name)
                                         ? describe_expected(root_, (*described)[name]) : "a value";
        report(node.loc, child_path(path, name), "required key is missing" + required_note + "; expected " + expected);
      }
  }

  void check_one_of(const Node& node, const Json& s, const std::string& path) {
    const Json& branches = s["oneOf"];
    if (is_type_discriminated(root_, branches)) {
      check_discriminated(node, s, path);
      return;
    }
    const ValueType vt = value_type(node);
    std::vector<const Json*> candidates;
    for (const Json& b : branches)
      if (types_admit(schema_types(resolve_ref(root_, b)), vt)) candidates.push_back(&b);
    if (candidates.empty()) {
      report(node.loc, path, "expected " + describe_expected(root_, s) + ", got " + describe_value(node));
      return;
    }
    for (const Json* b : candidates)
      if (matches(node, root_, *b)) return;
    const Json first = resolve_ref(root_, *candidates.front());
    if (first.contains("enum") || first.contains("const")) {
      // A scalar that is none of the names: say everything this place takes.
      std::string message = "expected " + describe_expected(root_, s) + ", got " + describe_value(node);
      if (value_type(node) == ValueType::kString) message += did_you_mean(node.text, enum_names(first));
      report(node.loc, path, message);
      return;
    }
    check(node, *candidates.front(), path);
  }

  void check_discriminated(const Node& node, const Json& s, const std::string& path) {
    const Json& branches = s["oneOf"];
    const std::vector<std::string> types = discriminator_values(branches);
    const std::string what = s.value("title", std::string("value"));
    if (!node.is_mapping()) {
      report(node.loc, path, "expected " + describe_expected(root_, s) + ", got " + describe_value(node));
      return;
    }
    const Node* type = node.find("type");
    if (type == nullptr) {
      report(node.loc, child_path(path, "type"), "required key is missing; expected one of " + join_names(types));
      return;
    }
    if (type->flagged) return;
    const Json* branch = value_type(*type) == ValueType::kString ? branch_for_type(branches, type->text) : nullptr;
    if (branch == nullptr) {
      std::string message = "unknown " + what + " type " + describe_value(*type) + "; expected one of " + join_names(types);
      if (value_type(*type) == ValueType::kString) message += did_you_mean(type->text, types);
      report(type->loc, child_path(path, "type"), message);
      return;
    }
    check(node, *branch, path);
  }

  const Json& root_;
  std::vector<Issue>* out_;
};

}  // namespace

std::vector<Issue> validate(const Node& node, const Json& root, const Json& schema, const std::string& path) {
  std::vector<Issue> out;
  Validator(root, &out).check(node, schema, path);
  return out;
}

bool matches(const Node& node, const Json& root, const Json& schema) {
  return validate(node, root, schema).empty();
}

}  // namespace dtrain
