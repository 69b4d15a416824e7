// JPEG decoding of tf.Example bytes features (decode: jpeg) with libjpeg
// (Debian's libjpeg62-turbo): baseline and progressive JPEGs become 8-bit
// gray or RGB pixels, converted by libjpeg to the feature's channel count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/base/status.hpp"

namespace dtrain {

// Decodes `jpeg` into h*w*c floats 0..255 in HWC order; c is 1 (gray) or 3
// (RGB). Uses the accurate integer DCT (libjpeg's JDCT_ISLOW, TensorFlow's
// dct_method INTEGER_ACCURATE). Errors (kData, "<where>: ..."): not a JPEG or
// corrupt, or its size is not h x w.
Status decode_jpeg(std::string_view jpeg, int64_t h, int64_t w, int64_t c, float* out, const std::string& where);

}  // namespace dtrain
