// ReadAheadReader gives what TfRecordReader gives: the same records, byte
// offsets and numbers, positions between records (what a checkpoint saves),
// the same corrupt-record errors and skip messages, from a seek as from the
// start, however far ahead its thread has read (records much larger than its
// queue included).
#include <doctest.h>

#include <string>
#include <vector>

#include "data_test_util.hpp"
#include "datasets/read_ahead.hpp"
#include "engine/io/summary_writer.hpp"
#include "tfrecord_test_util.hpp"

namespace dtrain {
namespace {

struct Read {
  std::vector<std::string> data;
  std::vector<int64_t> offsets, indexes, next_offsets;
  std::vector<std::string> skipped;
  std::string error;
};

template <class R, class Next>
Read read_all(R& r, Next next) {
  Read out;
  for (;;) {
    std::string d;
    int64_t offset = -1, index = -1;
    auto got = next(r, d, offset, index, &out.skipped);
    if (!got) {
      out.error = got.error().message;
      return out;
    }
    if (!*got) return out;
    out.data.push_back(d);
    out.offsets.push_back(offset);
    out.indexes.push_back(index);
    out.next_offsets.push_back(r.offset());
  }
}

Read plain(const std::string& path, bool skip, int64_t seek_offset = 0, int64_t seek_index = 0) {
  auto r = TfRecordReader::open(path, TfRecordCompression::kAuto);
  REQUIRE(r.ok());
  if (seek_offset > 0) REQUIRE((*r)->seek(seek_offset, seek_index).ok());
  return read_all(**r, [skip](TfRecordReader& x, std::string& d, int64_t& o, int64_t& i, std::vector<std::string>* s) {
    return x.next(d, o, i, skip, s);
  });
}

Read ahead(const std::string& path, bool skip, int64_t seek_offset = 0, int64_t seek_index = 0) {
  auto r = TfRecordReader::open(path, TfRecordCompression::kAuto);
  REQUIRE(r.ok());
  if (seek_offset > 0) REQUIRE((*r)->seek(seek_offset, seek_index).ok());
  ReadAheadReader a(std::move(r.value()), skip);
  return read_all(a, [](ReadAheadReader& x, std::string& d, int64_t& o, int64_t& i, std::vector<std::string>* s) {
    return x.next(d, o, i, s);
  });
}

void check_same(const Read& a, const Read& b) {
  CHECK(a.data == b.data);
  CHECK(a.offsets == b.offsets);
  CHECK(a.indexes == b.indexes);
  CHECK(a.next_offsets == b.next_offsets);
  CHECK(a.skipped == b.skipped);
  CHECK(a.error == b.error);
}

// A framed TFRecord record.
std::string frame(const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((data.size() >> (8 * i)) & 0xff);
  auto le32 = [](uint32_t v) {
    std::string s(4, '\0');
    for (int i = 0; i < 4; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
  };
  out += le32(masked_crc32c(out.data(), 8));
  out += data;
  out += le32(masked_crc32c(data.data(), data.size()));
  return out;
}

TEST_CASE("read ahead: the same records, positions and errors as the plain reader") {
  data_testing::TempDir dir;
  // 40 records from 10 bytes to 600 KiB (three times the queue).
  std::string bytes;
  for (int k = 0; k < 40; ++k) {
    const size_t n = k % 7 == 3 ? 600u << 10 : static_cast<size_t>(10 + 997 * k);
    bytes += frame(std::string(n, static_cast<char>('a' + k % 26)));
  }
  const std::string good = dir.file("good.tfrecord");
  data_testing::write_bytes(good, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  const Read want = plain(good, false);
  REQUIRE(want.data.size() == 40);
  REQUIRE(want.error.empty());
  check_same(ahead(good, false), want);
  // From a seek to record 17, as a restored stream opens its files.
  const Read tail = plain(good, false, want.offsets[17], 17);
  REQUIRE(tail.data.size() == 23);
  check_same(ahead(good, false, want.offsets[17], 17), tail);

  // A data CRC flipped in record 5, the length cut short at the end.
  std::string bad = bytes;
  bad[static_cast<size_t>(want.offsets[5]) + 12] ^= 0x55;
  bad.resize(bad.size() - 100);
  const std::string corrupt = dir.file("bad.tfrecord");
  data_testing::write_bytes(corrupt, std::vector<uint8_t>(bad.begin(), bad.end()));
  const Read fail = plain(corrupt, false);
  REQUIRE(fail.data.size() == 5);
  REQUIRE_FALSE(fail.error.empty());
  check_same(ahead(corrupt, false), fail);
  const Read skip = plain(corrupt, true);
  REQUIRE(skip.data.size() == 38);
  REQUIRE(skip.skipped.size() == 2);
  check_same(ahead(corrupt, true), skip);
}

TEST_CASE("read ahead: dropped before the end, its thread stops") {
  auto r = TfRecordReader::open(data_testing::tfrecord_dir() + "/plain.tfrecord", TfRecordCompression::kAuto);
  REQUIRE(r.ok());
  ReadAheadReader a(std::move(r.value()), false);
  std::string d;
  int64_t o = 0, i = 0;
  auto got = a.next(d, o, i, nullptr);
  REQUIRE(got.ok());
  CHECK(*got);
  CHECK(a.index() == 1);
}  // the destructor joins

}  // namespace
}  // namespace dtrain
