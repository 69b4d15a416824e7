// TensorBoard event files: events.out.tfevents.<secs>.<host>.<pid>.<n> in a
// directory (<n> counts writers opened by this process, so two opened in the
// same second never share a file), TFRecord framing (length, masked CRC32C of
// the length, data, masked CRC32C of the data) around tensorflow.Event
// protobufs. The first record is file_version "brain.Event:2". Each event is
// flushed to the OS as written (TensorBoard sees it); flush() also fsyncs.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/status.hpp"
#include "engine/io/histogram.hpp"

namespace dtrain {

// CRC32C (Castagnoli) of `n` bytes, continuing from `crc` (the CRC of the
// bytes before them; 0 to start): crc32c(b, crc32c(a)) == crc32c(a + b).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(const void* data, size_t n);

class SummaryWriter {
 public:
  // Creates `dir` if needed and opens a new event file in it.
  static Result<std::unique_ptr<SummaryWriter>> open(const std::string& dir);
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // Appends one Event with one scalar (Summary.Value.simple_value).
  // Values are stored as float32, as TensorBoard's simple_value is.
  Status scalar(const std::string& tag, int64_t step, double value);
  // Appends one Event holding one Summary.Value per (tag, value); nothing
  // when `values` is empty.
  Status scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  // Appends one Event with one image (Summary.Value.image: height, width,
  // colorspace = channels, the encoded PNG or JPEG bytes), which TensorBoard
  // shows in its Images tab.
  Status image(const std::string& tag, int64_t step, int height, int width, int channels,
               const std::string& encoded);
  // Appends one Event with one histogram (Summary.Value.histo, TensorFlow's
  // v1 HistogramProto), which TensorBoard shows in its Histograms and
  // Distributions tabs. The second form bins `values` (make_histogram).
  Status histogram(const std::string& tag, int64_t step, const Histogram& h);
  Status histogram(const std::string& tag, int64_t step, std::span<const float> values);
  // Appends one Event with one text summary (the text plugin's: a scalar
  // DT_STRING tensor, plugin_name "text"), which TensorBoard renders as
  // Markdown in its Text tab.
  Status text(const std::string& tag, int64_t step, const std::string& markdown);
  // Appends one Event whose summary is `summary`, a serialized
  // tensorflow.Summary (tf.summary.experimental.write_raw_pb); for plugins'
  // summaries made elsewhere (engine/io/hparams_summary.hpp).
  Status raw_summary(int64_t step, const std::string& summary);
  Status flush();  // fflush + fsync
  // Flushes, fsyncs and closes the file; later writes fail. The destructor
  // closes too but cannot report errors.
  Status close();
  const std::string& path() const { return path_; }

 private:
  SummaryWriter(std::string path, std::FILE* f) : path_(std::move(path)), file_(f) {}
  Status write_record(const std::string& bytes);
  Error io_error(const char* what) const;
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace dtrain
