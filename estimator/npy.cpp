// .npy reader/writer (format version 1.0-3.0, little-endian, C order).
#include "estimator/npy.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>
#include <vector>

namespace dtrain {
namespace {

template <class T>
void convert(const char* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    dst[i] = static_cast<float>(v);
  }
}

}  // namespace

Result<Tensor> read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return data_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& what) { return data_error(fmt::format("{}: not a valid .npy file: {}", path, what)); };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) return bad("missing the \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    return bad(fmt::format("unsupported format version {}", major));
  }
  if (offset + header_len > bytes.size()) return bad("header longer than the file");
  const std::string header(bytes.data() + offset, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([<>|=])([fiu])(\d+)')"))) return bad("no 'descr'");
  const char order = m[1].str()[0], kind = m[2].str()[0];
  const int size = std::stoi(m[3].str());
  if (order == '>' && size > 1) return bad("big-endian data is not supported");
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"))) return bad("Fortran-order arrays are not supported");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) return bad("no 'shape'");
  Shape shape;
  const std::string dims = m[1].str();
  const std::regex digits(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), digits), end; it != end; ++it) {
    shape.push_back(std::stoll(it->str()));
  }
  const int64_t n = num_elements(shape);
  const size_t data_off = offset + header_len;
  if (bytes.size() - data_off < static_cast<size_t>(n) * static_cast<size_t>(size)) {
    return bad(fmt::format("shape {} needs {} bytes of data, the file has {}", shape_str(shape),
                           static_cast<size_t>(n) * static_cast<size_t>(size), bytes.size() - data_off));
  }
  Tensor t(shape);
  const char* src = bytes.data() + data_off;
  if (kind == 'f' && size == 4) convert<float>(src, t.data(), n);
  else if (kind == 'f' && size == 8) convert<double>(src, t.data(), n);
  else if (kind == 'u' && size == 1) convert<uint8_t>(src, t.data(), n);
  else if (kind == 'i' && size == 4) convert<int32_t>(src, t.data(), n);
  else if (kind == 'i' && size == 8) convert<int64_t>(src, t.data(), n);
  else return bad(fmt::format("unsupported dtype {}{}", kind, size));
  return t;
}

Status write_npy(const std::string& path, const Tensor& t) {
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  if (t.rank() > 1) shape.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_bytes, 2);
  f << header;
  f.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
  if (!f) return runtime_error(fmt::format("cannot write {}", path));
  return Status::Ok();
}

}  // namespace dtrain
