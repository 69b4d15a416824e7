// Field tables: the one place an option is written. A table lists the options
// of one struct (a layer's options, ...) with their name, kind, constraints
// and documentation; config_schema/ reads a job's YAML into the struct, writes
// it back as the resolved job and derives the JSON Schema (and so the man
// page) from the same rows. ninja's tool table is the model: plain data, one
// row per thing, columns for the few differences.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/base/initializer_spec.hpp"

namespace dtrain {

enum class FieldKind : uint8_t {
  kInt,          // int64_t
  kOptionalInt,  // std::optional<int64_t>; null allowed
  kFloat,        // float (written back in its shortest decimal form)
  kDouble,       // double
  kOptionalDouble,  // std::optional<double>; null allowed
  kBool,         // bool
  kString,       // std::string (an enum through `ref` or `choices`)
  kIntList,      // std::vector<int64_t>
  kDoubleList,   // std::vector<double>
  kSize2,        // std::vector<int64_t>: an integer n (read as [n, n]) or a list
  kInitializer,  // InitializerSpec: a name or {type, value, minval, maxval}
  kActivation,   // not a member: the layer's activation (LayerSpec::activation); "linear" = none
  kStruct,       // a struct with a table of its own (`sub`): a mapping in the job
  kOptionalStruct,  // std::optional of such a struct: a mapping, or null (the default)
  kUint,         // uint64_t (a seed)
  kOptionalUint, // std::optional<uint64_t>; null allowed
  kOptionalString,  // std::optional<std::string>; null allowed
  kStringList,   // std::vector<std::string> (each item's text: a name or an index)
  // A value of its own shape, read, written and described by the codec of
  // config_schema/field_codecs.cpp named `codec` ("auto" for a number,
  // paths resolved against the job file, device names, ...).
  kCustom,
};

// One option. `at` finds the member in an object of the table's struct.
struct Field {
  const char* name = "";
  FieldKind kind = FieldKind::kInt;
  const char* doc = "";
  void* (*at)(void* object) = nullptr;
  bool required = false;
  // The value's schema: a $defs entry it follows ("size2", "padding", ...),
  // else what the kind implies, with the bounds below; `schema` (JSON text)
  // replaces both where a value is shaped otherwise.
  const char* ref = nullptr;
  const char* schema = nullptr;
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
  // false: the resolved job shows the option only when it is not its
  // default, so that jobs written before the option keep their model hash
  // (a kOptionalStruct: only when it holds a struct, written out, never null).
  bool shown_at_default = true;
  // kStruct: the member's own table. Its `schema`, when given, is merged
  // into the mapping's schema (e.g. an allOf of conditions between fields).
  std::span<const Field> (*sub)() = nullptr;
  // kOptionalStruct: the struct inside the member (null when empty), and
  // the struct made (at its defaults) when the job gives one.
  void* (*inner)(void* member) = nullptr;
  void* (*emplace)(void* member) = nullptr;
  const void* (*inner_defaults)() = nullptr;  // a struct at its defaults, for the schema
  // When not null: the std::string member that gets the place ("job.yaml:5:12")
  // the value was read from, for errors found after loading.
  std::string* (*where)(void* object) = nullptr;
  // kStruct, kOptionalStruct: the std::string member of the inner struct that
  // gets the place of the mapping (its node) when read.
  std::string* (*inner_where)(void* inner) = nullptr;
  // kOptionalStruct: makes the struct when the job gives one, in place of
  // `emplace` where its defaults differ by role (data.eval's repeat: false).
  void* (*made)(void* member) = nullptr;
  // kCustom: the name of its codec.
  const char* codec = nullptr;
  // The "when" column: not null, the resolved job writes the option only
  // when it holds for the object (a text source's options for format text,
  // a path when one was given).
  bool (*when)(const void* object) = nullptr;
  // JSON text of the default the schema documents, where it is not the
  // struct's value (null for "not given", e.g. a path that has no default).
  const char* doc_default = nullptr;

  // Builders, each returning the changed copy: field<...>(...).min(1).need().
  Field min(double v) const { Field f = *this; f.minimum = v; return f; }
  Field max(double v) const { Field f = *this; f.maximum = v; return f; }
  Field above(double v) const { Field f = min(v); f.exclusive_minimum = true; return f; }
  Field below(double v) const { Field f = max(v); f.exclusive_maximum = true; return f; }
  Field need() const { Field f = *this; f.required = true; return f; }
  Field follows(const char* defs_entry) const { Field f = *this; f.ref = defs_entry; return f; }
  Field shaped(const char* schema_json) const { Field f = *this; f.schema = schema_json; return f; }
  // A std::vector<int64_t> read as an integer n ([n, n]) or a list.
  Field size2() const { Field f = *this; f.kind = FieldKind::kSize2; return f; }
  Field hidden_at_default() const { Field f = *this; f.shown_at_default = false; return f; }
  Field shown_when(bool (*pred)(const void* object)) const { Field f = *this; f.when = pred; return f; }
  Field documented_default(const char* json) const { Field f = *this; f.doc_default = json; return f; }
  Field made_by(void* (*make)(void* member)) const { Field f = *this; f.made = make; return f; }
};

namespace fields_detail {
template <class T>
struct Member;
template <class C, class T>
struct Member<T C::*> {
  using Class = C;
  using Type = T;
};
template <class T>
constexpr FieldKind kind_of() {
  if constexpr (std::is_same_v<T, int64_t>) return FieldKind::kInt;
  else if constexpr (std::is_same_v<T, std::optional<int64_t>>) return FieldKind::kOptionalInt;
  else if constexpr (std::is_same_v<T, float>) return FieldKind::kFloat;
  else if constexpr (std::is_same_v<T, double>) return FieldKind::kDouble;
  else if constexpr (std::is_same_v<T, std::optional<double>>) return FieldKind::kOptionalDouble;
  else if constexpr (std::is_same_v<T, std::vector<double>>) return FieldKind::kDoubleList;
  else if constexpr (std::is_same_v<T, bool>) return FieldKind::kBool;
  else if constexpr (std::is_same_v<T, std::string>) return FieldKind::kString;
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return FieldKind::kIntList;
  else if constexpr (std::is_same_v<T, uint64_t>) return FieldKind::kUint;
  else if constexpr (std::is_same_v<T, std::optional<uint64_t>>) return FieldKind::kOptionalUint;
  else if constexpr (std::is_same_v<T, std::optional<std::string>>) return FieldKind::kOptionalString;
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return FieldKind::kStringList;
  else {
    static_assert(std::is_same_v<T, InitializerSpec>, "a field's member has a type no FieldKind reads");
    return FieldKind::kInitializer;
  }
}
// `f` made a kCustom field read and written by `codec` (custom, custom_whole).
inline Field with_codec(Field f, const char* codec) {
  f.kind = FieldKind::kCustom;
  f.codec = codec;
  return f;
}
}  // namespace fields_detail

// The row of a member: field<&DenseOptions::units>("units", "Number of output units.").min(1).need().
template <auto kMember>
Field field(const char* name, const char* doc) {
  using M = fields_detail::Member<decltype(kMember)>;
  Field f;
  f.name = name;
  f.doc = doc;
  f.kind = fields_detail::kind_of<typename M::Type>();
  f.at = [](void* object) -> void* { return &(static_cast<typename M::Class*>(object)->*kMember); };
  return f;
}

// The row of a member that is a struct with its own table `sub`:
// field_struct<&OptimizerSpec::schedule>("schedule", "...", schedule_fields).
template <auto kMember>
Field field_struct(const char* name, const char* doc, std::span<const Field> (*sub)()) {
  using M = fields_detail::Member<decltype(kMember)>;
  Field f;
  f.name = name;
  f.doc = doc;
  f.kind = FieldKind::kStruct;
  f.sub = sub;
  f.at = [](void* object) -> void* { return &(static_cast<typename M::Class*>(object)->*kMember); };
  return f;
}

// The row of a std::optional<struct> member with its own table `sub`.
template <auto kMember>
Field field_optional_struct(const char* name, const char* doc, std::span<const Field> (*sub)()) {
  using M = fields_detail::Member<decltype(kMember)>;
  using Inner = typename M::Type::value_type;
  Field f = field_struct<kMember>(name, doc, sub);
  f.kind = FieldKind::kOptionalStruct;
  f.inner = [](void* member) -> void* {
    auto& o = *static_cast<std::optional<Inner>*>(member);
    return o ? &*o : nullptr;
  };
  f.emplace = [](void* member) -> void* { return &static_cast<std::optional<Inner>*>(member)->emplace(); };
  f.inner_defaults = []() -> const void* {
    static const Inner kDefaults{};
    return &kDefaults;
  };
  return f;
}

// The row of options kept in the table's struct itself but written as a
// mapping of their own (strategy.partition's max_shards and min_shard_mb are
// StrategySpec members; a map operation's arguments are MapOpSpec's):
// field_group<StrategySpec>("partition", "...", partition_fields).
template <class T>
Field field_group(const char* name, const char* doc, std::span<const Field> (*sub)()) {
  Field f;
  f.name = name;
  f.doc = doc;
  f.kind = FieldKind::kStruct;
  f.sub = sub;
  f.at = [](void* object) -> void* { return static_cast<T*>(object); };
  return f;
}

// The row of a member whose value has a shape of its own, read and written by
// config_schema's codec `codec`: custom<&RunSpec::threads>("threads", "...", "auto_int").
template <auto kMember>
Field custom(const char* name, const char* doc, const char* codec) {
  return fields_detail::with_codec(field_struct<kMember>(name, doc, nullptr), codec);
}

// As custom, over the whole struct T, for an option that fills several
// members (run.warm_start.rename: the pairs and their places).
template <class T>
Field custom_whole(const char* name, const char* doc, const char* codec) {
  return fields_detail::with_codec(field_group<T>(name, doc, nullptr), codec);
}

// A kStruct or kOptionalStruct `f` that keeps the place of its mapping in the
// inner struct's string member kWhere: placed<&DataSourceSpec::where>(field_optional_struct<...>(...)).
template <auto kWhere>
Field placed(Field f) {
  using M = fields_detail::Member<decltype(kWhere)>;
  static_assert(std::is_same_v<typename M::Type, std::string>, "a place is kept in a std::string member");
  f.inner_where = [](void* inner) -> std::string* { return &(static_cast<typename M::Class*>(inner)->*kWhere); };
  return f;
}

// `f` with the place its value was read from kept in string member kWhere
// of the same struct: located<&PrecisionSpec::compute_where>(field<...>(...)).
template <auto kWhere>
Field located(Field f) {
  using M = fields_detail::Member<decltype(kWhere)>;
  static_assert(std::is_same_v<typename M::Type, std::string>, "a place is kept in a std::string member");
  f.where = [](void* object) -> std::string* { return &(static_cast<typename M::Class*>(object)->*kWhere); };
  return f;
}

// The layer's activation as an option (dense, conv2d, add: applied to the
// output, "linear" by default; the activation layer: required, its function).
inline Field activation_field(const char* doc, bool required = false) {
  Field f;
  f.name = "activation";
  f.kind = FieldKind::kActivation;
  f.doc = doc;
  f.required = required;
  f.ref = required ? "activation_function" : "activation";
  return f;
}

// A field's value in an object of its table's struct.
template <class T>
T& field_value(const Field& f, void* object) {
  return *static_cast<T*>(f.at(object));
}
template <class T>
const T& field_value(const Field& f, const void* object) {
  return *static_cast<const T*>(f.at(const_cast<void*>(object)));
}

// The options struct of a type that has none, and its empty table.
struct NoOptions {};
inline std::span<const Field> no_fields() { return {}; }

// One object of a struct known only to its table's owner (a layer's
// options): copied deeply, read back as its own type.
class OptionsBox {
 public:
  OptionsBox() = default;
  template <class T>
  static OptionsBox of(T value = {}) {
    OptionsBox b;
    b.tag_ = tag<T>();
    b.p_ = std::make_shared<T>(std::move(value));
    b.copy_ = [](const void* p) -> std::shared_ptr<void> { return std::make_shared<T>(*static_cast<const T*>(p)); };
    return b;
  }
  OptionsBox(const OptionsBox& o) : tag_(o.tag_), p_(o.p_ ? o.copy_(o.p_.get()) : nullptr), copy_(o.copy_) {}
  OptionsBox(OptionsBox&&) noexcept = default;
  OptionsBox& operator=(const OptionsBox& o) {
    if (this != &o) *this = OptionsBox(o);
    return *this;
  }
  OptionsBox& operator=(OptionsBox&&) noexcept = default;

  bool empty() const { return p_ == nullptr; }
  void* data() { return p_.get(); }
  const void* data() const { return p_.get(); }
  // The object as T; null when it holds another type (or nothing).
  template <class T>
  T* get() {
    return tag_ == tag<T>() ? static_cast<T*>(p_.get()) : nullptr;
  }
  template <class T>
  const T* get() const {
    return tag_ == tag<T>() ? static_cast<const T*>(p_.get()) : nullptr;
  }

 private:
  template <class T>
  static const void* tag() {
    static const char kTag = 0;
    return &kTag;
  }
  const void* tag_ = nullptr;
  std::shared_ptr<void> p_;
  std::shared_ptr<void> (*copy_)(const void*) = nullptr;
};

}  // namespace dtrain
