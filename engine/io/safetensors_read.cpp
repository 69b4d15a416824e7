// Parsing and validating safetensors bytes into CheckpointData (see
// safetensors.hpp). Every check happens before any tensor is allocated.
#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/io/safetensors.hpp"

namespace dtrain::io {
namespace {

using nlohmann::json;

// One tensor's header entry after validation.
struct Entry {
  std::string name;
  Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

std::string quoted(const std::string& s) { return json(s).dump(); }

// A short rendering of a JSON value for messages.
std::string brief(const json& v) {
  std::string s = v.dump();
  return s.size() <= 60 ? s : s.substr(0, 57) + "...";
}

// Context for error messages: the file and where its data starts.
struct Reader {
  const std::string& path;
  uint64_t data_start = 0;
  uint64_t data_size = 0;

  Error fail(const std::string& what) const { return data_error(fmt::format("{}: {}", path, what)); }
  Error fail_tensor(const std::string& name, const std::string& what) const {
    return fail(fmt::format("tensor {}: {}", quoted(name), what));
  }

  Result<Entry> parse_entry(const std::string& name, const json& v) const;
  Status check_layout(std::vector<Entry>& entries) const;
};

Result<Entry> Reader::parse_entry(const std::string& name, const json& v) const {
  if (!v.is_object())
    return fail_tensor(name, fmt::format("entry is a JSON {}, not an object with dtype, shape, data_offsets", v.type_name()));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) return fail_tensor(name, fmt::format("missing \"{}\"", key));
  const json& dtype = v["dtype"];
  if (!dtype.is_string()) return fail_tensor(name, fmt::format("\"dtype\" is a JSON {}, not a string", dtype.type_name()));
  if (dtype.get<std::string>() != "F32")
    return fail_tensor(name, fmt::format("dtype {} is not supported (dtrain checkpoints hold only F32)", dtype.dump()));

  Entry e{name, {}, 0, 0};
  const json& shape = v["shape"];
  bool shape_ok = shape.is_array();
  for (size_t i = 0; shape_ok && i < shape.size(); ++i) {
    shape_ok = shape[i].is_number_unsigned() && shape[i].get<uint64_t>() <= INT64_MAX;
    if (shape_ok) e.shape.push_back(shape[i].get<int64_t>());
  }
  if (!shape_ok)
    return fail_tensor(name, fmt::format("\"shape\" must be an array of non-negative integers, got {}", brief(shape)));

  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned() ||
      off[0].get<uint64_t>() > off[1].get<uint64_t>())
    return fail_tensor(name, fmt::format("\"data_offsets\" must be [begin, end] with 0 <= begin <= end, got {}", brief(off)));
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();

  uint64_t bytes = sizeof(float);
  bool overflow = false;
  for (int64_t d : e.shape) overflow = overflow || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes);
  if (overflow || e.end - e.begin != bytes) {
    std::string size = overflow ? "more than 2^64 bytes" : fmt::format("{} bytes", bytes);
    return fail_tensor(name, fmt::format("data_offsets [{}, {}] do not match shape {} of F32 ({})", e.begin, e.end,
                                         shape_str(e.shape), size));
  }
  if (e.end > data_size)
    return fail_tensor(name, fmt::format("data_offsets [{}, {}] run past the end of the file ({} data bytes from byte {})",
                                         e.begin, e.end, data_size, data_start));
  return e;
}

// Sorts entries by offset and requires them to tile [0, data_size) exactly.
Status Reader::check_layout(std::vector<Entry>& entries) const {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < pos)
      return fail_tensor(e.name, fmt::format("data_offsets [{}, {}] overlap tensor {} [{}, {}] (at byte {})", e.begin,
                                             e.end, quoted(prev->name), prev->begin, prev->end, data_start + e.begin));
    if (e.begin > pos) {
      std::string after = prev ? "after tensor " + quoted(prev->name) : std::string("at the start of the data");
      return fail_tensor(e.name, fmt::format("data_offsets [{}, {}] leave bytes [{}, {}) unused {} (at byte {})", e.begin,
                                             e.end, pos, e.begin, after, data_start + pos));
    }
    pos = e.end;
    prev = &e;
  }
  if (pos != data_size)
    return fail(fmt::format("{} trailing bytes after the last tensor's data (at byte {})", data_size - pos, data_start + pos));
  return Status::Ok();
}

// Copies "__metadata__" (null or an object of strings) into `out`.
Status read_metadata(const Reader& r, const json& meta, CheckpointData& out) {
  if (meta.is_null()) return Status::Ok();
  if (!meta.is_object()) return r.fail(fmt::format("\"__metadata__\" is a JSON {}, not an object", meta.type_name()));
  for (const auto& [key, value] : meta.items()) {
    if (!value.is_string())
      return r.fail(fmt::format("\"__metadata__\" value for {} is a JSON {}, not a string", quoted(key), value.type_name()));
    out.metadata[key] = value.get<std::string>();
  }
  auto it = out.metadata.find("global_step");
  if (it != out.metadata.end()) {
    const std::string& s = it->second;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out.global_step);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty())
      return r.fail(fmt::format("\"__metadata__\" global_step {} is not an integer", quoted(s)));
  }
  return Status::Ok();
}

}  // namespace

Result<CheckpointData> decode_safetensors(std::string_view bytes, const std::string& path) {
  Reader r{path};
  if (bytes.size() < 8)
    return r.fail(fmt::format("file is {} bytes, too short for the 8-byte safetensors header length", bytes.size()));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (n > bytes.size() - 8)
    return r.fail(fmt::format("header length {} (at byte 0) exceeds the {} bytes after it", n, bytes.size() - 8));
  r.data_start = 8 + n;
  r.data_size = bytes.size() - r.data_start;

  json header;
  try {
    header = json::parse(bytes.substr(8, n));
  } catch (const json::parse_error& e) {
    return r.fail(fmt::format("header is not valid JSON (syntax error at byte {})", 8 + std::max<size_t>(e.byte, 1) - 1));
  } catch (const json::exception& e) {  // out_of_range: a number beyond a double
    return r.fail(fmt::format("header is not valid JSON ({})", e.what()));
  }
  if (!header.is_object()) return r.fail(fmt::format("header (at byte 8) is a JSON {}, not an object", header.type_name()));

  CheckpointData out;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (Status s = read_metadata(r, value, out); !s) return s.error();
      continue;
    }
    Result<Entry> e = r.parse_entry(key, value);
    if (!e) return e.error();
    entries.push_back(std::move(*e));
  }
  if (Status s = r.check_layout(entries); !s) return s.error();

  const char* data = bytes.data() + r.data_start;
  for (const Entry& e : entries) {
    Tensor t(e.shape);
    if (e.end > e.begin) std::memcpy(t.data(), data + e.begin, e.end - e.begin);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace dtrain::io
