// SummaryWriter: TensorBoard event files with TFRecord framing (see
// summary_writer.hpp).
#include "engine/io/summary_writer.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "engine/io/file_util.hpp"
#include "event.pb.h"

namespace dtrain {
namespace {

double wall_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// Opens a fresh event file in `dir`, never reusing an existing name.
Result<std::pair<std::string, std::FILE*>> create_event_file(const std::string& dir) {
  static std::atomic<int> counter{0};
  const std::string prefix =
      fmt::format("events.out.tfevents.{}.{}.{}", static_cast<long long>(std::time(nullptr)), host_name(), ::getpid());
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const std::string path = (std::filesystem::path(dir) / fmt::format("{}.{}", prefix, counter++)).string();
    errno = 0;
    if (std::FILE* f = std::fopen(path.c_str(), "wbx")) return std::make_pair(path, f);
    if (errno != EEXIST) return runtime_error(fmt::format("{}: cannot create event file: {}", path, io::errno_message(errno)));
  }
  return runtime_error(fmt::format("{}: cannot create event file: every name {}.<n> is taken", dir, prefix));
}

}  // namespace

Result<std::unique_ptr<SummaryWriter>> SummaryWriter::open(const std::string& dir) {
  if (Status s = io::ensure_directory(dir); !s) return s.error();
  auto file = create_event_file(dir);
  if (!file) return file.error();
  std::unique_ptr<SummaryWriter> w(new SummaryWriter(file->first, file->second));
  tensorflow::Event ev;
  ev.set_wall_time(wall_time_now());
  ev.set_file_version("brain.Event:2");
  if (Status s = w->write_record(ev.SerializeAsString()); !s) return s.error();
  if (Status s = w->flush(); !s) return s.error();
  return w;
}

SummaryWriter::~SummaryWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Error SummaryWriter::io_error(const char* what) const {
  return runtime_error(fmt::format("{}: cannot {} event file: {}", path_, what, io::errno_message(errno)));
}

Status SummaryWriter::write_record(const std::string& bytes) {
  if (file_ == nullptr) return runtime_error(fmt::format("{}: event file is closed", path_));
  unsigned char header[12];
  const uint64_t len = bytes.size();
  for (int i = 0; i < 8; ++i) header[i] = static_cast<unsigned char>(len >> (8 * i));
  const uint32_t header_crc = masked_crc32c(header, 8);
  const uint32_t data_crc = masked_crc32c(bytes.data(), bytes.size());
  unsigned char footer[4];
  for (int i = 0; i < 4; ++i) {
    header[8 + i] = static_cast<unsigned char>(header_crc >> (8 * i));
    footer[i] = static_cast<unsigned char>(data_crc >> (8 * i));
  }
  errno = 0;
  if (std::fwrite(header, 1, sizeof(header), file_) != sizeof(header) ||
      std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() ||
      std::fwrite(footer, 1, sizeof(footer), file_) != sizeof(footer) || std::fflush(file_) != 0)
    return io_error("write");
  return Status::Ok();
}

Status SummaryWriter::scalar(const std::string& tag, int64_t step, double value) {
  return scalars(step, {{tag, value}});
}

Status SummaryWriter::scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  if (values.empty()) return Status::Ok();
  tensorflow::Event ev;
  ev.set_wall_time(wall_time_now());
  ev.set_step(step);
  for (const auto& [tag, value] : values) {
    tensorflow::Summary::Value* v = ev.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return write_record(ev.SerializeAsString());
}

Status SummaryWriter::image(const std::string& tag, int64_t step, int height, int width, int channels,
                            const std::string& encoded) {
  tensorflow::Event ev;
  ev.set_wall_time(wall_time_now());
  ev.set_step(step);
  tensorflow::Summary::Value* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  tensorflow::Summary::Image* im = v->mutable_image();
  im->set_height(height);
  im->set_width(width);
  im->set_colorspace(channels);
  im->set_encoded_image_string(encoded);
  return write_record(ev.SerializeAsString());
}

Status SummaryWriter::histogram(const std::string& tag, int64_t step, const Histogram& h) {
  tensorflow::Event ev;
  ev.set_wall_time(wall_time_now());
  ev.set_step(step);
  tensorflow::Summary::Value* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  tensorflow::HistogramProto* p = v->mutable_histo();
  p->set_min(h.min);
  p->set_max(h.max);
  p->set_num(h.num);
  p->set_sum(h.sum);
  p->set_sum_squares(h.sum_squares);
  p->mutable_bucket_limit()->Add(h.bucket_limit.begin(), h.bucket_limit.end());
  p->mutable_bucket()->Add(h.bucket.begin(), h.bucket.end());
  return write_record(ev.SerializeAsString());
}

Status SummaryWriter::histogram(const std::string& tag, int64_t step, std::span<const float> values) {
  return histogram(tag, step, make_histogram(values));
}

Status SummaryWriter::text(const std::string& tag, int64_t step, const std::string& markdown) {
  tensorflow::Event ev;
  ev.set_wall_time(wall_time_now());
  ev.set_step(step);
  tensorflow::Summary::Value* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  // The text plugin's metadata: its TextPluginData (version 0) serializes to nothing.
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  tensorflow::TensorProto* t = v->mutable_tensor();
  t->set_dtype(tensorflow::DT_STRING);
  t->mutable_tensor_shape();  // a scalar: no dims
  t->add_string_val(markdown);
  return write_record(ev.SerializeAsString());
}

Status SummaryWriter::raw_summary(int64_t step, const std::string& summary) {
  tensorflow::Event ev;
  ev.set_wall_time(wall_time_now());
  ev.set_step(step);
  if (!ev.mutable_summary()->ParseFromString(summary)) {
    return runtime_error(fmt::format("{}: a summary to write does not parse as tensorflow.Summary", path_));
  }
  return write_record(ev.SerializeAsString());
}

Status SummaryWriter::flush() {
  if (file_ == nullptr) return runtime_error(fmt::format("{}: event file is closed", path_));
  errno = 0;
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) return io_error("flush");
  return Status::Ok();
}

Status SummaryWriter::close() {
  if (file_ == nullptr) return Status::Ok();
  Status s = flush();
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0 && s.ok()) return io_error("close");
  return s;
}

}  // namespace dtrain
