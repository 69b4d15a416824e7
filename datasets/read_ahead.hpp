// A TfRecordReader read ahead on its own thread (data.*.stream's parallel
// reads): the open files of an interleave cycle are read at once, and while
// the records before them decode. The caller sees the records, their
// positions and errors exactly as the plain reader gives them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "datasets/tfrecord_reader.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

class ReadAheadReader {
 public:
  // Each open file's queue holds up to this many bytes of records (at least
  // one record, whatever its size); with the reader's 64 KiB buffer, an open
  // file holds 256 KiB.
  static constexpr int64_t kQueueBytes = int64_t{192} << 10;

  // Starts reading `reader` from where it stands (after any seek), with
  // TfRecordReader::next's skip_corrupt.
  ReadAheadReader(std::unique_ptr<TfRecordReader> reader, bool skip_corrupt);
  ~ReadAheadReader();  // stops the thread and joins it
  ReadAheadReader(const ReadAheadReader&) = delete;
  ReadAheadReader& operator=(const ReadAheadReader&) = delete;

  // TfRecordReader::next's contract: the next record (false at the end, the
  // same errors, skip messages appended to *skipped when the record after
  // them is taken).
  Result<bool> next(std::string& data, int64_t& offset, int64_t& index, std::vector<std::string>* skipped);

  // The byte offset and number of the record next() gives next (the
  // caller's position, not the reading thread's).
  int64_t offset() const { return offset_; }
  int64_t index() const { return index_; }

 private:
  struct Entry {
    std::string data;
    int64_t offset = 0, index = 0;            // the record's
    int64_t next_offset = 0, next_index = 0;  // the reader's after it
    std::vector<std::string> skipped;
    bool end = false;                         // no record: the end, or `error`
    Status error;
  };
  void run();

  std::unique_ptr<TfRecordReader> reader_;  // the reading thread's
  const bool skip_corrupt_;
  int64_t offset_ = 0, index_ = 0;  // the caller's
  bool done_ = false;               // the caller took the end or an error
  Entry last_;                      // that end or error, given again

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Entry> queue_;  // GUARDED_BY(mu_)
  int64_t queued_bytes_ = 0;  // GUARDED_BY(mu_)
  bool stop_ = false;         // GUARDED_BY(mu_)
  std::thread thread_;        // last: started once the rest is set
};

}  // namespace dtrain
