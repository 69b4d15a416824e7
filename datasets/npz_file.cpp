// Minimal zip reader for .npz files: end-of-central-directory search, central
// directory entries, local headers, stored or raw-deflate data via zlib.
#include "datasets/npz_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace dtrain {

namespace {

uint32_t le(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Result<ZipArchive> open_zip(const std::string& path) {
  ZipArchive zip;
  zip.path = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) return data_error(path + ": cannot open: " + std::strerror(errno));
  zip.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const std::vector<uint8_t>& b = zip.bytes;
  const size_t n = b.size();
  // The end-of-central-directory record (22 bytes + a comment up to 64 KiB).
  size_t eocd = n;
  for (size_t i = n >= 22 ? n - 22 : 0; n >= 22; --i) {
    if (le(&b[i], 4) == 0x06054b50) {
      eocd = i;
      break;
    }
    if (i == 0 || n - i > 22 + 65535) break;
  }
  if (eocd == n) return data_error(path + ": not a zip archive (no end-of-central-directory record)");
  const uint32_t count = le(&b[eocd + 10], 2);
  const uint32_t cd_size = le(&b[eocd + 12], 4), cd_offset = le(&b[eocd + 16], 4);
  if (count == 0xffff || cd_offset == 0xffffffffu) return data_error(path + ": zip64 archives are not supported");
  if (static_cast<uint64_t>(cd_offset) + cd_size > eocd) return data_error(path + ": truncated zip central directory");
  size_t at = cd_offset;
  for (uint32_t k = 0; k < count; ++k) {
    if (at + 46 > eocd || le(&b[at], 4) != 0x02014b50) {
      return data_error(fmt::format("{}: corrupt zip central directory entry {}", path, k));
    }
    ZipArchive::Member m;
    m.method = static_cast<uint16_t>(le(&b[at + 10], 2));
    m.crc = le(&b[at + 16], 4);
    m.compressed = le(&b[at + 20], 4);
    m.size = le(&b[at + 24], 4);
    const size_t name_len = le(&b[at + 28], 2), extra_len = le(&b[at + 30], 2), comment_len = le(&b[at + 32], 2);
    m.local_offset = le(&b[at + 42], 4);
    if (m.compressed == 0xffffffffu || m.size == 0xffffffffu || m.local_offset == 0xffffffffu) {
      return data_error(path + ": zip64 archives are not supported");
    }
    if (at + 46 + name_len > eocd) return data_error(fmt::format("{}: corrupt zip central directory entry {}", path, k));
    m.name.assign(reinterpret_cast<const char*>(&b[at + 46]), name_len);
    zip.members.push_back(std::move(m));
    at += 46 + name_len + extra_len + comment_len;
  }
  return zip;
}

Result<std::vector<uint8_t>> read_zip_member(const ZipArchive& zip, const std::string& name) {
  const ZipArchive::Member* m = nullptr;
  std::string names;
  for (const ZipArchive::Member& x : zip.members) {
    if (x.name == name) m = &x;
    names += (names.empty() ? "" : ", ") + x.name;
  }
  const std::string at = zip.path + ": " + name + ": ";
  if (m == nullptr) return data_error(at + "no such member in the archive (members: " + names + ")");
  const std::vector<uint8_t>& b = zip.bytes;
  const uint64_t lh = m->local_offset;
  if (lh + 30 > b.size() || le(&b[lh], 4) != 0x04034b50) return data_error(at + "corrupt local header");
  const uint64_t data = lh + 30 + le(&b[lh + 26], 2) + le(&b[lh + 28], 2);
  if (data + m->compressed > b.size()) return data_error(at + "truncated member data");
  if (m->method != 0 && m->method != 8) {
    return data_error(fmt::format("{}compression method {} is not supported (only stored and deflated)", at, m->method));
  }
  if (m->method == 0 && m->compressed != m->size) return data_error(at + "stored member with different sizes");
  // Deflate expands at most 1032 times (RFC 1951: 258 bytes from each 2-bit
  // code, after the block headers): a larger size is a corrupt directory,
  // refused before that size is allocated.
  if (m->method == 8 && m->size > m->compressed * 1032 + 1024) {
    return data_error(fmt::format("{}corrupt sizes: {} bytes uncompressed from {} compressed (deflate expands at most "
                                  "1032 times)", at, m->size, m->compressed));
  }
  std::vector<uint8_t> out(m->size);
  if (m->method == 0) {
    if (m->size > 0) std::memcpy(out.data(), &b[data], m->size);  // an empty vector's data() may be null
  } else {  // deflated
    z_stream z{};
    if (inflateInit2(&z, -15) != Z_OK) return data_error(at + "zlib init failed");
    z.next_in = const_cast<Bytef*>(&b[data]);
    z.avail_in = static_cast<uInt>(m->compressed);
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z, Z_FINISH);
    const uint64_t produced = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || produced != m->size) return data_error(at + "corrupt deflate data");
  }
  const uint32_t crc = static_cast<uint32_t>(crc32(0L, out.data(), static_cast<uInt>(out.size())));
  if (crc != m->crc) return data_error(at + "CRC-32 mismatch");
  return out;
}

}  // namespace dtrain
