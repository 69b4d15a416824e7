// TfRecordReader: plain files through stdio (fseeko to seek), gzip files
// through zlib's gzread/gzseek; each record's length and data CRC-checked.
#include "datasets/tfrecord_reader.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>

#include "engine/io/summary_writer.hpp"

namespace dtrain {

namespace {

uint64_t le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

constexpr size_t kReadBuffer = 64 << 10;  // stdio / zlib buffer per open file (see ReadAheadReader::kQueueBytes)

}  // namespace

TfRecordReader::TfRecordReader(std::string path, void* gz, std::FILE* plain)
    : path_(std::move(path)), gz_(gz), plain_(plain) {}

TfRecordReader::~TfRecordReader() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
  if (plain_ != nullptr) std::fclose(plain_);
}

Result<std::unique_ptr<TfRecordReader>> TfRecordReader::open(const std::string& path,
                                                             TfRecordCompression compression) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return data_error(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, f);
  const bool gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (compression == TfRecordCompression::kGzip && !gzip) {
    std::fclose(f);
    return data_error(path + ": compression is gzip but the file does not start with the gzip magic bytes 1f 8b");
  }
  if (compression != TfRecordCompression::kNone && gzip) {
    std::fclose(f);
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz == nullptr) return data_error(path + ": cannot open: " + std::strerror(errno));
    gzbuffer(gz, kReadBuffer);
    return std::unique_ptr<TfRecordReader>(new TfRecordReader(path, gz, nullptr));
  }
  std::rewind(f);
  std::setvbuf(f, nullptr, _IOFBF, kReadBuffer);
  return std::unique_ptr<TfRecordReader>(new TfRecordReader(path, nullptr, f));
}

int64_t TfRecordReader::read(void* to, int64_t n) {
  if (n == 0) return 0;
  if (gz_ != nullptr) {
    int64_t done = 0;
    while (done < n) {
      const auto chunk = static_cast<unsigned>(std::min<int64_t>(n - done, 1 << 30));
      const int r = gzread(static_cast<gzFile>(gz_), static_cast<char*>(to) + done, chunk);
      if (r < 0) return -1;
      if (r == 0) break;
      done += r;
    }
    return done;
  }
  const size_t r = std::fread(to, 1, static_cast<size_t>(n), plain_);
  if (r < static_cast<size_t>(n) && std::ferror(plain_)) return -1;
  return static_cast<int64_t>(r);
}

Status TfRecordReader::seek(int64_t offset, int64_t index) {
  bool ok = false;
  if (gz_ != nullptr) {
    ok = gzseek(static_cast<gzFile>(gz_), static_cast<z_off_t>(offset), SEEK_SET) == offset;
  } else {
    // fseeko succeeds past the end: check the file reaches the offset.
    struct stat st {};
    ok = fstat(fileno(plain_), &st) == 0 && offset <= st.st_size &&
         fseeko(plain_, static_cast<off_t>(offset), SEEK_SET) == 0;
  }
  if (!ok) return data_error(fmt::format("{}: cannot seek to byte {} (record {}): the file is shorter or unreadable",
                                         path_, offset, index));
  offset_ = offset;
  index_ = index;
  ended_ = false;
  return {};
}

Result<bool> TfRecordReader::next(std::string& data, int64_t& offset, int64_t& index, bool skip_corrupt,
                                  std::vector<std::string>* skipped) {
  while (!ended_) {
    uint8_t header[12];
    const int64_t h = read(header, 12);
    if (h < 0) return data_error(path_ + ": read error");
    if (h == 0) return false;
    std::string what;
    bool rest_lost = true;
    uint64_t len = 0;
    if (h < 12) {
      what = fmt::format("truncated record header ({} bytes left)", h);
    } else if (len = le64(header); le32(header + 8) != masked_crc32c(header, 8)) {
      what = "length CRC mismatch";
    } else {
      // The length passed its CRC: read the data and its CRC.
      data.resize(len);
      uint8_t crc[4];
      const int64_t d = read(data.data(), static_cast<int64_t>(len));
      const int64_t c = d == static_cast<int64_t>(len) ? read(crc, 4) : 0;
      if (d < 0 || c < 0) return data_error(path_ + ": read error");
      if (d < static_cast<int64_t>(len) || c < 4) {
        what = fmt::format("truncated record: length {} but {} bytes left", len, d + c);
      } else if (le32(crc) != masked_crc32c(data.data(), len)) {
        what = "data CRC mismatch";
        rest_lost = false;
      } else {
        offset = offset_;
        index = index_;
        offset_ += 16 + static_cast<int64_t>(len);
        ++index_;
        return true;
      }
    }
    std::string message = fmt::format("{}: record {} at offset {}: {}", path_, index_, offset_, what);
    if (!skip_corrupt) return data_error(message);
    if (rest_lost) {
      if (skipped != nullptr) skipped->push_back(message + "; skipped the rest of the file");
      ended_ = true;
      break;
    }
    if (skipped != nullptr) skipped->push_back(message);
    offset_ += 16 + static_cast<int64_t>(len);
    ++index_;
  }
  return false;
}

}  // namespace dtrain
