// NumPy .npy files for predict's input and output: read float32/float64/
// uint8/int32/int64 C-order arrays as float32 tensors; write float32.
#pragma once

#include <string>

#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// Malformed files give a kData error naming the file and the problem.
Result<Tensor> read_npy(const std::string& path);
Status write_npy(const std::string& path, const Tensor& t);

}  // namespace dtrain
