// DType names and sizes.
#include "engine/dtype.hpp"

#include <string_view>

namespace dtrain {

namespace {
struct Row {
  DType type;
  size_t size;
  const char* name;
  const char* short_name;
};
constexpr Row kTypes[] = {
    {DType::f32, 4, "float32", "f32"}, {DType::bf16, 2, "bfloat16", "bf16"}, {DType::f16, 2, "float16", "f16"},
    {DType::i32, 4, "int32", "i32"},   {DType::i64, 8, "int64", "i64"},     {DType::u8, 1, "uint8", "u8"},
};
const Row& row(DType t) { return kTypes[static_cast<size_t>(t)]; }
}  // namespace

size_t dtype_size(DType t) { return row(t).size; }
const char* dtype_name(DType t) { return row(t).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const Row& r : kTypes) {
    if (name == r.name || name == r.short_name) return r.type;
  }
  return std::nullopt;
}

}  // namespace dtrain
