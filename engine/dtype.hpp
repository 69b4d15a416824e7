// Element types of tensors: the float formats of mixed precision and the
// integer types of labels, token ids and masks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace dtrain {

enum class DType : uint8_t { f32, bf16, f16, i32, i64, u8 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "float32", "bfloat16", "float16", "int32", "int64", "uint8"
// Accepts the names above and the short forms f32, bf16, f16, i32, i64, u8.
std::optional<DType> parse_dtype(std::string_view name);

}  // namespace dtrain
