// Reading a TFRecord file one record at a time (data.*.stream), from any byte
// offset, with the CRC checks and messages of read_tfrecord_file; only a
// small read buffer is held, whatever the file's size.
#pragma once

#include <cstdint>
#include <memory>
#include <cstdio>
#include <string>
#include <vector>

#include "datasets/tfrecord_file.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// One open file. Not thread-safe: one user at a time.
class TfRecordReader {
 public:
  // Opens `path`; kAuto reads gzip when the file starts 1f 8b. Errors (kData):
  // cannot open; compression gzip on a file that is not gzip.
  static Result<std::unique_ptr<TfRecordReader>> open(const std::string& path, TfRecordCompression compression);
  ~TfRecordReader();
  TfRecordReader(const TfRecordReader&) = delete;
  TfRecordReader& operator=(const TfRecordReader&) = delete;

  // Makes the record at byte `offset` of the (decompressed) stream, numbered
  // `index` in its file, the next one. A gzip file is decompressed from its
  // start up to there. Error (kData) when the file is shorter.
  Status seek(int64_t offset, int64_t index);

  // Reads the next record into `data`; false at the end of the file. On
  // return `offset` and `index` are the record's byte offset and number.
  // A corrupt record gives, when skip_corrupt is false, a kData error worded
  // as read_tfrecord_file's ("<path>: record <i> at offset <o>: <what>").
  // With skip_corrupt a data CRC mismatch skips that record and a bad length
  // the rest of the file, each appending one message to *skipped.
  Result<bool> next(std::string& data, int64_t& offset, int64_t& index, bool skip_corrupt,
                    std::vector<std::string>* skipped);

  const std::string& path() const { return path_; }
  // The byte offset and number of the record next() reads next.
  int64_t offset() const { return offset_; }
  int64_t index() const { return index_; }

 private:
  TfRecordReader(std::string path, void* gz, std::FILE* plain);
  // Reads up to n bytes; the count read (short only at the end). -1: a read error.
  int64_t read(void* to, int64_t n);

  std::string path_;
  void* gz_ = nullptr;          // gzFile when gzip
  std::FILE* plain_ = nullptr;  // otherwise
  int64_t offset_ = 0;
  int64_t index_ = 0;
  bool ended_ = false;  // the rest of the file was skipped
};

}  // namespace dtrain
