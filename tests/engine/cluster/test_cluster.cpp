// Cluster resolution: the job file's cluster section, the order of precedence
// (job file > TF_CONFIG > Slurm > local), and the `dtrain cluster` report.
#include <doctest.h>

#include "engine/cluster/cluster.hpp"
#include "tests/engine/cluster/cluster_test_util.hpp"

using namespace dtrain;
using namespace dtrain::cluster_test;

namespace {

const std::string kTfConfig = R"({"cluster": {"worker": ["tf0:1", "tf1:1"]}, "task": {"type": "worker", "index": 1}})";
const std::map<std::string, std::string> kSlurm = {
    {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "s[1-2]"}, {"SLURM_TASKS_PER_NODE", "1(x2)"}};

JobSpec job_with_cluster() {
  JobSpec job = job_with();
  job.cluster.chief = {"j0:2222"};
  job.cluster.worker = {"j1:2222"};
  job.cluster.task = ClusterTaskSpec{"worker", 0};
  job.cluster.cluster_timeout_secs = 30;
  return job;
}

}  // namespace

TEST_CASE("cluster: precedence job file > TF_CONFIG > Slurm > local") {
  auto all = kSlurm;
  all["TF_CONFIG"] = kTfConfig;
  auto from_job = resolve_cluster(job_with_cluster(), env_of(all));
  REQUIRE_MESSAGE(from_job.ok(), error_of(from_job));
  CHECK(from_job->source == "job file");
  CHECK(from_job->address == "j1:2222");
  CHECK(from_job->timeout_secs == 30);
  CHECK(from_job->cluster.tasks.count("ps") == 0);  // empty lists are dropped

  auto from_tf = resolve_cluster(job_with(), env_of(all));
  REQUIRE(from_tf.ok());
  CHECK(from_tf->source == "TF_CONFIG");
  CHECK(from_tf->address == "tf1:1");

  auto from_slurm = resolve_cluster(job_with(), env_of(kSlurm));
  REQUIRE_MESSAGE(from_slurm.ok(), error_of(from_slurm));
  CHECK(from_slurm->source == "Slurm");
  CHECK(from_slurm->address == "s1:23456");

  auto local = resolve_cluster(job_with(), env_of({{"SLURM_JOB_NODELIST", "s1"}}));  // an salloc shell: no PROCID
  REQUIRE(local.ok());
  CHECK(local->source == "local");
  CHECK(local->is_local());
  CHECK(local->is_chief());
  CHECK(local->task.type == "chief");
  CHECK(local->address.empty());
  auto blank = resolve_cluster(job_with(), env_of({{"SLURM_PROCID", ""}, {"TF_CONFIG", ""}}));  // blank = unset
  REQUIRE(blank.ok());
  CHECK(blank->source == "local");
}

TEST_CASE("cluster: a bad TF_CONFIG is an error even when Slurm variables are set") {
  auto env = kSlurm;
  env["TF_CONFIG"] = "{";
  auto r = resolve_cluster(job_with(), env_of(env));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kConfig);
  CHECK(r.error().message.starts_with("TF_CONFIG: invalid JSON: parse error at line 1, column 2:"));
}

TEST_CASE("cluster: job file mistakes name the job file") {
  JobSpec job = job_with_cluster();
  job.cluster.task.reset();
  CHECK(error_of(resolve_cluster(job, env_of({}))) ==
        "job.yaml: cluster.task is missing: the job file lists a cluster, so it must say which task this process is, "
        "e.g. --set cluster.task.type=worker --set cluster.task.index=0");
  job.cluster.task = ClusterTaskSpec{"worker", 1};
  CHECK(error_of(resolve_cluster(job, env_of({}))) ==
        "job.yaml: task {type: worker, index: 1} but cluster.worker has 1 address (0..0); set task.index to one of "
        "0..0 or add the missing address");
  job = job_with_cluster();
  job.cluster.ps = {"p0:1"};
  CHECK(error_of(resolve_cluster(job, env_of({}))) ==
        R"(job.yaml: cluster.ps lists 1 parameter server(s) but strategy.type is "mirrored", which uses none; remove cluster.ps or use strategy.type: parameter_server)");
  job.strategy.type = "parameter_server";
  CHECK(resolve_cluster(job, env_of({})).ok());
}

TEST_CASE("cluster: validate_cluster addresses") {
  ClusterSpec c;
  c.tasks = {{"worker", {"[::1]:2222", "10.0.0.2:2222", "host.example.com:1"}}};
  CHECK(validate_cluster(c, {"worker", 2}, "mirrored", "X").ok());
  c.tasks = {{"worker", {"::1:2222"}}};
  CHECK(validate_cluster(c, {"worker", 0}, "mirrored", "X").error().message ==
        R"(X: cluster.worker[0]: "::1:2222" has more than one ':' (write an IPv6 host as [::1]:2222); addresses are "host:port", e.g. "worker0.example.com:2222")");
  c.tasks = {{"worker", {":2222"}}};
  CHECK(validate_cluster(c, {"worker", 0}, "mirrored", "X").error().message ==
        R"(X: cluster.worker[0]: ":2222" has no host; addresses are "host:port", e.g. "worker0.example.com:2222")");
  c.tasks = {{"worker", {"h:0"}}};
  CHECK(validate_cluster(c, {"worker", 0}, "mirrored", "X").error().message ==
        R"(X: cluster.worker[0]: "h:0" has port "0"; a port is a number 1..65535; addresses are "host:port", e.g. "worker0.example.com:2222")");
}

TEST_CASE("cluster: the dtrain cluster report") {
  ResolvedCluster local;
  local.source = "local";
  local.task = {"chief", 0};
  CHECK(format_cluster(local) ==
        "source: local\ncluster: none (a single local process)\ntask: chief 0 (a single local process)\n"
        "role: chief: writes checkpoints and summaries\n");

  auto r = resolve_cluster(job_with(), env_of({{"TF_CONFIG", kTfConfig}}));
  REQUIRE(r.ok());
  CHECK(format_cluster(*r) ==
        "source: TF_CONFIG\ncluster:\n  worker:\n    0: tf0:1\n    1: tf1:1\ntask: worker 1 at tf1:1\n"
        "role: worker: trains; writes nothing into model_dir\ntraining tasks: 2\n");
  r->task.index = 0;
  CHECK(format_cluster(*r).find("role: chief: writes checkpoints and summaries (worker 0 of a cluster without a "
                                "chief)\n") != std::string::npos);
}
