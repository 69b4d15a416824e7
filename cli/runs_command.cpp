// `dtrain runs DIR` (cli/runs_command.hpp). A run is a directory with
// job.resolved.yaml, run.json or a checkpoint index; what it says comes from
// those files and eval/metrics-<step>.json, never from the process.
#include "cli/runs_command.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "config_schema/job_json.hpp"
#include "config_schema/job_loader.hpp"
#include "engine/base/did_you_mean.hpp"
#include "engine/io/checkpoint_index.hpp"
#include "estimator/logger.hpp"

namespace dtrain::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct Metric {
  double last = 0;
  double best = 0;
  int64_t best_step = 0;
};

struct Run {
  std::string name, path;
  std::string status = "unknown";  // finished | stopped | failed | running | unknown
  std::string note;                // the error that ended it, or why the status is what it is
  int64_t step = 0, max_steps = 0;
  double wall = -1;                // seconds; < 0 unknown
  std::string hash;
  std::map<std::string, std::string> options;  // the resolved job, flattened: "optimizer.learning_rate" -> "0.1"
  int64_t eval_step = -1;
  std::map<std::string, Metric> metrics;
};

std::optional<Json> read_json(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return std::nullopt;
  Json j = Json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

bool is_run(const fs::path& dir) {
  return fs::exists(dir / "job.resolved.yaml") || fs::exists(dir / "run.json") ||
         fs::exists(dir / io::kIndexFileName);
}

// "a.b[2].c" -> its value's JSON text, for every leaf of `j`.
void flatten(const Json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array() && !j.empty() && (j[0].is_object() || j[0].is_array())) {
    for (size_t i = 0; i < j.size(); ++i) flatten(j[i], fmt::format("{}[{}]", prefix, i), out);
  } else {
    out[prefix] = j.is_string() ? j.get<std::string>() : j.dump();
  }
}

// Lower is better for these; higher for the others (accuracy, precision, ...).
bool lower_is_better(const std::string& metric) {
  return metric.find("loss") != std::string::npos || metric == "mean_absolute_error" || metric == "mae" ||
         metric == "rmse";
}

void read_status(const fs::path& dir, Run& r) {
  const auto rec = read_json(dir / "run.json");
  if (!rec) {
    r.note = "no run.json (a run of an older dtrain, or one that never started training)";
    return;
  }
  r.status = rec->value("status", std::string("unknown"));
  r.step = rec->value("step", int64_t{0});
  r.max_steps = rec->value("max_steps", int64_t{0});
  r.note = rec->value("error", std::string());
  const double started = rec->value("started", 0.0), updated = rec->value("updated", 0.0);
  double until = (*rec)["ended"].is_number() ? (*rec)["ended"].get<double>() : updated;
  if (r.status == "running") {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const auto pid = static_cast<pid_t>(rec->value("pid", int64_t{0}));
    if (rec->value("host", std::string()) != host) {
      r.note = "on host " + rec->value("host", std::string());
    } else if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
      r.status = "failed";
      r.note = fmt::format("process {} ended without recording why (killed?); last saved at step {}", pid, r.step);
    } else {
      until = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    }
  }
  if (started > 0) r.wall = std::max(0.0, until - started);
}

void read_metrics(const fs::path& dir, Run& r) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir / "eval", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("metrics-", 0) != 0 || entry.path().extension() != ".json") continue;
    const auto j = read_json(entry.path());
    if (!j || !(*j)["metrics"].is_object()) continue;
    const int64_t step = j->value("global_step", int64_t{-1});
    for (const auto& [k, v] : (*j)["metrics"].items()) {
      if (!v.is_number()) continue;
      const double x = v.get<double>();
      auto [it, fresh] = r.metrics.try_emplace(k, Metric{x, x, step});
      Metric& m = it->second;
      if (!fresh && (lower_is_better(k) ? x < m.best : x > m.best)) m.best = x, m.best_step = step;
      if (step >= r.eval_step) m.last = x;
    }
    r.eval_step = std::max(r.eval_step, step);
  }
}

Run read_run(const fs::path& root, const fs::path& dir) {
  Run r;
  r.path = dir.string();
  r.name = fs::relative(dir, root).string();
  read_status(dir, r);
  if (auto index = io::read_checkpoint_index(dir.string()); index && !index->empty()) {
    r.step = std::max(r.step, index->back().step);
  } else if (auto scanned = io::scan_checkpoints(dir.string()); !scanned.empty()) {
    r.step = std::max(r.step, scanned.back().step);
  }
  if (fs::exists(dir / "job.resolved.yaml")) {
    auto job = load_job((dir / "job.resolved.yaml").string(), LoadOptions{.overrides = {}, .check_files = false, .getenv = nullptr});
    if (job) {
      r.hash = job->model_hash;
      if (r.max_steps == 0) r.max_steps = job->run.max_steps;
      flatten(Json(resolved_json(*job)), "", r.options);
      r.options.erase("run.model_dir");  // differs by definition
    } else if (r.note.empty()) {
      r.note = "job.resolved.yaml: " + job.error().message;
    }
  }
  read_metrics(dir, r);
  return r;
}

std::vector<Run> find_runs(const fs::path& root) {
  std::vector<Run> runs;
  if (is_run(root)) runs.push_back(read_run(root, root));
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory() || it.depth() > 3) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (is_run(it->path())) {
      runs.push_back(read_run(root, it->path()));
      it.disable_recursion_pending();  // eval/, export/, profile/ are the run's own
    }
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.name < b.name; });
  return runs;
}

// The options whose values are not the same in every run.
std::set<std::string> differing(const std::vector<Run>& runs) {
  std::set<std::string> keys, out;
  for (const Run& r : runs)
    for (const auto& [k, v] : r.options) keys.insert(k);
  for (const std::string& k : keys) {
    std::optional<std::string> first;
    for (const Run& r : runs) {
      auto it = r.options.find(k);
      const std::string v = it == r.options.end() ? "(absent)" : it->second;
      if (!first) first = v;
      else if (*first != v) out.insert(k);
    }
  }
  return out;
}

std::string option(const Run& r, const std::string& key) {
  auto it = r.options.find(key);
  return it == r.options.end() ? "(absent)" : it->second;
}

Json run_json(const Run& r, const std::set<std::string>& diff) {
  Json metrics = Json::object();
  for (const auto& [k, m] : r.metrics) metrics[k] = {{"last", m.last}, {"best", m.best}, {"best_step", m.best_step}};
  Json differs = Json::object();
  for (const std::string& k : diff) differs[k] = option(r, k);
  Json j{{"name", r.name},   {"path", r.path},         {"status", r.status},
         {"step", r.step},   {"max_steps", r.max_steps}, {"wall_seconds", r.wall < 0 ? Json(nullptr) : Json(r.wall)},
         {"model_hash", r.hash}, {"eval_step", r.eval_step < 0 ? Json(nullptr) : Json(r.eval_step)},
         {"metrics", metrics}, {"options_that_differ", differs}};
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

std::string metric_text(const Run& r, const std::string& k) {
  auto it = r.metrics.find(k);
  if (it == r.metrics.end()) return "-";
  return fmt::format("{:.4f} ({:.4f})", it->second.last, it->second.best);
}

void print_table(const std::vector<Run>& runs, const std::set<std::string>& diff) {
  // At most three metric columns: loss first, then the others by name.
  std::vector<std::string> names;
  for (const Run& r : runs)
    for (const auto& [k, m] : r.metrics)
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return (a == "loss") > (b == "loss");
  });
  if (names.size() > 3) names.resize(3);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {"RUN", "STATUS", "STEP", "WALL", "MODEL HASH"};
  for (const std::string& n : names) head.push_back(n + " LAST (BEST)");
  head.push_back("OPTIONS THAT DIFFER");
  rows.push_back(head);
  for (const Run& r : runs) {
    std::vector<std::string> row = {r.name, r.status, fmt::format("{}/{}", r.step, r.max_steps),
                                    format_duration(r.wall), r.hash.empty() ? "-" : r.hash.substr(0, 8)};
    for (const std::string& n : names) row.push_back(metric_text(r, n));
    std::string d;
    for (const std::string& k : diff) d += (d.empty() ? "" : ", ") + k + "=" + option(r, k);
    row.push_back(d.empty() ? "-" : d);
    rows.push_back(row);
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c + 1 < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) line += c + 1 < row.size() ? fmt::format("{:<{}}  ", row[c], width[c]) : row[c];
    std::printf("%s\n", line.c_str());
  }
  for (const Run& r : runs)
    if (!r.note.empty()) std::printf("%s: %s\n", r.name.c_str(), r.note.c_str());
}

void print_comparison(const Run& a, const Run& b) {
  std::printf("%-40s  %-28s  %s\n", "", a.name.c_str(), b.name.c_str());
  std::printf("%-40s  %-28s  %s\n", "status", a.status.c_str(), b.status.c_str());
  std::printf("%-40s  %-28s  %s\n", "step", fmt::format("{}/{}", a.step, a.max_steps).c_str(),
              fmt::format("{}/{}", b.step, b.max_steps).c_str());
  std::printf("%-40s  %-28s  %s\n", "wall", format_duration(a.wall).c_str(), format_duration(b.wall).c_str());
  std::set<std::string> metrics;
  for (const auto& [k, m] : a.metrics) metrics.insert(k);
  for (const auto& [k, m] : b.metrics) metrics.insert(k);
  for (const std::string& k : metrics)
    std::printf("%-40s  %-28s  %s\n", (k + " last (best)").c_str(), metric_text(a, k).c_str(), metric_text(b, k).c_str());
  for (const std::string& k : differing({a, b}))
    std::printf("%-40s  %-28s  %s\n", k.c_str(), option(a, k).c_str(), option(b, k).c_str());
}

}  // namespace

void declare_runs(CLI::App& sub, RunsArgs& args) {
  sub.add_option("dir", args.dir, "directory holding model_dirs (searched three levels deep)")->required();
  sub.add_flag("--json", args.json, "one JSON array of the runs on stdout");
  sub.add_option("--compare", args.compare, "two runs (their paths under DIR) side by side")->expected(2);
}

int run_runs(const RunsArgs& a) {
  std::error_code ec;
  if (!fs::is_directory(a.dir, ec)) {
    std::fprintf(stderr, "dtrain: runs: %s is not a directory\n", a.dir.c_str());
    return 2;
  }
  const std::vector<Run> runs = find_runs(fs::path(a.dir));
  if (!a.compare.empty()) {
    std::vector<const Run*> picked;
    std::vector<std::string> names;
    for (const Run& r : runs) names.push_back(r.name);
    for (const std::string& want : a.compare) {
      auto it = std::find_if(runs.begin(), runs.end(), [&](const Run& r) { return r.name == want; });
      if (it == runs.end()) {
        std::fprintf(stderr, "dtrain: runs --compare: no run %s under %s%s\n", want.c_str(), a.dir.c_str(),
                     did_you_mean(want, names).c_str());
        return 2;
      }
      picked.push_back(&*it);
    }
    if (a.json) {
      const std::set<std::string> diff = differing({*picked[0], *picked[1]});
      std::printf("%s\n", Json::array({run_json(*picked[0], diff), run_json(*picked[1], diff)}).dump(2).c_str());
    } else {
      print_comparison(*picked[0], *picked[1]);
    }
    return 0;
  }
  const std::set<std::string> diff = differing(runs);
  if (a.json) {
    Json out = Json::array();
    for (const Run& r : runs) out.push_back(run_json(r, diff));
    std::printf("%s\n", out.dump(2).c_str());
  } else if (runs.empty()) {
    std::printf("no runs under %s (a run is a directory with job.resolved.yaml, run.json or a checkpoint index)\n",
                a.dir.c_str());
  } else {
    print_table(runs, diff);
  }
  return 0;
}

}  // namespace dtrain::cli
