// dtrain_bench_gloo: Gloo all-reduce (float32 sum) bus bandwidth between N
// processes bootstrapped through dtrain's coordination service. Every size is
// verified against an independently computed sum before and after it is timed.
//   dtrain_bench_gloo --rank R --size N --service 127.0.0.1:PORT [--json out.json]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "strategies/coordination.hpp"
#include "strategies/gloo_comm.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int rank = -1, size = 0;
  std::string service;  // host:port; rank 0 hosts it
  int64_t min_bytes = 1024, max_bytes = 64 << 20, factor = 2;
  std::string iters = "auto";  // or a positive count
  int64_t warmup = 5;
  double target_secs = 0.2;    // timed seconds per size with --iters auto
  double timeout_secs = 30;
  std::string json;
};

// One row of the table.
struct Row {
  int64_t bytes = 0, count = 0, iters = 0;
  double us = 0, algbw = 0, busbw = 0;  // time per op; GB/s (1e9 bytes/s)
};

// Thrown to the edge of main with the Error to print and exit on.
struct Fail {
  dtrain::Error error;
};

void check(const dtrain::Status& s) {
  if (!s.ok()) throw Fail{s.error()};
}

template <class T>
T take(dtrain::Result<T> r) {
  if (!r.ok()) throw Fail{r.error()};
  return std::move(r).value();
}

// Rank r's element i is (r+1)*(i%7+1): small integers, so every partial sum
// is exact in float32 whatever order the ring adds them in.
void fill_pattern(std::vector<float>& buf, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 7 + 1));
}

// Checks every element against the sum over ranks computed here in double;
// returns "" or a message naming the first wrong element.
std::string verify_sum(const std::vector<float>& buf, size_t count, int size) {
  for (size_t i = 0; i < count; ++i) {
    double expected = 0;
    for (int r = 0; r < size; ++r) expected += static_cast<double>((r + 1) * static_cast<int>(i % 7 + 1));
    if (static_cast<double>(buf[i]) != expected) {
      return "element " + std::to_string(i) + " of " + std::to_string(count) + " is " + std::to_string(buf[i]) +
             ", expected " + std::to_string(expected);
    }
  }
  return "";
}

class Bench {
 public:
  static constexpr int64_t kMaxIters = 100000;  // --iters auto stops here even if faster than target_secs

  Bench(const Options& o, dtrain::CoordinationClient& client, dtrain::GlooComm& comm)
      : o_(o), client_(client), comm_(comm), buf_(static_cast<size_t>(o.max_bytes) / sizeof(float)) {}

  Row run_size(int64_t bytes) {
    const size_t count = static_cast<size_t>(bytes) / sizeof(float);
    verify(count, "before timing");
    std::fill_n(buf_.begin(), count, 0.0f);
    timed(count, o_.warmup);
    check(comm_.barrier());
    int64_t iters = 0;
    double secs = 0;
    if (o_.iters == "auto") {
      // Timed batches, each at most as long as all before it, until target_secs.
      // The stop test uses all-reduced times (the same bits on every rank), so
      // every rank runs the same number of all-reduces.
      for (int64_t batch = 1;;) {
        secs += mean_over_ranks(timed(count, batch));
        iters += batch;
        if (secs >= o_.target_secs || iters >= kMaxIters) break;
        const double per_op = std::max(secs / static_cast<double>(iters), 1e-9);
        const double left = std::min((o_.target_secs - secs) / per_op, static_cast<double>(kMaxIters - iters));
        batch = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(left)), 1, iters);
      }
    } else {
      iters = std::stoll(o_.iters);
      secs = mean_over_ranks(timed(count, iters));
    }
    verify(count, "after timing");
    Row row;
    row.bytes = bytes;
    row.count = static_cast<int64_t>(count);
    row.iters = iters;
    const double per_op = secs / static_cast<double>(iters);
    row.us = per_op * 1e6;
    row.algbw = static_cast<double>(bytes) / per_op / 1e9;
    // nccl-tests' all-reduce bus bandwidth: each byte crosses 2(n-1)/n links.
    row.busbw = row.algbw * 2.0 * (o_.size - 1) / o_.size;
    return row;
  }

 private:
  void verify(size_t count, const char* when) {
    fill_pattern(buf_, count, o_.rank);
    check(comm_.all_reduce_sum(buf_.data(), count));
    const std::string wrong = verify_sum(buf_, count, o_.size);
    if (!wrong.empty()) {
      const std::string msg = "all-reduce of " + std::to_string(count * sizeof(float)) + " bytes " + when +
                              " is wrong on rank " + std::to_string(o_.rank) + ": " + wrong;
      client_.report_error(msg);
      throw Fail{dtrain::runtime_error(msg)};
    }
  }

  double timed(size_t count, int64_t iters) {
    const auto start = Clock::now();
    for (int64_t i = 0; i < iters; ++i) check(comm_.all_reduce_sum(buf_.data(), count));
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  // nccl-tests averages each rank's time over the ranks; so do we.
  double mean_over_ranks(double v) {
    check(comm_.all_reduce_sum(&v, 1));
    return v / o_.size;
  }

  const Options& o_;
  dtrain::CoordinationClient& client_;
  dtrain::GlooComm& comm_;
  std::vector<float> buf_;  // (max_bytes / 4,) float32
};

std::vector<int64_t> sizes(const Options& o) {
  std::vector<int64_t> out;
  for (int64_t b = o.min_bytes; b <= o.max_bytes; b *= o.factor) out.push_back(b);
  return out;
}

// Rank r is chief 0 for r == 0, else worker r-1, at host:(port + r).
std::vector<dtrain::CoordTask> training_tasks(const Options& o, std::string* host) {
  const auto colon = o.service.rfind(':');
  if (colon == std::string::npos) throw Fail{dtrain::config_error("--service " + o.service + ": expected HOST:PORT")};
  *host = o.service.substr(0, colon);
  const int port = std::stoi(o.service.substr(colon + 1));
  std::vector<dtrain::CoordTask> tasks;
  for (int r = 0; r < o.size; ++r) {
    tasks.push_back({r == 0 ? "chief" : "worker", r == 0 ? 0 : r - 1, *host + ":" + std::to_string(port + r)});
  }
  return tasks;
}

void print_table(const Options& o, const std::vector<Row>& rows) {
  std::printf("# Gloo all-reduce, float32 sum, %d ranks; busbw = algbw * 2(n-1)/n (nccl-tests); GB/s = 1e9 B/s\n",
              o.size);
  std::printf("%12s %10s %7s %12s %10s %10s\n", "bytes", "count", "iters", "time(us)", "algbw", "busbw");
  for (const Row& r : rows) {
    std::printf("%12lld %10lld %7lld %12.1f %10.3f %10.3f\n", static_cast<long long>(r.bytes),
                static_cast<long long>(r.count), static_cast<long long>(r.iters), r.us, r.algbw, r.busbw);
  }
  std::fflush(stdout);
}

void write_json(const Options& o, const std::vector<Row>& rows) {
  nlohmann::json j = {{"ranks", o.size}, {"dtype", "float32"}, {"op", "sum"},
                      {"busbw_formula", "algbw * 2*(n-1)/n"}, {"rows", nlohmann::json::array()}};
  for (const Row& r : rows) {
    j["rows"].push_back({{"bytes", r.bytes}, {"count", r.count}, {"iters", r.iters}, {"time_us", r.us},
                         {"algbw_gbps", r.algbw}, {"busbw_gbps", r.busbw}});
  }
  std::ofstream out(o.json);
  out << j.dump(2) << "\n";
  if (!out) throw Fail{dtrain::runtime_error("cannot write " + o.json)};
}

int run(const Options& o) {
  std::string host;
  dtrain::CoordinationOptions copts;
  copts.training_tasks = training_tasks(o, &host);
  copts.timeout_secs = o.timeout_secs;
  std::unique_ptr<dtrain::CoordinationService> service;
  std::string service_address = o.service;
  if (o.rank == 0) {
    service = take(dtrain::CoordinationService::start(o.service, copts));
    service_address = host + ":" + std::to_string(service->port());  // --service HOST:0 picks a port
  }
  const dtrain::CoordTask& self = copts.training_tasks[static_cast<size_t>(o.rank)];
  auto client = take(dtrain::CoordinationClient::connect(service_address, copts.training_tasks[0].label(), self,
                                                         /*observer=*/false, copts));
  std::vector<Row> rows;
  {
    auto comm = take(dtrain::GlooComm::create(*client, o.rank, o.size, host, o.timeout_secs, "bench_gloo/"));
    Bench bench(o, *client, *comm);
    for (int64_t bytes : sizes(o)) rows.push_back(bench.run_size(bytes));
    check(comm->barrier());
  }
  client->leave();
  if (o.rank == 0) {
    print_table(o, rows);
    if (!o.json.empty()) write_json(o, rows);
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(o.timeout_secs));
    if (!service->wait_all_left(deadline)) {
      throw Fail{dtrain::cluster_error("not every rank left the coordination service within " +
                                       std::to_string(o.timeout_secs) + " s")};
    }
  }
  return 0;
}

std::string validate(const Options& o) {
  if (o.size < 1) return "--size must be >= 1";
  if (o.rank < 0 || o.rank >= o.size) return "--rank must be in [0, --size)";
  if (o.min_bytes < 4 || o.min_bytes % 4 != 0) return "--min-bytes must be a positive multiple of 4";
  if (o.max_bytes < o.min_bytes) return "--max-bytes must be >= --min-bytes";
  if (o.factor < 2) return "--factor must be >= 2";
  if (o.iters != "auto" && (o.iters.find_first_not_of("0123456789") != std::string::npos || o.iters.empty() ||
                            std::stoll(o.iters) < 1)) {
    return "--iters must be 'auto' or a positive integer";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Gloo all-reduce bus bandwidth between processes, bootstrapped by dtrain's coordination service"};
  Options o;
  app.add_option("--rank", o.rank, "this process's rank")->required();
  app.add_option("--size", o.size, "number of ranks")->required();
  app.add_option("--service", o.service, "HOST:PORT of the coordination service (rank 0 hosts it)")->required();
  app.add_option("--min-bytes", o.min_bytes, "smallest message")->capture_default_str();
  app.add_option("--max-bytes", o.max_bytes, "largest message")->capture_default_str();
  app.add_option("--factor", o.factor, "size step (2 or 4)")->capture_default_str();
  app.add_option("--iters", o.iters, "timed all-reduces per size, or 'auto' (>= --target-secs)")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed all-reduces per size")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--target-secs", o.target_secs, "timed seconds per size with --iters auto")->capture_default_str();
  app.add_option("--timeout", o.timeout_secs, "coordination and collective timeout (s)")->capture_default_str();
  app.add_option("--json", o.json, "rank 0 also writes the table as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  if (const std::string bad = validate(o); !bad.empty()) {
    std::fprintf(stderr, "dtrain_bench_gloo: %s\n", bad.c_str());
    return static_cast<int>(dtrain::ExitCode::kUsage);
  }
  try {
    return run(o);
  } catch (const Fail& f) {
    std::fprintf(stderr, "dtrain_bench_gloo rank %d: %s\n", o.rank, f.error.message.c_str());
    return static_cast<int>(dtrain::exit_code_for(f.error.kind));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain_bench_gloo rank %d: %s\n", o.rank, e.what());
    return 1;
  }
}
