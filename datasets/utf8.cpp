// decode_utf8 / encode_utf8 (see utf8.hpp): the byte ranges of RFC 3629's
// table 3-7, so overlong forms and surrogates fail at their second byte.
#include "datasets/utf8.hpp"

#include <fmt/format.h>

#include <cassert>

namespace dtrain {

bool decode_utf8(const uint8_t* bytes, size_t n, std::vector<uint32_t>& out, Utf8Problem* problem) {
  size_t i = 0;
  while (i < n) {
    const uint8_t b0 = bytes[i];
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    int len = 0;
    uint8_t lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      len = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      len = 3;
      if (b0 == 0xe0) lo = 0xa0;  // below: overlong
      if (b0 == 0xed) hi = 0x9f;  // above: surrogates
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      len = 4;
      if (b0 == 0xf0) lo = 0x90;  // below: overlong
      if (b0 == 0xf4) hi = 0x8f;  // above: beyond U+10FFFF
    } else {
      *problem = {i, fmt::format("byte 0x{:02x} cannot start a character", b0)};
      return false;
    }
    if (i + static_cast<size_t>(len) > n) {
      // A cut-short sequence at the end is reported as such only when the
      // bytes present are right so far.
      bool prefix_ok = true;
      for (size_t k = 1; i + k < n; ++k) {
        const uint8_t b = bytes[i + k];
        prefix_ok = prefix_ok && (k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xbf);
      }
      if (prefix_ok) {
        *problem = {i, fmt::format("the file ends inside a character (lead byte 0x{:02x})", b0)};
        return false;
      }
    }
    uint32_t cp = b0 & (0xffu >> (len + 1));
    for (int k = 1; k < len; ++k) {
      const size_t at = i + static_cast<size_t>(k);
      const uint8_t b = at < n ? bytes[at] : 0;
      const bool ok = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xbf;
      if (at >= n || !ok) {
        std::string seq;
        for (size_t j = i; j <= at && j < n; ++j) seq += fmt::format("{}0x{:02x}", j == i ? "" : " ", bytes[j]);
        *problem = {i, fmt::format("bytes {} are not a valid character", seq)};
        return false;
      }
      cp = (cp << 6) | (b & 0x3fu);
    }
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return true;
}

std::string encode_utf8(uint32_t cp) {
  assert(cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff));
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xc0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xe0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    s += static_cast<char>(0xf0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return s;
}

}  // namespace dtrain
