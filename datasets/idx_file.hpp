// Reading whole data files (raw or gzip, detected by magic bytes 1f 8b) and
// parsing IDX arrays (MNIST's format: magic 00 00 <dtype> <ndims>, big-endian
// uint32 dims, then the data, big-endian for multi-byte types).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// The file's bytes; gzip files (one or more members) are decompressed.
// Errors (kData, prefixed "<path>: "): cannot open, corrupt or truncated gzip.
Result<std::vector<uint8_t>> read_data_file(const std::string& path);

// One IDX array. uint8 data (dtype 0x08) stays raw in `u8`; every other dtype
// (0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64) is
// converted to float in `f32`. Element order is the file's (row-major).
struct IdxArray {
  uint8_t dtype = 0;
  Shape dims;                 // e.g. {10000, 28, 28}
  std::vector<uint8_t> u8;    // dtype 0x08
  std::vector<float> f32;     // other dtypes
};

// Parses `bytes` (already decompressed) as an IDX array. `kind` is "images" or
// "labels" and words the errors (kData, prefixed "<path>: "): bad magic,
// truncated data, trailing bytes, zero-sized example dimensions.
Result<IdxArray> parse_idx(const std::vector<uint8_t>& bytes, const std::string& path, const std::string& kind);

}  // namespace dtrain
