// `dtrain data fetch`: argument declarations and the run function that calls
// datasets/fetch and turns its result into output and an exit code.
#include "cli/fetch_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "datasets/fetch/catalog.hpp"
#include "datasets/fetch/fetch.hpp"
#include "engine/base/status.hpp"

namespace dtrain::cli {

void declare_data_fetch(CLI::App& sub, FetchCommandOptions& o) {
  sub.add_option("dataset", o.dataset, "dataset to download: " + fetch::dataset_names())->required();
  sub.add_option("dir", o.dir, "directory for the files (created if missing)")->required();
  sub.add_option("--mirror", o.mirrors,
                 "base URL to download from instead of the public mirrors (repeatable, tried in order)");
  sub.add_option("--checksums", o.checksums,
                 "for private mirrors: md5sum/sha256sum-style file whose digests replace the built-in ones");
  sub.add_flag("-q,--quiet", o.quiet, "no progress or per-file messages");
}

int run_data_fetch(const FetchCommandOptions& o) {
  fetch::FetchOptions f;
  f.dataset = o.dataset;
  f.dir = o.dir;
  f.mirrors = o.mirrors;
  f.checksums_file = o.checksums;
  f.download.quiet = o.quiet;
  auto r = fetch::fetch_dataset(f);
  if (!r) {
    std::fprintf(stderr, "dtrain: %s\n", r.error().message.c_str());
    return static_cast<int>(exit_code_for(r.error().kind));
  }
  if (!o.quiet) {
    std::printf("%s", fmt::format("{}: {} files in {} ({} downloaded, {} already there)\n", o.dataset,
                                  r->downloaded.size() + r->skipped.size(), o.dir, r->downloaded.size(),
                                  r->skipped.size()).c_str());
  }
  return 0;
}

int run_data_fetch(const std::string& dataset, const std::string& dir, const std::string& mirror_override,
                   bool quiet) {
  FetchCommandOptions o;
  o.dataset = dataset;
  o.dir = dir;
  if (!mirror_override.empty()) o.mirrors.push_back(mirror_override);
  o.quiet = quiet;
  return run_data_fetch(o);
}

}  // namespace dtrain::cli
