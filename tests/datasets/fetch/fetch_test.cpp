// fetch_dataset without a server: files already there are skipped, a refused
// connection or a non-HTTP mirror is an error naming every URL tried, and
// option errors (dataset, checksum file) are config errors. Transfers against
// a real local server are tested in tests/integration/test_data_fetch.py.
#include <doctest.h>

#include <fmt/format.h>

#include <chrono>

#include "datasets/fetch/checksum.hpp"
#include "datasets/fetch/fetch.hpp"
#include "datasets/fetch/http_download.hpp"
#include "tests/datasets/fetch/fetch_test_util.hpp"

using namespace dtrain::fetch;
using dtrain::fetch_testing::closed_local_port;
using dtrain::fetch_testing::ScratchDir;
using dtrain::fetch_testing::write_file;

namespace {

const char* kFiles[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                        "t10k-labels-idx1-ubyte.gz"};

// Writes four small files into `data` and a SUMS file listing their SHA-256.
std::string write_files_and_sums(const std::filesystem::path& data, const std::filesystem::path& sums) {
  std::string lines;
  for (const char* f : kFiles) {
    const std::string bytes = std::string("contents of ") + f;
    write_file(data / f, bytes);
    lines += bytes_digest(bytes, DigestAlgo::kSha256) + "  " + f + "\n";
  }
  write_file(sums, lines);
  return lines;
}

FetchOptions quiet_options(const std::string& dataset, const std::filesystem::path& dir) {
  FetchOptions o;
  o.dataset = dataset;
  o.dir = dir;
  o.download.quiet = true;
  o.download.connect_timeout_s = 5;
  return o;
}

}  // namespace

TEST_CASE("fetch: normalize_base_url adds the trailing slash once") {
  CHECK(normalize_base_url("http://h/mnist") == "http://h/mnist/");
  CHECK(normalize_base_url("http://h/mnist/") == "http://h/mnist/");
}

TEST_CASE("fetch: progress sizes in decimal units") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(999) == "999 B");
  CHECK(human_bytes(4542) == "4.5 kB");
  CHECK(human_bytes(1648877) == "1.6 MB");
  CHECK(human_bytes(2.5e9) == "2.5 GB");
}

TEST_CASE("fetch: an unknown dataset is a config error listing the known ones") {
  ScratchDir dir;
  auto r = fetch_dataset(quiet_options("cifar10", dir.path()));
  REQUIRE(!r.ok());
  CHECK(r.error().kind == dtrain::ErrorKind::kConfig);
  CHECK(r.error().message == "unknown dataset \"cifar10\" (known: mnist, fashion_mnist)");
}

TEST_CASE("fetch: files already there with the right checksum are skipped without any connection") {
  ScratchDir dir;
  write_files_and_sums(dir.path(), dir.path() / "SUMS");
  auto o = quiet_options("fashion_mnist", dir.path());
  o.checksums_file = (dir.path() / "SUMS").string();
  o.mirrors = {fmt::format("http://127.0.0.1:{}/", closed_local_port())};  // would fail if used
  auto r = fetch_dataset(o);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  CHECK(r->skipped.size() == 4);
  CHECK(r->downloaded.empty());
}

TEST_CASE("fetch: the real MNIST t10k files in place verify against the catalog's MD5s") {
  if (!dtrain::testing::have_shared_mnist()) return;
  ScratchDir dir;
  for (const char* f : {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    std::filesystem::copy_file(dtrain::fetch_testing::shared_mnist_dir() / f, dir.path() / f);
  }
  const int port = closed_local_port();
  auto o = quiet_options("mnist", dir.path());
  o.mirrors = {fmt::format("http://127.0.0.1:{}", port)};
  auto r = fetch_dataset(o);  // t10k-* skipped after train-*: the first train file fails first
  REQUIRE(!r.ok());
  CHECK(r.error().kind == dtrain::ErrorKind::kRuntime);
  const std::string url = fmt::format("http://127.0.0.1:{}/train-images-idx3-ubyte.gz", port);
  CHECK(r.error().message.starts_with("train-images-idx3-ubyte.gz: download failed from every mirror: GET " + url +
                                      ": "));
  CHECK(r.error().message.find("127.0.0.1") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.path() / "train-images-idx3-ubyte.gz"));
}

TEST_CASE("fetch: every mirror is tried and named; non-HTTP mirrors are refused") {
  ScratchDir dir;
  ScratchDir src;
  write_files_and_sums(src.path(), dir.path() / "SUMS");
  auto o = quiet_options("mnist", dir.path() / "out");
  o.checksums_file = (dir.path() / "SUMS").string();
  const int port = closed_local_port();
  o.mirrors = {fmt::format("http://127.0.0.1:{}/a", port), "file://" + src.path().string()};
  auto r = fetch_dataset(o);
  REQUIRE(!r.ok());
  const std::string& m = r.error().message;
  CHECK(m.find(fmt::format("GET http://127.0.0.1:{}/a/train-images-idx3-ubyte.gz: ", port)) != std::string::npos);
  CHECK(m.find("; GET file://" + src.path().string() + "/train-images-idx3-ubyte.gz: ") != std::string::npos);
  CHECK(m.find("file") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.path() / "out" / "train-images-idx3-ubyte.gz"));
}

TEST_CASE("fetch: a checksum file may list some files but none outside the dataset") {
  ScratchDir dir;
  auto o = quiet_options("mnist", dir.path());
  o.checksums_file = (dir.path() / "SUMS").string();
  SUBCASE("a listed file replaces the catalog digest, the others keep theirs") {
    const std::string bytes = "not the official file";
    write_file(dir.path() / "train-labels-idx1-ubyte.gz", bytes);
    write_file(dir.path() / "SUMS", bytes_digest(bytes, DigestAlgo::kMd5) + "  train-labels-idx1-ubyte.gz\n");
    for (const char* f : {"train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
      write_file(dir.path() / f, "wrong bytes");  // catalog digests: these do not match
    }
    const int port = closed_local_port();
    o.mirrors = {fmt::format("http://127.0.0.1:{}/", port)};
    auto r = fetch_dataset(o);
    REQUIRE(!r.ok());  // train-images does not match the catalog and cannot be fetched
    CHECK(r.error().message.starts_with("train-images-idx3-ubyte.gz: download failed"));
    write_file(dir.path() / "train-images-idx3-ubyte.gz", "also not it");
    write_file(dir.path() / "SUMS", bytes_digest(bytes, DigestAlgo::kMd5) + "  train-labels-idx1-ubyte.gz\n" +
                                        bytes_digest("also not it", DigestAlgo::kSha256) +
                                        "  train-images-idx3-ubyte.gz\n");
    r = fetch_dataset(o);
    REQUIRE(!r.ok());  // both train files are now accepted; t10k-images still has the catalog's MD5
    CHECK(r.error().message.starts_with("t10k-images-idx3-ubyte.gz: download failed"));
  }
  SUBCASE("a name that is not one of the dataset's files is a config error") {
    write_file(dir.path() / "SUMS", "9fb629c4189551a2d022fa330f9573f3  t10k-images.gz\n");
    auto r = fetch_dataset(o);
    REQUIRE(!r.ok());
    CHECK(r.error().kind == dtrain::ErrorKind::kConfig);
    CHECK(r.error().message == (dir.path() / "SUMS").string() +
                                   ": \"t10k-images.gz\" is not a file of mnist (train-images-idx3-ubyte.gz, "
                                   "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz)");
  }
}

TEST_CASE("fetch: a server that accepts the connection but never answers times out instead of hanging") {
  // A listening socket whose connections are never accepted: the kernel
  // completes the handshake, then no byte ever arrives.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string url = fmt::format("http://127.0.0.1:{}/x.gz", ntohs(addr.sin_port));

  ScratchDir dir;
  DownloadOptions o;
  o.quiet = true;
  o.low_speed_bytes = 1;
  o.low_speed_time_s = 1;
  const auto start = std::chrono::steady_clock::now();
  auto r = download_to_part(url, dir.path() / "x.gz.part", "x.gz", o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  REQUIRE(!r.ok());
  CHECK(r.error().kind == dtrain::ErrorKind::kRuntime);
  CHECK(r.error().message.starts_with("GET " + url + ": Operation too slow"));
  CHECK(secs < 10.0);
  CHECK(!std::filesystem::exists(dir.path() / "x.gz.part"));  // no empty part left behind
}
