// `dtrain data bench`: the job's input pipeline timed on its own, as text or
// JSON, with the process's peak resident memory.
#include "cli/bench_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config_schema/job_loader.hpp"
#include "engine/base/status.hpp"
#include "estimator/estimator.hpp"

namespace dtrain::cli {
namespace {

int report(const Error& e) {
  std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
  return static_cast<int>(exit_code_for(e.kind));
}

// VmHWM of /proc/self/status in KiB (this process's peak resident set); -1
// where the kernel does not give it.
int64_t peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoll(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

void print_text(const BenchCommandOptions& o, const InputBenchResult& r, int64_t rss_kib) {
  const double mib = 1024.0 * 1024.0;
  if (!r.stream.empty()) std::printf("%s\n", r.stream.c_str());
  if (!r.description.empty()) std::printf("%s\n", r.description.c_str());
  if (!r.threads.empty()) std::printf("%s\n", r.threads.c_str());
  const std::string values = r.float_features
                                 ? fmt::format("mean {:.4f}, std {:.4f}, all finite", r.feature_mean, r.feature_std)
                                 : std::string("int32 token ids");
  std::printf("data.%s: %lld batches (%lld examples) of global batch %lld after %lld warm-up%s; features %s, %s\n",
              o.split.c_str(), static_cast<long long>(r.batches), static_cast<long long>(r.examples),
              static_cast<long long>(r.global_batch), static_cast<long long>(r.warmup_batches),
              r.ended ? "; the input ended" : "", shape_str(r.feature_shape).c_str(), values.c_str());
  std::printf("examples/s: %.1f\n", r.examples / r.seconds);
  std::printf("batches/s: %.3f\n", r.batches / r.seconds);
  std::printf("MiB/s: %.1f (features delivered)\n", r.feature_bytes / mib / r.seconds);
  std::printf("time: %.6f s, %.6f s of it checking the batches\n", r.seconds, r.check_seconds);
  if (rss_kib >= 0) std::printf("peak RSS: %.1f MiB (VmHWM)\n", rss_kib / 1024.0);
}

void print_json(const BenchCommandOptions& o, const InputBenchResult& r, int64_t rss_kib) {
  nlohmann::ordered_json j;
  j["split"] = o.split;
  j["stream"] = r.stream;
  j["description"] = r.description;
  j["threads"] = r.threads;
  j["global_batch"] = r.global_batch;
  j["feature_shape"] = r.feature_shape;
  j["warmup_batches"] = r.warmup_batches;
  j["batches"] = r.batches;
  j["examples"] = r.examples;
  j["seconds"] = r.seconds;
  j["check_seconds"] = r.check_seconds;
  j["examples_per_sec"] = r.examples / r.seconds;
  j["batches_per_sec"] = r.batches / r.seconds;
  j["mib_per_sec"] = r.feature_bytes / (1024.0 * 1024.0) / r.seconds;
  j["feature_dtype"] = r.float_features ? "float32" : "int32";
  j["feature_mean"] = r.float_features ? nlohmann::ordered_json(r.feature_mean) : nlohmann::ordered_json(nullptr);
  j["feature_std"] = r.float_features ? nlohmann::ordered_json(r.feature_std) : nlohmann::ordered_json(nullptr);
  j["ended"] = r.ended;
  j["peak_rss_kib"] = rss_kib;
  std::printf("%s\n", j.dump().c_str());
}

}  // namespace

void declare_data_bench(CLI::App& sub, BenchCommandOptions& o) {
  sub.add_option("job", o.job, "the job file (YAML)")->required();
  sub.add_option("--set", o.overrides, "override a job field: path.to.key=value (repeatable)");
  sub.add_option("--split", o.split, "which input: train (default) or eval")->check(CLI::IsMember({"train", "eval"}));
  sub.add_option("--batches", o.batches, "batches timed (default 20); 0: until the input ends")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--warmup", o.warmup, "batches read before the clock starts (default 2)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--threads", o.threads, "compute threads, as dtrain train --threads (num_parallel_calls auto follows)")
      ->check(CLI::Range(1, 1 << 20));
  sub.add_flag("--json", o.json, "print one JSON object instead of text");
}

int run_data_bench(const BenchCommandOptions& o) {
  LoadOptions load;
  load.overrides = o.overrides;
  auto job = load_job(o.job, load);
  if (!job) return report(job.error());
  EstimatorOptions options;
  options.log_format = LogFormat::kPlain;
  if (o.threads > 0) options.threads = o.threads;
  auto est = Estimator::create(*job, options);
  if (!est) return report(est.error());
  InputBenchOptions bench;
  bench.role = o.split;
  bench.batches = o.batches;
  bench.warmup = o.warmup;
  auto r = (*est)->bench_input(bench);
  if (!r) return report(r.error());
  const int64_t rss = peak_rss_kib();
  if (o.json) {
    print_json(o, *r, rss);
  } else {
    print_text(o, *r, rss);
  }
  return 0;
}

}  // namespace dtrain::cli
