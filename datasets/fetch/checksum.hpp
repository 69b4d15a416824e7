// File digests (MD5, SHA-256 through OpenSSL's libcrypto) and checksum files
// in md5sum/sha256sum format, for verifying downloaded dataset files.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "datasets/fetch/catalog.hpp"
#include "engine/base/status.hpp"

namespace dtrain::fetch {

// Lower-case hex digest of the bytes in `data`.
std::string bytes_digest(std::string_view data, DigestAlgo algo);

// Lower-case hex digest of a file's contents; a runtime error naming the
// file when it cannot be read.
Result<std::string> file_digest(const std::filesystem::path& path, DigestAlgo algo);

// Parses checksum lines as md5sum/sha256sum print them: "<hex>  <file name>"
// (a '*' before the name, blank lines and '#' comments are allowed). The
// algorithm follows from the digest's length: 32 hex digits MD5, 64 SHA-256.
// Errors (kConfig) name `source` and the line. Keys are file names.
Result<std::map<std::string, ExpectedDigest>> parse_checksums(std::string_view text, std::string_view source);

// Reads and parses a checksum file (see parse_checksums).
Result<std::map<std::string, ExpectedDigest>> read_checksum_file(const std::filesystem::path& path);

}  // namespace dtrain::fetch
