// TFRecord files: each record is uint64 length (little-endian), masked
// CRC32C of those 8 bytes, the data, masked CRC32C of the data. Files may be
// GZIP-compressed as a whole (TensorFlow's compression_type "GZIP").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

enum class TfRecordCompression { kNone, kGzip, kAuto };  // kAuto: gzip iff the file starts 1f 8b

// Parses "none" | "gzip" | "auto"; false for anything else.
bool parse_tfrecord_compression(const std::string& name, TfRecordCompression& out);

// The records of one file, as views into `bytes` (the decompressed file).
struct TfRecordFile {
  std::vector<uint8_t> bytes;
  std::vector<std::string_view> records;
  int64_t skipped = 0;           // corrupt records skipped (skip mode); a bad length counts 1
  std::vector<std::string> problems;  // one message per skip, worded like the fail-mode error
};

// Reads every record of `path`. A corrupt record gives, when skip_corrupt is
// false, a kData error "<path>: record <i> at offset <o>: <what>" (i counts
// records from 0, o is the record's byte offset in the decompressed stream),
// with <what> one of "data CRC mismatch", "length CRC mismatch", "truncated
// record header (<n> bytes left)", "truncated record: length <l> but <n> bytes
// left". With skip_corrupt a data CRC mismatch skips that record; the others
// make the length untrustworthy, so the rest of the file is skipped (one
// count, its problem ends "; skipped the rest of the file").
// Other errors (kData): cannot open, corrupt gzip, compression gzip on a file
// that is not gzip.
Result<TfRecordFile> read_tfrecord_file(const std::string& path, TfRecordCompression compression, bool skip_corrupt);

// One record framed as TFRecord, appended to `out`.
void append_tfrecord(std::string& out, std::string_view data);

// Writes `framed` (records made by append_tfrecord) to `path`, gzip-compressed
// when `gzip`. Errors (kData): cannot create or write the file.
Status write_tfrecord_file(const std::string& path, const std::string& framed, bool gzip);

}  // namespace dtrain
