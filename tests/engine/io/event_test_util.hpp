// The engine/io tests' reader of event files: TFRecord framing with both
// masked CRCs verified, each record decoded as a tensorflow.Event.
#pragma once

#include <doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/io/summary_writer.hpp"
#include "event.pb.h"
#include "io_test_util.hpp"

namespace dtrain::testing {

inline uint32_t le32(const std::string& s, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

// Splits TFRecord bytes into records, verifying lengths and masked CRCs.
// Returns an error text instead when the framing is wrong.
inline Result<std::vector<std::string>> read_records(const std::string& bytes) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 12) return runtime_error("truncated header at " + std::to_string(pos));
    uint64_t len = 0;
    std::memcpy(&len, bytes.data() + pos, 8);
    if (le32(bytes, pos + 8) != masked_crc32c(bytes.data() + pos, 8)) return runtime_error("bad length crc");
    if (bytes.size() - pos - 12 < len + 4) return runtime_error("truncated record");
    std::string data = bytes.substr(pos + 12, len);
    if (le32(bytes, pos + 12 + len) != masked_crc32c(data.data(), data.size())) return runtime_error("bad data crc");
    out.push_back(std::move(data));
    pos += 12 + len + 4;
  }
  return out;
}

inline std::vector<tensorflow::Event> read_events(const std::string& path) {
  Result<std::vector<std::string>> records = read_records(read_bytes(path));
  REQUIRE(records.ok());
  std::vector<tensorflow::Event> events;
  for (const std::string& r : *records) {
    tensorflow::Event ev;
    REQUIRE(ev.ParseFromString(r));
    events.push_back(ev);
  }
  return events;
}

}  // namespace dtrain::testing
