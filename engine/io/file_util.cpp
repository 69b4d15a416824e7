// Whole-file reads and atomic, fsynced writes (see file_util.hpp).
#include "engine/io/file_util.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <system_error>

#include <fmt/format.h>

#include "engine/thread_errors.hpp"

namespace dtrain::io {

std::string errno_message(int err) { return std::strerror(err); }

std::string parent_directory(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

Result<std::string> read_whole_file(const std::string& path, ErrorKind kind) {
  auto fail = [&](const char* what, int err) {
    return Error{kind, fmt::format("{}: cannot {}: {}", path, what, errno_message(err))};
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("open", errno);
  struct stat st {};
  int err = ::fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : !S_ISREG(st.st_mode) ? EINVAL : 0;
  if (err != 0) {
    ::close(fd);
    return fail("read", err);
  }
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(st.st_size));
  } catch (const std::bad_alloc&) {
    ::close(fd);
    return fail("read", ENOMEM);
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      ::close(fd);
      return fail("read", err);
    }
    if (n == 0) break;  // shrank while reading: keep what is there
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

Status fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return runtime_error(fmt::format("{}: cannot open directory to fsync: {}", dir, errno_message(errno)));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return runtime_error(fmt::format("{}: cannot fsync directory: {}", dir, errno_message(err)));
  return Status::Ok();
}

Status ensure_directory(const std::string& dir) {
  std::error_code ec;
  bool created = std::filesystem::create_directories(dir, ec);
  if (ec) return runtime_error(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  if (!std::filesystem::is_directory(dir, ec))
    return runtime_error(fmt::format("{}: cannot create directory: {}", dir, errno_message(ENOTDIR)));
  if (created) return fsync_directory(parent_directory(std::filesystem::absolute(dir, ec).string()));
  return Status::Ok();
}

namespace {

// Writes all pieces to an open file and makes them durable; returns errno or 0.
int write_and_sync(std::FILE* f, const std::vector<std::string_view>& pieces) {
  for (std::string_view p : pieces) {
    if (p.empty()) continue;
    if (std::fwrite(p.data(), 1, p.size(), f) != p.size()) return errno != 0 ? errno : EIO;
  }
  if (std::fflush(f) != 0) return errno;
  if (::fsync(::fileno(f)) != 0) return errno;
  return 0;
}

}  // namespace

namespace {

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  std::string host(buf);
  for (char& c : host) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    if (!keep) c = '_';
  }
  return host.empty() ? "unknown" : host;
}

// Whether process `pid` exists (it may belong to another user: EPERM).
bool process_exists(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

}  // namespace

std::string temporary_name(const std::string& path) { return fmt::format("{}.tmp-{}-{}", path, this_host(), ::getpid()); }

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  std::vector<std::string> removed;
  const std::string mine = ".tmp-" + this_host() + "-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(mine);
    if (at == std::string::npos || at == 0) continue;
    const std::string digits = name.substr(at + mine.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::stol(digits);
    if (pid <= 0 || pid == ::getpid() || process_exists(pid)) continue;
    if (std::filesystem::remove(entry.path(), ec) && !ec) removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

Status write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces) {
  const std::string tmp = temporary_name(path);
  errno = 0;
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return runtime_error(fmt::format("{}: cannot create: {}", tmp, errno_message(errno)));
  errno = 0;
  int err = write_and_sync(f, pieces);
  maybe_pause_for_test("checkpoint write");  // the temporary file written, not yet renamed
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return runtime_error(fmt::format("{}: cannot write: {}", tmp, errno_message(err)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    return runtime_error(fmt::format("{}: cannot rename {} over it: {}", path, tmp, errno_message(err)));
  }
  return fsync_directory(parent_directory(path));
}

}  // namespace dtrain::io
