// PNG encoding of 8-bit pixels with libpng's simplified API, for TensorBoard
// image summaries (Summary.Image's encoded_image_string).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

// 8-bit pixels in HWC order: height x width x channels (1 gray, 3 RGB, 4 RGBA).
struct Image8 {
  int height = 0, width = 0, channels = 3;
  std::vector<uint8_t> pixels;  // height * width * channels
};

// The PNG file of `image`. REQUIRES: pixels.size() == height * width * channels,
// channels 1, 3 or 4. Errors (kRuntime) are libpng's message.
Result<std::string> encode_png(const Image8& image);

}  // namespace dtrain
