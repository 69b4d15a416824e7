// PNG decoding of tf.Example bytes features (decode: png) with libpng's
// simplified API: any PNG (palette, 16-bit, gray, RGB, alpha) becomes 8-bit
// pixels with the channel count of the feature's shape.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/base/status.hpp"

namespace dtrain {

// Decodes `png` into h*w*c floats 0..255 in HWC order; c is 1 (gray),
// 2 (gray, alpha), 3 (RGB) or 4 (RGBA), converted by libpng as needed.
// Errors (kData, "<where>: ..."): not a PNG or corrupt, or its size is not h x w.
Status decode_png(std::string_view png, int64_t h, int64_t w, int64_t c, float* out, const std::string& where);

}  // namespace dtrain
