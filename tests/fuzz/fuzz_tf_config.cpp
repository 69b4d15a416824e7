// The cluster from the environment: TF_CONFIG's JSON as TensorFlow reads it
// (selector byte even), or Slurm's SLURM_JOB_NODELIST / SLURM_TASKS_PER_NODE
// (odd: the input is "nodelist\ntasks per node\nprocid"), resolved and
// validated as `dtrain train` does. A cluster or a config error, never a throw.
#include <optional>
#include <string>
#include <string_view>

#include "engine/base/job_spec.hpp"
#include "engine/cluster/cluster.hpp"
#include "engine/cluster/slurm.hpp"
#include "engine/cluster/tf_config.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace dtrain;

namespace {

std::string_view next_line(std::string_view& rest) {
  const size_t end = rest.find('\n');
  std::string_view line = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint8_t selector = fuzz::take_selector(input);
  JobSpec job;
  job.strategy.type = (selector & 2) ? "parameter_server" : "collective";
  if (selector % 2 == 0) {
    fuzz::expect_ok_or(parse_tf_config(input), ErrorKind::kConfig, "parse_tf_config");
    const std::string tf_config(input);
    auto rc = resolve_cluster(job, [&](const std::string& name) -> std::optional<std::string> {
      if (name == "TF_CONFIG") return tf_config;
      return std::nullopt;
    });
    fuzz::expect_ok_or(rc, ErrorKind::kConfig, "resolve_cluster (TF_CONFIG)");
    if (rc.ok()) (void)format_cluster(*rc);
  } else {
    std::string_view rest = input;
    const std::string nodelist(next_line(rest)), tasks(next_line(rest)), procid(next_line(rest));
    fuzz::expect_ok_or(expand_hostlist(nodelist, "SLURM_JOB_NODELIST"), ErrorKind::kConfig, "expand_hostlist");
    fuzz::expect_ok_or(parse_tasks_per_node(tasks, "SLURM_TASKS_PER_NODE"), ErrorKind::kConfig,
                       "parse_tasks_per_node");
    auto rc = resolve_cluster(job, [&](const std::string& name) -> std::optional<std::string> {
      if (name == "SLURM_JOB_NODELIST") return nodelist;
      if (name == "SLURM_TASKS_PER_NODE") return tasks;
      if (name == "SLURM_PROCID") return procid;
      if (name == "SLURM_NTASKS") return std::string("4");
      return std::nullopt;
    });
    fuzz::expect_ok_or(rc, ErrorKind::kConfig, "resolve_cluster (Slurm)");
    if (rc.ok()) (void)format_cluster(*rc);
  }
  return 0;
}
