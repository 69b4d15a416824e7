// The dataset catalog: every entry complete and well formed, and the MNIST
// test-set digests matching the real files in ../shared/data/mnist.
#include <doctest.h>

#include <set>
#include <string>

#include "datasets/fetch/catalog.hpp"
#include "datasets/fetch/checksum.hpp"
#include "tests/datasets/fetch/fetch_test_util.hpp"

using namespace dtrain::fetch;

TEST_CASE("fetch catalog: mnist and fashion_mnist with 4 files, checksums and mirrors each") {
  CHECK(dataset_names() == "mnist, fashion_mnist");
  REQUIRE(dataset_catalog().size() == 2);
  const std::set<std::string> want = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                      "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
  std::set<std::string> all_digests;
  for (const auto& d : dataset_catalog()) {
    CAPTURE(d.name);
    CHECK(find_dataset(d.name) == &d);
    CHECK(!d.description.empty());
    REQUIRE(d.files.size() == 4);
    std::set<std::string> names;
    for (const auto& f : d.files) {
      names.emplace(f.name);
      CHECK(f.digest.size() == (f.algo == DigestAlgo::kMd5 ? 32u : 64u));
      CHECK(f.digest.find_first_not_of("0123456789abcdef") == std::string_view::npos);
      all_digests.emplace(f.digest);
    }
    CHECK(names == want);
    CHECK(d.mirrors.size() >= 2);
    for (auto m : d.mirrors) {
      CAPTURE(m);
      CHECK((m.starts_with("https://") || m.starts_with("http://")));
      CHECK(m.ends_with("/"));
    }
  }
  CHECK(all_digests.size() == 8);  // no copy-paste duplicates
  CHECK(find_dataset("cifar10") == nullptr);
  CHECK(find_dataset("MNIST") == nullptr);
}

TEST_CASE("fetch catalog: the official MNIST t10k files verify against the catalog") {
  if (!dtrain::testing::have_shared_mnist()) return;
  const auto* mnist = find_dataset("mnist");
  REQUIRE(mnist != nullptr);
  int checked = 0;
  for (const auto& f : mnist->files) {
    if (!f.name.starts_with("t10k")) continue;  // train-* in shared/ are a sample
    const auto path = dtrain::fetch_testing::shared_mnist_dir() / std::string(f.name);
    REQUIRE(std::filesystem::exists(path));
    auto digest = file_digest(path, f.algo);
    REQUIRE(digest.ok());
    CHECK(*digest == f.digest);
    ++checked;
  }
  CHECK(checked == 2);
}
