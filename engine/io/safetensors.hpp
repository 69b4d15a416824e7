// The safetensors file format (https://github.com/huggingface/safetensors) for
// CheckpointData, F32 tensors only: an 8-byte little-endian header length N,
// N bytes of JSON {"__metadata__": {str: str}, name: {dtype, shape,
// data_offsets}}, space-padded so the data starts 8-byte aligned, then the
// tensors' raw little-endian bytes, contiguous and in header order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/io/checkpoint.hpp"
#include "engine/base/status.hpp"

namespace dtrain::io {

// Header bytes (length prefix + padded JSON) for `data`. Tensors keep their
// order; "__metadata__" holds data.metadata plus "global_step" taken from
// data.global_step. kRuntime error for a duplicate or reserved tensor name, a
// tensor without storage, or a string that is not UTF-8.
Result<std::string> encode_safetensors_header(const CheckpointData& data);

// What to write, in order: `header`, then each tensor's bytes. The views
// point into `header` and the tensors of `data`, which must outlive them.
std::vector<std::string_view> safetensors_pieces(const std::string& header, const CheckpointData& data);

// Parses and validates a whole file's bytes. Every malformation is a kData
// error starting with "<path>: ", naming the tensor and byte offset where
// they apply. Tensors come back in file (data offset) order; global_step
// comes from metadata "global_step" (0 when absent), which stays in metadata.
// Never allocates more than the size of `bytes` for tensor data.
Result<CheckpointData> decode_safetensors(std::string_view bytes, const std::string& path);

}  // namespace dtrain::io
