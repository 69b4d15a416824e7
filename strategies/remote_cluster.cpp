// The --remote-cluster client: reserve, run, stream, stop.
#include "strategies/remote_cluster.hpp"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "strategies/child_process.hpp"
#include "engine/base/did_you_mean.hpp"
#include "engine/thread_errors.hpp"
#include "engine/version.hpp"
#include "strategies/task_server.grpc.pb.h"

namespace dtrain {
namespace {

using Clock = std::chrono::steady_clock;

const std::vector<std::string> kTaskTypes = {"chief", "worker", "ps", "evaluator"};

std::string client_identity() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const passwd* pw = ::getpwuid(::getuid());
  return fmt::format("{}@{} pid {}", pw != nullptr ? pw->pw_name : "?", host, ::getpid());
}

std::chrono::system_clock::time_point deadline_in(double secs) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(secs));
}

// One task on its server: the channel, the reservation and the run's stream.
struct Remote {
  RemoteTaskSpec spec;
  std::string label;  // "worker 1"
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<task::TaskServer::Stub> stub;
  std::string reservation;
  int task_port = 0;
  grpc::ClientContext run_ctx;
  std::thread reader;
  std::atomic<bool> done{false};
  int exit_code = -1;
};

std::mutex g_print_mu;

void print_line(std::FILE* out, const std::string& prefix, const std::string& line) {
  std::lock_guard<std::mutex> lock(g_print_mu);
  std::fprintf(out, "%s%s\n", prefix.c_str(), line.c_str());
  std::fflush(out);
}

void release_all(std::vector<std::unique_ptr<Remote>>& remotes) {
  for (auto& r : remotes) {
    if (r->reservation.empty()) continue;
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline_in(2));
    task::ReleaseRequest req;
    req.set_reservation(r->reservation);
    task::ReleaseResponse resp;
    r->stub->Release(&ctx, req, &resp);
  }
}

}  // namespace

Result<std::vector<RemoteTaskSpec>> parse_remote_cluster(const std::string& spec) {
  std::vector<RemoteTaskSpec> tasks;
  std::map<std::string, int> counts;
  std::set<std::string> servers;
  size_t start = 0;
  const std::string usage = "expected a comma-separated list of [TYPE=]HOST:PORT with TYPE chief, worker, ps or "
                            "evaluator (no TYPE: a worker), e.g. chief=node1:7000,node2:7000,ps=node3:7000";
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) return config_error(fmt::format("--remote-cluster \"{}\": an empty entry; {}", spec, usage));
    RemoteTaskSpec t;
    t.type = "worker";
    if (const size_t eq = item.find('='); eq != std::string::npos) {
      t.type = item.substr(0, eq);
      item = item.substr(eq + 1);
      if (std::find(kTaskTypes.begin(), kTaskTypes.end(), t.type) == kTaskTypes.end()) {
        return config_error(fmt::format("--remote-cluster: unknown task type \"{}\"{}; {}", t.type,
                                        did_you_mean(t.type, kTaskTypes), usage));
      }
    }
    const size_t colon = item.rfind(':');
    int port = 0;
    if (colon != std::string::npos && colon > 0) {
      const std::string digits = item.substr(colon + 1);
      if (!digits.empty() && digits.size() <= 5 && digits.find_first_not_of("0123456789") == std::string::npos) {
        port = std::stoi(digits);
      }
    }
    if (port < 1 || port > 65535) {
      return config_error(fmt::format("--remote-cluster: \"{}\" is not HOST:PORT with a port 1-65535; {}", item, usage));
    }
    if (!servers.insert(item).second) {
      return config_error(fmt::format("--remote-cluster: {} is listed twice; a server runs one task at a time", item));
    }
    t.server = item;
    t.host = item.substr(0, colon);
    t.index = counts[t.type]++;
    if ((t.type == "chief" || t.type == "evaluator") && t.index > 0) {
      return config_error(fmt::format("--remote-cluster: more than one {}; a cluster has at most one", t.type));
    }
    tasks.push_back(std::move(t));
    if (comma == spec.size()) break;
  }
  if (counts["chief"] + counts["worker"] == 0) {
    return config_error(fmt::format("--remote-cluster \"{}\": no chief or worker to train; {}", spec, usage));
  }
  return tasks;
}

std::string remote_cluster_json(const std::vector<RemoteTaskSpec>& tasks, const std::vector<int>& task_ports) {
  nlohmann::json cluster = nlohmann::json::object();
  for (const std::string& type : kTaskTypes) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].type == type) cluster[type].push_back(fmt::format("{}:{}", tasks[i].host, task_ports[i]));
    }
  }
  return cluster.dump();
}

int run_remote_cluster(const RemoteRun& run) {
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
    return static_cast<int>(exit_code_for(e.kind));
  };
  const double timeout = run.job.cluster.cluster_timeout_secs;
  std::vector<std::unique_ptr<Remote>> remotes;
  const std::string me = client_identity();
  // Reserve every server; any refusal releases the others.
  for (const RemoteTaskSpec& spec : run.tasks) {
    auto r = std::make_unique<Remote>();
    r->spec = spec;
    r->label = fmt::format("{} {}", spec.type, spec.index);
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    r->channel = grpc::CreateCustomChannel(spec.server, grpc::InsecureChannelCredentials(), args);
    r->stub = task::TaskServer::NewStub(r->channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline_in(timeout));
    ctx.set_wait_for_ready(true);  // a server still starting is waited for, up to the timeout
    task::ReserveRequest req;
    req.set_client(me);
    req.set_task_type(spec.type);
    req.set_task_index(spec.index);
    task::ReserveResponse resp;
    const grpc::Status s = r->stub->Reserve(&ctx, req, &resp);
    if (!s.ok()) {
      release_all(remotes);
      if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        return fail(cluster_error(
            fmt::format("the dtrain server at {} refused {}: {}", spec.server, r->label, s.error_message())));
      }
      return fail(cluster_error(fmt::format(
          "could not reach a dtrain server at {} (for {}) within {:g} s: {}; is `dtrain server --port {}` running "
          "there?",
          spec.server, r->label, timeout, s.error_message(), spec.server.substr(spec.server.rfind(':') + 1))));
    }
    if (resp.version() != kDtrainVersion) {
      std::fprintf(stderr, "dtrain: warning: the server at %s runs dtrain %s, this client %s\n", spec.server.c_str(),
                   resp.version().c_str(), kDtrainVersion);
    }
    r->reservation = resp.reservation();
    r->task_port = resp.task_port();
    remotes.push_back(std::move(r));
  }
  std::vector<int> ports;
  for (const auto& r : remotes) ports.push_back(r->task_port);
  const std::string cluster = remote_cluster_json(run.tasks, ports);
  std::fprintf(stderr, "dtrain: remote cluster of %zu tasks: %s\n", remotes.size(), cluster.c_str());

  StopSignals signals;

  std::mutex codes_mu;
  int first_failure = 0;
  for (auto& rp : remotes) {
    Remote* r = rp.get();
    task::RunRequest req;
    req.set_reservation(r->reservation);
    req.set_job_yaml(run.job.resolved_yaml);
    req.set_job_name(run.job_path);
    const nlohmann::json tf_config = {{"cluster", nlohmann::json::parse(cluster)},
                                      {"task", {{"type", r->spec.type}, {"index", r->spec.index}}}};
    req.set_tf_config(tf_config.dump());
    for (const std::string& a : run.train_args) req.add_train_args(a);
    r->reader = std::thread([r, req, &codes_mu, &first_failure] {
      const std::string prefix = fmt::format("[{}] ", r->label);
      try {
        maybe_throw_for_test("remote task reader");
        std::unique_ptr<grpc::ClientReader<task::RunEvent>> stream = r->stub->Run(&r->run_ctx, req);
        task::RunEvent ev;
        while (stream->Read(&ev)) {
          if (ev.has_stdout_line()) print_line(stdout, prefix, ev.stdout_line());
          if (ev.has_stderr_line()) print_line(stderr, prefix, ev.stderr_line());
          if (ev.has_exit_code()) r->exit_code = ev.exit_code();
        }
        const grpc::Status s = stream->Finish();
        if (r->exit_code < 0) {
          // The stream ended without the task's exit code: the server died, the
          // network failed, or this client cancelled.
          r->exit_code = static_cast<int>(ExitCode::kCluster);
          if (s.error_code() != grpc::StatusCode::CANCELLED) {
            print_line(stderr, "", fmt::format("dtrain: the dtrain server at {} ({}) stopped answering: {}",
                                               r->spec.server, r->label, s.error_message()));
          }
        }
      } catch (...) {  // a located line and the cluster code, never std::terminate
        const Error e = current_exception_error(fmt::format("reading {}'s output from {}", r->label, r->spec.server));
        print_line(stderr, "", "dtrain: " + e.message);
        r->exit_code = static_cast<int>(ExitCode::kCluster);
      }
      if (r->exit_code != 0) {
        std::lock_guard<std::mutex> lock(codes_mu);
        if (first_failure == 0) first_failure = r->exit_code;
        print_line(stderr, "", fmt::format("dtrain: {} on {} exited with code {}", r->label, r->spec.server,
                                           r->exit_code));
      }
      r->done.store(true);
    });
  }

  int forwarded = 0;
  bool cancelled = false;
  for (;;) {
    bool all_done = true;
    for (const auto& r : remotes) all_done = all_done && r->done.load();
    if (all_done) break;
    const int caught = signals.count();
    if (caught >= 1 && forwarded == 0) {
      forwarded = signals.last();
      print_line(stderr, "", fmt::format("dtrain: interrupted (signal {}); stopping the remote tasks (again to drop "
                                         "them at once)",
                                         forwarded));
      for (auto& r : remotes) {
        if (r->done.load()) continue;
        grpc::ClientContext ctx;
        ctx.set_deadline(deadline_in(5));
        task::StopRequest req;
        req.set_reservation(r->reservation);
        req.set_signal(forwarded);
        task::StopResponse resp;
        r->stub->Stop(&ctx, req, &resp);
      }
    }
    if (caught >= 2 && !cancelled) {
      cancelled = true;
      for (auto& r : remotes) r->run_ctx.TryCancel();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& r : remotes) r->reader.join();
  if (cancelled) return 128 + forwarded;
  if (first_failure == 0) std::fprintf(stderr, "dtrain: remote cluster: all %zu tasks finished\n", remotes.size());
  return first_failure;
}

}  // namespace dtrain
