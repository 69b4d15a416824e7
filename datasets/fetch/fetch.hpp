// `dtrain data fetch`: download a catalog dataset's files into a directory,
// verifying each against its checksum and skipping the ones already there.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "datasets/fetch/http_download.hpp"
#include "engine/base/status.hpp"

namespace dtrain::fetch {

struct FetchOptions {
  std::string dataset;                // a catalog name: "mnist", "fashion_mnist"
  std::filesystem::path dir;          // created if missing
  std::vector<std::string> mirrors;   // base URLs tried in order instead of the catalog's
  std::string checksums_file;         // md5sum/sha256sum lines replacing the catalog's
                                      // digests of the files they list (private mirrors)
  DownloadOptions download;           // quiet also silences the per-file notes
};

struct FetchSummary {
  std::vector<std::string> downloaded;  // file names fetched by this run
  std::vector<std::string> skipped;     // already present with the right checksum
};

// For each of the dataset's files: an existing DIR/<file> with the right
// digest is kept ("already there"); otherwise it is downloaded to
// DIR/<file>.part (resumed when that exists), from each mirror in turn until
// one succeeds, verified, and renamed to DIR/<file>.
// Errors: unknown dataset or bad checksum file: kConfig; a digest mismatch:
// kData naming the file, the expected and the actual digest (the .part is
// deleted); every mirror failing (HTTP error, connection, timeout): kRuntime
// naming each URL tried.
Result<FetchSummary> fetch_dataset(const FetchOptions& options);

// "https://host/path" -> "https://host/path/": mirror bases end in '/'.
std::string normalize_base_url(std::string url);

}  // namespace dtrain::fetch
