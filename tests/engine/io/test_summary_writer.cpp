// Event files parsed back by a small TFRecord reader (event_test_util.hpp):
// framing and both CRCs verified, then each record decoded as a tensorflow.Event.
#include <doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "datasets/example_png.hpp"
#include "engine/io/png_write.hpp"
#include "engine/io/summary_writer.hpp"
#include "event.pb.h"
#include "event_test_util.hpp"
#include "io_test_util.hpp"

namespace dtrain {
namespace {

using testing::read_events;
using testing::read_records;

double now_secs() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

TEST_CASE("SummaryWriter: scalar events framed as TFRecords, readable back") {
  testing::TempDir dir;
  const double before = now_secs();
  auto w = SummaryWriter::open(dir / "train");
  REQUIRE(w.ok());
  REQUIRE((*w)->scalar("loss", 10, 0.1).ok());
  REQUIRE((*w)->scalars(20, {{"loss", 0.05}, {"accuracy", 0.875}}).ok());
  REQUIRE((*w)->scalars(30, {}).ok());  // writes nothing
  REQUIRE((*w)->flush().ok());
  const std::string path = (*w)->path();
  REQUIRE((*w)->close().ok());
  const double after = now_secs();

  const std::string name = std::filesystem::path(path).filename().string();
  CHECK(std::filesystem::path(path).parent_path() == dir / "train");
  CHECK(name.rfind("events.out.tfevents.", 0) == 0);
  std::string pid_part(1, '.');
  pid_part += std::to_string(::getpid());
  pid_part += '.';
  CHECK(name.find(pid_part) != std::string::npos);

  std::vector<tensorflow::Event> ev = read_events(path);
  REQUIRE(ev.size() == 3);
  CHECK(ev[0].file_version() == "brain.Event:2");
  for (const auto& e : ev) {
    CHECK(e.wall_time() >= before - 1);
    CHECK(e.wall_time() <= after + 1);
  }
  CHECK(ev[1].step() == 10);
  REQUIRE(ev[1].has_summary());
  REQUIRE(ev[1].summary().value_size() == 1);
  CHECK(ev[1].summary().value(0).tag() == "loss");
  CHECK(ev[1].summary().value(0).simple_value() == 0.1f);
  CHECK(ev[2].step() == 20);
  REQUIRE(ev[2].summary().value_size() == 2);
  CHECK(ev[2].summary().value(0).tag() == "loss");
  CHECK(ev[2].summary().value(0).simple_value() == 0.05f);
  CHECK(ev[2].summary().value(1).tag() == "accuracy");
  CHECK(ev[2].summary().value(1).simple_value() == 0.875f);

  Status after_close = (*w)->scalar("loss", 40, 1.0);
  REQUIRE_FALSE(after_close.ok());
  CHECK(after_close.error().message == path + ": event file is closed");
}

TEST_CASE("SummaryWriter: the test reader rejects corrupted framing") {
  testing::TempDir dir;
  auto w = SummaryWriter::open(dir.path());
  REQUIRE(w.ok());
  REQUIRE((*w)->scalar("x", 1, 2.0).ok());
  REQUIRE((*w)->close().ok());
  const std::string good = testing::read_bytes((*w)->path());
  REQUIRE(read_records(good).ok());
  std::string bad = good;
  bad[2] ^= 1;  // inside the first record's length
  CHECK(read_records(bad).error().message == "bad length crc");
  bad = good;
  bad[14] ^= 1;  // inside the first record's data
  CHECK(read_records(bad).error().message == "bad data crc");
  CHECK(read_records(good.substr(0, good.size() - 1)).error().message == "truncated record");
}

TEST_CASE("SummaryWriter: writers opened together get distinct files") {
  testing::TempDir dir;
  auto a = SummaryWriter::open(dir.path());
  auto b = SummaryWriter::open(dir.path());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK((*a)->path() != (*b)->path());
  REQUIRE((*a)->scalar("a", 1, 1.0).ok());
  REQUIRE((*b)->scalar("b", 1, 2.0).ok());
  a->reset();
  b->reset();  // the destructor closes
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    CHECK(read_events(e.path().string()).size() == 2);
  }
  CHECK(files == 2);
}

TEST_CASE("SummaryWriter: a directory that cannot be created is an error") {
  testing::TempDir dir;
  testing::write_bytes(dir / "file", "x");
  auto w = SummaryWriter::open(dir / "file/sub");
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().kind == ErrorKind::kRuntime);
  CHECK(w.error().message == dir / "file/sub: cannot create directory: Not a directory");
}

}  // namespace dtrain

namespace dtrain {

using testing::read_events;

TEST_CASE("SummaryWriter: an image event holds a PNG that decodes to the pixels written") {
  testing::TempDir dir;
  Image8 img;
  img.height = 2;
  img.width = 3;
  img.channels = 3;
  for (int i = 0; i < 18; ++i) img.pixels.push_back(static_cast<uint8_t>(i * 14));
  auto png = encode_png(img);
  REQUIRE(png.ok());
  auto w = SummaryWriter::open(dir / "eval");
  REQUIRE(w.ok());
  REQUIRE((*w)->image("confusion_matrix", 7, 2, 3, 3, *png).ok());
  const std::string path = (*w)->path();
  REQUIRE((*w)->close().ok());

  std::vector<tensorflow::Event> ev = read_events(path);
  REQUIRE(ev.size() == 2);
  CHECK(ev[1].step() == 7);
  REQUIRE(ev[1].summary().value_size() == 1);
  const tensorflow::Summary::Value& v = ev[1].summary().value(0);
  CHECK(v.tag() == "confusion_matrix");
  REQUIRE(v.has_image());
  CHECK(v.image().height() == 2);
  CHECK(v.image().width() == 3);
  CHECK(v.image().colorspace() == 3);
  CHECK(v.image().encoded_image_string() == *png);
  std::vector<float> decoded(18);
  REQUIRE(decode_png(v.image().encoded_image_string(), 2, 3, 3, decoded.data(), "test").ok());
  for (int i = 0; i < 18; ++i) CHECK(decoded[static_cast<size_t>(i)] == static_cast<float>(i * 14));
}

}  // namespace dtrain
