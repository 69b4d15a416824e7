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
  // default, so that jobs written before the option keep their model hash.
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
  else {
    static_assert(std::is_same_v<T, InitializerSpec>, "a field's member has a type no FieldKind reads");
    return FieldKind::kInitializer;
  }
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
