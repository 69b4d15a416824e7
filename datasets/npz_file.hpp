// Reading members of a zip archive (NumPy's .npz): the central directory is
// parsed here; members may be stored or deflated (zlib), CRC-32 checked.
// Zip64 archives (members over 4 GiB) are not supported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

struct ZipArchive {
  struct Member {
    std::string name;
    uint16_t method = 0;  // 0 stored, 8 deflated
    uint32_t crc = 0;
    uint64_t compressed = 0, size = 0, local_offset = 0;
  };
  std::string path;
  std::vector<uint8_t> bytes;  // the whole file
  std::vector<Member> members; // in central-directory order
};

// Reads `path` and its central directory. Errors (kData, "<path>: ..."):
// cannot open, no end-of-central-directory record, truncated or zip64.
Result<ZipArchive> open_zip(const std::string& path);

// The uncompressed bytes of member `name`. Errors (kData, "<path>: <name>:
// ..."): no such member (the message lists the members), unsupported method,
// corrupt deflate data, size or CRC-32 mismatch.
Result<std::vector<uint8_t>> read_zip_member(const ZipArchive& zip, const std::string& name);

}  // namespace dtrain
