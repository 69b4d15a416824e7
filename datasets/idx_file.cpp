// Whole-file reading with gzip detection (zlib inflate), and the IDX parser.
#include "datasets/idx_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace dtrain {

namespace {

bool is_gzip(const std::vector<uint8_t>& b, size_t at = 0) {
  return b.size() >= at + 2 && b[at] == 0x1f && b[at + 1] == 0x8b;
}

// Decompresses every gzip member of `in` (a file may hold several, as `cat a.gz
// b.gz` makes). Errors are kData, prefixed with `path`.
Result<std::vector<uint8_t>> gunzip(const std::vector<uint8_t>& in, const std::string& path) {
  std::vector<uint8_t> out;
  // The last 4 bytes hold the uncompressed size mod 2^32: a good first guess,
  // unless it is more than deflate can give from these bytes (at most 1032
  // times: a corrupt or hostile trailer must not reserve gigabytes).
  if (in.size() >= 4) {
    const size_t n = in.size();
    const size_t isize =
        uint32_t{in[n - 4]} | uint32_t{in[n - 3]} << 8 | uint32_t{in[n - 2]} << 16 | uint32_t{in[n - 1]} << 24;
    out.reserve(std::min(isize, n * 1032));
  }
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return runtime_error(path + ": cannot initialise zlib");
  size_t consumed = 0;  // bytes of `in` handed to zlib so far
  std::string problem;
  constexpr size_t kChunk = size_t{1} << 20;
  uint8_t buf[1 << 16];
  for (;;) {
    if (zs.avail_in == 0 && consumed < in.size()) {
      const size_t n = std::min(kChunk, in.size() - consumed);
      zs.next_in = const_cast<Bytef*>(in.data() + consumed);
      zs.avail_in = static_cast<uInt>(n);
      consumed += n;
    }
    zs.next_out = buf;
    zs.avail_out = sizeof(buf);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out.insert(out.end(), buf, buf + (sizeof(buf) - zs.avail_out));
    if (rc == Z_STREAM_END) {
      const size_t pos = consumed - zs.avail_in;  // first byte after this member
      if (pos == in.size()) break;
      if (!is_gzip(in, pos)) {
        problem = fmt::format("{} bytes of trailing garbage after the compressed data", in.size() - pos);
        break;
      }
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && consumed == in.size()) {
      problem = "unexpected end of file (the compressed data is truncated)";
    } else if (rc == Z_MEM_ERROR) {
      inflateEnd(&zs);
      return runtime_error(path + ": out of memory while decompressing");
    } else {
      problem = zs.msg != nullptr ? zs.msg : fmt::format("zlib error {}", rc);
    }
    break;
  }
  inflateEnd(&zs);
  if (!problem.empty()) return data_error(path + ": corrupt gzip data: " + problem);
  return out;
}

uint32_t be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

// Size in bytes of one element of an IDX dtype, 0 for unknown dtypes.
size_t idx_elem_size(uint8_t dtype) {
  switch (dtype) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}

// Element i of a big-endian IDX array of a non-uint8 dtype, as float.
float idx_elem(const uint8_t* data, uint8_t dtype, size_t i) {
  uint64_t v = 0;
  const size_t w = idx_elem_size(dtype);
  for (size_t k = 0; k < w; ++k) v = v << 8 | data[i * w + k];
  switch (dtype) {
    case 0x09: return static_cast<float>(static_cast<int8_t>(v));
    case 0x0B: return static_cast<float>(static_cast<int16_t>(v));
    case 0x0C: return static_cast<float>(static_cast<int32_t>(v));
    case 0x0D: { float f; const auto u = static_cast<uint32_t>(v); std::memcpy(&f, &u, 4); return f; }
    default: { double d; std::memcpy(&d, &v, 8); return static_cast<float>(d); }
  }
}

// "10000 images of 28x28" / "10000 labels".
std::string describe_dims(const Shape& dims, const std::string& kind) {
  std::string s = fmt::format("{} {}", dims[0], kind);
  for (size_t i = 1; i < dims.size(); ++i) s += fmt::format("{}{}", i == 1 ? " of " : "x", dims[i]);
  return s;
}

}  // namespace

Result<std::vector<uint8_t>> read_data_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return data_error(path + ": cannot open: is a directory");
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return data_error(path + ": cannot open: " + std::strerror(errno));
  const std::streamoff size = f.tellg();
  if (size < 0) return data_error(path + ": cannot read: " + std::strerror(errno));
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(bytes.data()), size);
  if (f.gcount() != size) return data_error(path + ": read error: " + std::strerror(errno));
  if (is_gzip(bytes)) return gunzip(bytes, path);
  return bytes;
}

Result<IdxArray> parse_idx(const std::vector<uint8_t>& bytes, const std::string& path, const std::string& kind) {
  const char* expected = kind == "labels" ? "0x00000801 for labels" : "0x00000803 for images";
  if (bytes.size() < 4) {
    return data_error(fmt::format("{}: truncated: an IDX header needs at least 4 bytes but the file has {}", path, bytes.size()));
  }
  const uint32_t magic = be32(bytes.data());
  const uint8_t dtype = bytes[2], ndims = bytes[3];
  if (bytes[0] != 0 || bytes[1] != 0 || idx_elem_size(dtype) == 0 || ndims == 0) {
    return data_error(fmt::format("{}: not an IDX file: magic 0x{:08x} (expected {})", path, magic, expected));
  }
  const size_t header = 4 + 4 * size_t{ndims};
  if (bytes.size() < header) {
    return data_error(fmt::format("{}: truncated: the IDX header needs {} bytes but the file has {}", path, header, bytes.size()));
  }
  IdxArray a;
  a.dtype = dtype;
  for (size_t d = 0; d < ndims; ++d) a.dims.push_back(be32(bytes.data() + 4 + 4 * d));
  for (size_t d = 1; d < a.dims.size(); ++d) {
    if (a.dims[d] == 0) return data_error(fmt::format("{}: header says {}: an example cannot be empty", path, describe_dims(a.dims, kind)));
  }
  uint64_t count = 1;
  bool overflow = false;
  for (int64_t d : a.dims) overflow |= __builtin_mul_overflow(count, static_cast<uint64_t>(d), &count);
  uint64_t need = 0;
  overflow |= __builtin_mul_overflow(count, uint64_t{idx_elem_size(dtype)}, &need);
  const uint64_t have = bytes.size() - header;
  if (overflow || need > have) {
    return data_error(fmt::format("{}: truncated: header says {} ({} bytes) but only {} bytes follow", path,
                                  describe_dims(a.dims, kind), overflow ? std::string("over 2^64") : std::to_string(need), have));
  }
  if (need < have) {
    return data_error(fmt::format("{}: header says {} ({} bytes) but {} bytes follow ({} too many)", path,
                                  describe_dims(a.dims, kind), need, have, have - need));
  }
  const uint8_t* data = bytes.data() + header;
  if (dtype == 0x08) {
    a.u8.assign(data, data + count);
  } else {
    a.f32.resize(count);
    for (size_t i = 0; i < count; ++i) a.f32[i] = idx_elem(data, dtype, i);
  }
  return a;
}

}  // namespace dtrain
