// The records of a streaming tfrecord input (data.*.stream), in the order
// the in-memory pipeline would give them for the same file order: files
// shuffled per epoch, read cycle_length at a time (tf.data's deterministic
// interleave), through a shuffle buffer of N records (tf.data's semantics and
// the draws of IndexOrder::epoch_order), epoch after epoch. Its exact
// position (open files' byte offsets, the buffer as record references, the
// draw counter) is a StreamState, which a new stream restores without
// reading anything but the referenced records.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "datasets/read_ahead.hpp"
#include "datasets/tfrecord_reader.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

struct StreamSpec {
  std::vector<std::string> files;  // every file of the source in glob order; file f's records get ids f << 40 | index
  std::vector<int32_t> use;        // the files read (all, or this worker's with shard: file), ascending; REQUIRES non-empty
  TfRecordCompression compression = TfRecordCompression::kAuto;
  bool skip_corrupt = false;       // on_error: skip
  int64_t cycle_length = 1, block_length = 1;  // REQUIRES >= 1
  int64_t shuffle_buffer = 0;      // records; 0 or 1: no shuffling (and the files in glob order)
  uint64_t seed = 0;
  bool repeat = false;
  // The cap on the shuffle buffer's encoded bytes (0: none) and the error
  // when a record would exceed it, "<cap_message> <bytes and records>".
  int64_t max_buffer_bytes = 0;
  std::string cap_message;
  // cache: memory: keep each file's records once read from its start to its
  // end; later epochs read them from memory. They count against
  // max_buffer_bytes with the shuffle buffer (the error then says so).
  bool cache = false;
};

// A record reference: file number, byte offset in the decompressed file, record number in the file.
struct RecordRef {
  int32_t file = 0;
  int64_t offset = 0, index = 0;
};

// The exact position of a RecordStream between two records.
struct StreamState final : InputState {
  int64_t epoch = 0, draws = 0;  // draws: records drawn from the buffer (or passed through) in the epoch
  int64_t next_file = 0;         // next position of the epoch's file order to open
  int64_t cycle = 0, taken = 0;  // interleave slot whose turn it is, records it gave in this turn
  bool filled = false;           // the buffer was filled for the epoch
  bool ended = false;            // a non-repeating stream gave its last record
  struct Slot {
    int64_t position = -1;       // in the file order; -1: empty
    int64_t offset = 0, index = 0;  // of its next record
  };
  std::vector<Slot> slots;
  std::vector<RecordRef> buffer;  // in buffer order
  uint64_t files_hash = 0;        // of the file names in order
  int64_t num_files = 0;
  std::string text() const override;
};

struct StreamRecord {
  RecordRef ref;
  int64_t epoch = 0;
  std::string data;  // the serialized tf.Example
};

inline int64_t stream_record_id(const RecordRef& r) { return int64_t{r.file} << 40 | r.index; }

// Not thread-safe: one user at a time.
class RecordStream {
 public:
  explicit RecordStream(StreamSpec spec);

  // The next record into `out`; false at the end (non-repeating). Errors:
  // the files' (kData, see TfRecordReader), the cap's (kConfig).
  Result<bool> next(StreamRecord& out);
  // Where the stream is now.
  std::shared_ptr<const StreamState> snapshot() const;
  // Continues from `text` (StreamState::text() of a stream of the same files
  // and settings): kData when it is malformed or names other files.
  Status restore(const std::string& text);
  // Messages of corrupt records skipped since the last call (on_error: skip).
  std::vector<std::string> take_skipped();
  // The encoded bytes in the shuffle buffer now, and in the cache.
  int64_t buffer_bytes() const { return buffer_bytes_; }
  int64_t cache_bytes() const { return cache_bytes_; }

  // The epoch's file order: `use` permuted by (seed, epoch) when `shuffle`.
  static std::vector<int32_t> file_order(const std::vector<int32_t>& use, uint64_t seed, int64_t epoch, bool shuffle);

 private:
  // A file's records in memory (cache: memory), and where the file ends.
  struct CachedFile {
    std::vector<std::string> data;
    std::vector<RecordRef> refs;
    int64_t end_offset = 0, end_index = 0;
  };
  struct Slot {
    int64_t position = -1;
    std::unique_ptr<ReadAheadReader> reader;   // reading the file (on its own thread), or
    std::shared_ptr<const CachedFile> cached;  // reading its cached records
    size_t cursor = 0;                         // next of cached's records
    std::shared_ptr<CachedFile> filling;       // the cache being made from reader (read from its start)
    bool open() const { return reader || cached; }
  };
  struct Buffered {
    RecordRef ref;
    std::string data;
  };
  bool shuffling() const { return spec_.shuffle_buffer > 1; }
  void start_epoch(int64_t epoch);
  Result<std::unique_ptr<TfRecordReader>> open_file(int32_t file) const;
  // The next record of the interleaved files; false when they are exhausted.
  Result<bool> pull(Buffered& out);
  Status add_to_buffer(Buffered b);
  // The cap's error when `more` bytes would exceed it, else OK.
  Status check_cap(int64_t more, const char* what) const;

  StreamSpec spec_;
  uint64_t files_hash_ = 0;
  int64_t epoch_ = 0, draws_ = 0, next_file_ = 0, cycle_ = 0, taken_ = 0, open_ = 0;
  bool filled_ = false, ended_ = false;
  std::vector<int32_t> order_;  // the epoch's file order
  std::vector<Slot> slots_;     // cycle_length
  std::vector<Buffered> buffer_;
  int64_t buffer_bytes_ = 0;
  std::vector<std::shared_ptr<const CachedFile>> cache_;  // by file number; null: not cached
  int64_t cache_bytes_ = 0;                                // in cache_ and in slots' filling
  std::vector<std::string> skipped_;
};

}  // namespace dtrain
