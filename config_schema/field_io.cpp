// Reading, writing and describing the options of a field table.
#include "config_schema/field_io.hpp"

#include <charconv>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace dtrain {

namespace {

const Node* given(const Node& node, const char* key) {
  const Node* n = node.find(key);
  return n != nullptr && value_type(*n) != ValueType::kNull ? n : nullptr;
}

std::vector<int64_t> int_list(const Node& n) {
  std::vector<int64_t> out;
  for (const Node& item : n.items) out.push_back(as_int(item));
  return out;
}

std::vector<double> number_list(const Node& n) {
  std::vector<double> out;
  for (const Node& item : n.items) out.push_back(as_number(item));
  return out;
}

// A name, or {type, value, minval, maxval} (the missing ones at their defaults).
InitializerSpec read_initializer(const Node& n) {
  if (n.is_scalar()) return InitializerSpec{n.text, 0.0f};
  InitializerSpec out;
  if (const Node* v = given(n, "type")) out.type = v->text;
  if (const Node* v = given(n, "value")) out.value = static_cast<float>(as_number(*v));
  if (const Node* v = given(n, "minval")) out.minval = static_cast<float>(as_number(*v));
  if (const Node* v = given(n, "maxval")) out.maxval = static_cast<float>(as_number(*v));
  return out;
}

// The value of field f of `object` as the resolved job writes it.
Json value_json(const Field& f, const void* object, const std::string& activation) {
  switch (f.kind) {
    case FieldKind::kOptionalDouble: {
      const auto& v = field_value<std::optional<double>>(f, object);
      return v ? Json(*v) : Json(nullptr);
    }
    case FieldKind::kDoubleList: return field_value<std::vector<double>>(f, object);
    case FieldKind::kStruct: {
      Json out = Json::object();
      write_fields(f.sub(), f.at(const_cast<void*>(object)), nullptr, "", out);
      return out;
    }
    case FieldKind::kOptionalStruct: {
      const void* inner = f.inner(f.at(const_cast<void*>(object)));
      if (inner == nullptr) return nullptr;
      Json out = Json::object();
      write_fields(f.sub(), inner, nullptr, "", out);
      return out;
    }
    case FieldKind::kInt: return field_value<int64_t>(f, object);
    case FieldKind::kOptionalInt: {
      const auto& v = field_value<std::optional<int64_t>>(f, object);
      return v ? Json(*v) : Json(nullptr);
    }
    case FieldKind::kFloat: return shortest(field_value<float>(f, object));
    case FieldKind::kDouble: return field_value<double>(f, object);
    case FieldKind::kBool: return field_value<bool>(f, object);
    case FieldKind::kString: return field_value<std::string>(f, object);
    case FieldKind::kIntList:
    case FieldKind::kSize2: return field_value<std::vector<int64_t>>(f, object);
    case FieldKind::kInitializer: return initializer_json(field_value<InitializerSpec>(f, object));
    case FieldKind::kActivation: return activation.empty() ? "linear" : activation;
    case FieldKind::kUint: return field_value<uint64_t>(f, object);
    case FieldKind::kOptionalUint: {
      const auto& v = field_value<std::optional<uint64_t>>(f, object);
      return v ? Json(*v) : Json(nullptr);
    }
    case FieldKind::kOptionalString: {
      const auto& v = field_value<std::optional<std::string>>(f, object);
      return v ? Json(*v) : Json(nullptr);
    }
    case FieldKind::kStringList: return field_value<std::vector<std::string>>(f, object);
    case FieldKind::kCustom: return field_codec(f.codec).write(f.at(const_cast<void*>(object)));
  }
  return nullptr;
}

// A default as the schema documents it: a size [n, n] as n, [] as null,
// an initializer by its name.
Json default_json(const Field& f, const void* defaults) {
  if (f.kind == FieldKind::kStruct) return Json::object();  // {}: every field at its default
  if (f.kind == FieldKind::kOptionalStruct) return nullptr;
  if (f.kind == FieldKind::kInitializer) {
    // Its name alone when its values are the name's own (random_uniform's U(-0.05, 0.05)).
    const auto& init = field_value<InitializerSpec>(f, defaults);
    const InitializerSpec plain{init.type, 0.0f};
    if (init.value == plain.value && init.minval == plain.minval && init.maxval == plain.maxval) return init.type;
  }
  Json v = value_json(f, defaults, "");
  if (f.kind == FieldKind::kSize2 && v.is_array()) {
    if (v.empty()) return nullptr;
    if (v.size() == 2 && v[0] == v[1]) return v[0];
  }
  return v;
}

Json value_schema(const Field& f, const void* defaults) {
  if (f.kind == FieldKind::kCustom) {
    const FieldCodec& codec = field_codec(f.codec);
    return codec.schema != nullptr ? codec.schema(f) : Json::parse(f.schema);
  }
  if ((f.kind == FieldKind::kStruct || f.kind == FieldKind::kOptionalStruct) && f.ref != nullptr) {
    return Json{{"$ref", std::string("#/$defs/") + f.ref}};
  }
  if (f.kind == FieldKind::kStruct || f.kind == FieldKind::kOptionalStruct) {
    Json s = fields_object_schema(f.sub(), f.kind == FieldKind::kStruct ? f.at(const_cast<void*>(defaults))
                                                                        : f.inner_defaults(),
                                  f.schema);
    if (f.kind == FieldKind::kOptionalStruct) s["type"] = Json::array({"object", "null"});
    return s;
  }
  if (f.schema != nullptr) return Json::parse(f.schema);
  Json s = Json::object();
  if (f.ref != nullptr) {
    s["$ref"] = std::string("#/$defs/") + f.ref;
    return s;
  }
  switch (f.kind) {
    case FieldKind::kInt: s["type"] = "integer"; break;
    case FieldKind::kOptionalInt: s["type"] = Json::array({"integer", "null"}); break;
    case FieldKind::kOptionalDouble: s["type"] = Json::array({"number", "null"}); break;
    case FieldKind::kDoubleList: s = Json{{"type", "array"}, {"items", {{"type", "number"}}}}; break;
    case FieldKind::kStruct:
    case FieldKind::kOptionalStruct: break;  // above
    case FieldKind::kFloat:
    case FieldKind::kDouble: s["type"] = "number"; break;
    case FieldKind::kBool: s["type"] = "boolean"; break;
    case FieldKind::kString: s["type"] = "string"; break;
    case FieldKind::kIntList: s = Json{{"type", "array"}, {"items", {{"type", "integer"}}}}; break;
    case FieldKind::kSize2: s["$ref"] = "#/$defs/size2"; break;
    case FieldKind::kInitializer: s["$ref"] = "#/$defs/initializer"; break;
    case FieldKind::kActivation: s["$ref"] = "#/$defs/activation"; break;
    case FieldKind::kUint: s["type"] = "integer"; break;
    case FieldKind::kOptionalUint: s["type"] = Json::array({"integer", "null"}); break;
    case FieldKind::kOptionalString: s["type"] = Json::array({"string", "null"}); break;
    case FieldKind::kStringList: s = Json{{"type", "array"}, {"items", {{"type", "string"}}}}; break;
    case FieldKind::kCustom: break;  // above
  }
  // A bound as the integer it is when it is one (the schema reads "minimum": 1).
  auto number = [](double v) { return v == static_cast<double>(static_cast<int64_t>(v)) ? Json(static_cast<int64_t>(v)) : Json(v); };
  if (f.minimum) s[f.exclusive_minimum ? "exclusiveMinimum" : "minimum"] = number(*f.minimum);
  if (f.maximum) s[f.exclusive_maximum ? "exclusiveMaximum" : "maximum"] = number(*f.maximum);
  return s;
}

}  // namespace

double shortest(float f) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
  double d = 0;
  std::from_chars(buf, end, d);
  return d;
}

Json initializer_json(const InitializerSpec& init) {
  if (init.type == "random_uniform") {
    return Json{{"type", init.type}, {"minval", shortest(init.minval)}, {"maxval", shortest(init.maxval)}};
  }
  if (init.type == "constant" || init.value != 0.0f) return Json{{"type", init.type}, {"value", shortest(init.value)}};
  return init.type;
}

const FieldCodec& field_codec(const char* name) {
  for (const FieldCodec& c : field_codecs())
    if (std::string_view(c.name) == name) return c;
  throw std::logic_error(std::string("field table names codec \"") + (name ? name : "") + "\", which does not exist");
}

Json fields_object_schema(std::span<const Field> fields, const void* defaults, const char* extra) {
  Json properties = Json::object(), required = Json::array();
  fields_schema(fields, defaults, properties, required);
  Json s{{"type", "object"}, {"properties", properties}};
  if (!required.empty()) s["required"] = required;
  s["additionalProperties"] = false;
  if (extra != nullptr) {
    const Json more = Json::parse(extra);  // held: items() refers into it
    for (const auto& [key, value] : more.items()) s[key] = value;
  }
  return s;
}

void read_fields(const Node& node, std::span<const Field> fields, void* object, const FieldReading& how) {
  for (const Field& f : fields) {
    const Node* n = given(node, f.name);
    if (n == nullptr) continue;
    if (f.where != nullptr) *f.where(object) = n->loc.str();
    switch (f.kind) {
      case FieldKind::kInt: field_value<int64_t>(f, object) = as_int(*n); break;
      case FieldKind::kOptionalInt: field_value<std::optional<int64_t>>(f, object) = as_int(*n); break;
      case FieldKind::kFloat: field_value<float>(f, object) = static_cast<float>(as_number(*n)); break;
      case FieldKind::kDouble: field_value<double>(f, object) = as_number(*n); break;
      case FieldKind::kOptionalDouble: field_value<std::optional<double>>(f, object) = as_number(*n); break;
      case FieldKind::kDoubleList: field_value<std::vector<double>>(f, object) = number_list(*n); break;
      case FieldKind::kStruct:
      case FieldKind::kOptionalStruct: {
        if (!n->is_mapping()) break;
        void* inner = f.kind == FieldKind::kStruct ? f.at(object) : (f.made ? f.made : f.emplace)(f.at(object));
        if (f.inner_where != nullptr) *f.inner_where(inner) = n->loc.str();
        FieldReading nested = how;
        nested.activation = nullptr;
        read_fields(*n, f.sub(), inner, nested);
        break;
      }
      case FieldKind::kBool: field_value<bool>(f, object) = as_bool(*n); break;
      case FieldKind::kString: field_value<std::string>(f, object) = n->text; break;
      case FieldKind::kIntList: field_value<std::vector<int64_t>>(f, object) = int_list(*n); break;
      case FieldKind::kSize2:
        field_value<std::vector<int64_t>>(f, object) =
            n->is_sequence() ? int_list(*n) : std::vector<int64_t>{as_int(*n), as_int(*n)};
        break;
      case FieldKind::kInitializer: field_value<InitializerSpec>(f, object) = read_initializer(*n); break;
      case FieldKind::kActivation:
        if (how.activation != nullptr) *how.activation = n->text == "linear" ? "" : n->text;
        break;
      case FieldKind::kUint: field_value<uint64_t>(f, object) = static_cast<uint64_t>(as_int(*n)); break;
      case FieldKind::kOptionalUint:
        field_value<std::optional<uint64_t>>(f, object) = static_cast<uint64_t>(as_int(*n));
        break;
      case FieldKind::kOptionalString: field_value<std::optional<std::string>>(f, object) = n->text; break;
      case FieldKind::kStringList: {
        auto& out = field_value<std::vector<std::string>>(f, object);
        out.clear();
        for (const Node& item : n->items) out.push_back(item.text);
        break;
      }
      case FieldKind::kCustom: field_codec(f.codec).read(*n, f.at(object), how); break;
    }
  }
}

void write_fields(std::span<const Field> fields, const void* object, const void* defaults,
                  const std::string& activation, Json& out) {
  for (const Field& f : fields) {
    if (f.when != nullptr && !f.when(object)) continue;
    // An optional section hidden at its default is left out while it is null.
    if (f.kind == FieldKind::kOptionalStruct && !f.shown_at_default &&
        f.inner(f.at(const_cast<void*>(object))) == nullptr) {
      continue;
    }
    Json v = value_json(f, object, activation);
    if (!f.shown_at_default && defaults != nullptr && v == value_json(f, defaults, "")) continue;
    out[f.name] = std::move(v);
  }
}

Json field_schema(const Field& f, const void* defaults) {
  Json s = value_schema(f, defaults);
  // The description (and default) after the value's own keys, as the file reads.
  Json out = Json::object();
  for (const auto& [key, value] : s.items())
    if (key != "properties" && key != "required" && key != "additionalProperties" && key != "allOf") out[key] = value;
  out["description"] = f.doc;
  if (f.required) {
    // no default
  } else if (f.doc_default != nullptr) {
    out["default"] = Json::parse(f.doc_default);
  } else if (f.kind == FieldKind::kActivation) {
    out["default"] = "linear";
  } else {
    out["default"] = default_json(f, defaults);
  }
  for (const char* key : {"properties", "required", "additionalProperties", "allOf"})
    if (s.contains(key)) out[key] = s[key];
  return out;
}

void fields_schema(std::span<const Field> fields, const void* defaults, Json& properties, Json& required) {
  for (const Field& f : fields) {
    if (f.required) required.push_back(f.name);
    properties[f.name] = field_schema(f, defaults);
  }
}

}  // namespace dtrain
