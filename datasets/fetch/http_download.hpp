// One HTTP(S) download with libcurl's easy interface into a ".part" file,
// resuming a partial one with a Range request, with progress on stderr.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "engine/base/status.hpp"

namespace dtrain::fetch {

struct DownloadOptions {
  bool quiet = false;              // no progress on stderr
  long connect_timeout_s = 15;     // give up connecting after this long
  long low_speed_bytes = 1024;     // abort a transfer slower than this (bytes/s)...
  long low_speed_time_s = 30;      // ...for this many seconds
};

struct DownloadResult {
  std::int64_t resumed_from = 0;   // bytes already in the part file (0: fresh download)
  std::int64_t received = 0;       // bytes received by this call
  bool restarted = false;          // the server ignored the Range request (sent 200): fetched again from 0
};

// Downloads `url` into `part`. When `part` exists and is not empty, asks for
// the rest with a Range request and appends; when the server answers 200
// instead of 206 the part is deleted and the whole file fetched again; 416
// (the part is already as long as the file) leaves it as it is, so the
// caller's checksum decides. Only http and https, redirects followed.
// Errors (kRuntime) name the URL: "GET <url>: HTTP 404" or curl's reason
// (connection refused, timeout, ...); a part left empty by a failure is
// removed. `label` names the file in progress lines.
// Thread-compatible: concurrent calls on different parts are fine.
Result<DownloadResult> download_to_part(const std::string& url, const std::filesystem::path& part,
                                        std::string_view label, const DownloadOptions& options);

// "1.6 MB", "512 B": for progress lines.
std::string human_bytes(double bytes);

}  // namespace dtrain::fetch
