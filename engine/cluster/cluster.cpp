// Resolves the cluster and this task (job file > TF_CONFIG > Slurm > local),
// checks it before any connection is tried, and formats `dtrain cluster`.
#include "engine/cluster/cluster.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

#include "engine/base/did_you_mean.hpp"
#include "engine/cluster/slurm.hpp"
#include "engine/cluster/tf_config.hpp"

namespace dtrain {
namespace {

bool known_type(const std::string& type) {
  for (const auto& t : task_types())
    if (t == type) return true;
  return false;
}

// "host:port", "[v6]:port": a host without spaces or ':' (brackets for IPv6)
// and a port 1..65535. Returns what is wrong, or "".
std::string address_problem(const std::string& a) {
  const size_t colon = a.rfind(':');
  if (colon == std::string::npos) return "has no \":port\"";
  std::string host = a.substr(0, colon);
  const std::string port = a.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string::npos) return "has more than one ':' (write an IPv6 host as [::1]:2222)";
  if (host.empty()) return "has no host";
  for (char c : host)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '/' || c == '[' || c == ']')
      return fmt::format("has a '{}' in its host", c == ' ' ? std::string("space") : std::string(1, c));
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (!digits || std::stol(port) < 1 || std::stol(port) > 65535)
    return fmt::format("has port \"{}\"; a port is a number 1..65535", port);
  return "";
}

std::string task_text(const TaskSpec& t) { return fmt::format("{{type: {}, index: {}}}", t.type, t.index); }

// Prefix of a message: "TF_CONFIG: " etc.
std::string at(const std::string& where) { return where + ": "; }

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

const std::vector<std::string>& task_types() {
  static const std::vector<std::string> types = {"chief", "worker", "ps", "evaluator"};
  return types;
}

size_t ClusterSpec::count(const std::string& type) const {
  auto it = tasks.find(type);
  return it == tasks.end() ? 0 : it->second.size();
}

size_t ClusterSpec::num_training_tasks() const { return count("chief") + count("worker"); }

bool ResolvedCluster::is_chief() const {
  if (task.type == "chief") return true;
  return task.type == "worker" && task.index == 0 && cluster.count("chief") == 0;
}

std::string ResolvedCluster::role() const { return is_chief() ? "chief" : task.type; }

Status validate_cluster(const ClusterSpec& cluster, const TaskSpec& task, const std::string& strategy_type,
                        const std::string& where) {
  const std::string p = at(where);
  for (const auto& [type, addresses] : cluster.tasks) {
    if (!known_type(type))
      return config_error(fmt::format("{}cluster.{}: \"{}\" is not one of chief, worker, ps, evaluator{}", p, type,
                                      type, did_you_mean(type, task_types())));
    for (size_t i = 0; i < addresses.size(); ++i)
      if (std::string why = address_problem(addresses[i]); !why.empty())
        return config_error(fmt::format("{}cluster.{}[{}]: \"{}\" {}; addresses are \"host:port\", e.g. "
                                        "\"worker0.example.com:2222\"",
                                        p, type, i, addresses[i], why));
  }
  for (const char* single : {"chief", "evaluator"})
    if (cluster.count(single) > 1)
      return config_error(fmt::format("{}cluster.{} has {} addresses; a cluster has at most one {}; make the "
                                      "others workers",
                                      p, single, cluster.count(single), single));
  // Duplicates: the evaluator's own message first, as it is the likelier mistake.
  std::map<std::string, std::string> seen;  // address -> "cluster.worker[1]"
  for (const auto& type : task_types()) {
    if (type == "evaluator") continue;
    for (size_t i = 0; i < cluster.count(type); ++i) {
      const std::string& a = cluster.tasks.at(type)[i];
      const std::string here = fmt::format("cluster.{}[{}]", type, i);
      auto [it, fresh] = seen.emplace(a, here);
      if (!fresh)
        return config_error(fmt::format("{}address \"{}\" is listed twice, as {} and {}; every task needs its own "
                                        "host:port",
                                        p, a, it->second, here));
    }
  }
  if (cluster.count("evaluator") == 1)
    if (auto it = seen.find(cluster.tasks.at("evaluator")[0]); it != seen.end())
      return config_error(fmt::format("{}the evaluator's address \"{}\" is also {}; the evaluator is not a "
                                      "training task; give it an address of its own",
                                      p, it->first, it->second));
  if (!cluster.empty() && cluster.num_training_tasks() == 0)
    return config_error(fmt::format("{}the cluster has no chief or worker; list the training tasks in "
                                    "cluster.worker (and optionally one cluster.chief)",
                                    p));
  if (cluster.count("ps") > 0 && strategy_type != "parameter_server")
    return config_error(fmt::format("{}cluster.ps lists {} parameter server(s) but strategy.type is \"{}\", "
                                    "which uses none; remove cluster.ps or use strategy.type: parameter_server",
                                    p, cluster.count("ps"), strategy_type));
  if (!known_type(task.type))
    return config_error(fmt::format("{}task.type \"{}\" is not one of chief, worker, ps, evaluator{}", p, task.type,
                                    did_you_mean(task.type, task_types())));
  if (task.index < 0)
    return config_error(fmt::format("{}task {}: task.index must be 0 or more", p, task_text(task)));
  const size_t n = cluster.count(task.type);
  if (task.type == "evaluator" && n == 0) {
    if (task.index != 0)
      return config_error(fmt::format("{}task {}: there is at most one evaluator; set task.index to 0", p,
                                      task_text(task)));
    return Status::Ok();
  }
  if (n == 0)
    return config_error(fmt::format("{}task {} but the cluster has no {} tasks; add cluster.{} or fix task.type", p,
                                    task_text(task), task.type, task.type));
  if (static_cast<size_t>(task.index) >= n)
    return config_error(fmt::format("{}task {} but cluster.{} has {} address{} (0..{}); set task.index to one of "
                                    "0..{} or add the missing address",
                                    p, task_text(task), task.type, n, n == 1 ? "" : "es", n - 1, n - 1));
  return Status::Ok();
}

Result<ResolvedCluster> resolve_cluster(const JobSpec& job, const EnvLookup& env) {
  ResolvedCluster rc;
  rc.timeout_secs = job.cluster.cluster_timeout_secs;
  ClusterSpec from_job;
  for (const auto& [type, addresses] : job.cluster.tasks())
    if (!addresses.empty()) from_job.tasks[type] = addresses;
  const std::string& strategy = job.strategy.type;

  if (!from_job.empty()) {
    const std::string where = job.source_path.empty() ? "job file" : job.source_path;
    if (!job.cluster.task)
      return config_error(fmt::format("{}: cluster.task is missing: the job file lists a cluster, so it must say "
                                      "which task this process is, e.g. --set cluster.task.type=worker "
                                      "--set cluster.task.index=0",
                                      where));
    rc.cluster = std::move(from_job);
    rc.task = {job.cluster.task->type, job.cluster.task->index};
    rc.source = "job file";
    if (Status s = validate_cluster(rc.cluster, rc.task, strategy, where); !s) return s.error();
  } else if (auto text = env("TF_CONFIG"); text && !text->empty()) {
    auto tf = parse_tf_config(*text);
    if (!tf) return tf.error();
    if (!tf->cluster.empty()) {
      if (tf->task.type.empty())
        return config_error("TF_CONFIG: \"task\" is missing: TF_CONFIG lists a cluster, so it must say which task "
                            "this process is, e.g. \"task\": {\"type\": \"worker\", \"index\": 0}");
      rc.cluster = std::move(tf->cluster);
      rc.task = tf->task;
      rc.source = "TF_CONFIG";
      rc.notes = std::move(tf->notes);
      if (Status s = validate_cluster(rc.cluster, rc.task, strategy, "TF_CONFIG"); !s) return s.error();
    }
  }
  const auto procid = env("SLURM_PROCID");
  if (rc.source.empty() && procid && !procid->empty()) {
    auto slurm = slurm_cluster(env);
    if (!slurm) return slurm.error();
    slurm->timeout_secs = rc.timeout_secs;
    if (Status s = validate_cluster(slurm->cluster, slurm->task, strategy, "Slurm"); !s) return s.error();
    return slurm;
  }
  if (rc.source.empty()) {
    rc.source = "local";
    rc.task = {"chief", 0};
    return rc;
  }
  if (rc.cluster.count(rc.task.type) > static_cast<size_t>(rc.task.index))
    rc.address = rc.cluster.tasks.at(rc.task.type)[static_cast<size_t>(rc.task.index)];
  return rc;
}

std::string format_cluster(const ResolvedCluster& rc) {
  std::string out = fmt::format("source: {}\n", rc.source);
  if (rc.is_local()) {
    out += "cluster: none (a single local process)\n";
    out += "task: chief 0 (a single local process)\n";
    out += "role: chief: writes checkpoints and summaries\n";
    return out;
  }
  out += "cluster:\n";
  for (const auto& type : task_types()) {
    if (rc.cluster.count(type) == 0) continue;
    out += fmt::format("  {}:\n", type);
    const auto& list = rc.cluster.tasks.at(type);
    for (size_t i = 0; i < list.size(); ++i) out += fmt::format("    {}: {}\n", i, list[i]);
  }
  out += fmt::format("task: {} {} at {}\n", rc.task.type, rc.task.index,
                     rc.address.empty() ? std::string("(no address: not listed in the cluster)") : rc.address);
  const std::string role = rc.role();
  std::string what;
  if (role == "chief")
    what = rc.task.type == "chief" ? "writes checkpoints and summaries"
                                   : "writes checkpoints and summaries (worker 0 of a cluster without a chief)";
  else if (role == "worker")
    what = "trains; writes nothing into model_dir";
  else if (role == "ps")
    what = "holds variables for the parameter_server strategy";
  else
    what = "evaluates each new checkpoint in model_dir; not a training task";
  out += fmt::format("role: {}: {}\n", role, what);
  out += fmt::format("training tasks: {}\n", rc.cluster.num_training_tasks());
  for (const std::string& note : rc.notes) out += fmt::format("note: {}\n", note);
  return out;
}

}  // namespace dtrain
