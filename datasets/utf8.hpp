// Strict UTF-8 (RFC 3629) for the text source: decoding bytes into Unicode
// code points, rejecting what is not UTF-8, and encoding them back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dtrain {

// Where decoding stopped: `offset` is the byte offset of the first byte of
// the bad sequence; `reason` says what is wrong, e.g. "byte 0xff cannot start
// a character" or "the file ends inside a character".
struct Utf8Problem {
  size_t offset = 0;
  std::string reason;
};

// Appends the code points of bytes[0 .. n) to `out`. Rejected (returns false
// with *problem set, `out` holding the code points before it): a byte that
// cannot start a character (0x80-0xc1, 0xf5-0xff), a lead byte not followed
// by enough continuation bytes, overlong forms, surrogates (U+D800-U+DFFF)
// and code points above U+10FFFF.
bool decode_utf8(const uint8_t* bytes, size_t n, std::vector<uint32_t>& out, Utf8Problem* problem);

// The UTF-8 bytes of one code point. REQUIRES: cp <= 0x10ffff, not a surrogate.
std::string encode_utf8(uint32_t cp);

}  // namespace dtrain
