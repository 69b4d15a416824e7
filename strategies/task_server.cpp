// dtrain server: the TaskServer gRPC service and the one task it runs at a time.
#include "strategies/task_server.hpp"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "strategies/child_process.hpp"
#include "engine/base/status.hpp"
#include "engine/version.hpp"
#include "strategies/rpc_guard.hpp"
#include "strategies/task_server.grpc.pb.h"

namespace dtrain {
namespace {

using Clock = std::chrono::steady_clock;

// A reservation not followed by Run within this is dropped (the client died
// between the two calls).
constexpr std::chrono::seconds kReservationLifetime{120};

std::string new_token() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

void log_line(const std::string& text) {
  std::fprintf(stderr, "dtrain server: %s\n", text.c_str());
  std::fflush(stderr);
}

class TaskServerImpl final : public task::TaskServer::Service {
 public:
  explicit TaskServerImpl(const ServerArgs& args) : args_(args) {}

  grpc::Status Reserve(grpc::ServerContext*, const task::ReserveRequest* req, task::ReserveResponse* resp) override {
    return guarded_rpc("task server reserve", [&]() -> grpc::Status {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_jobs_ > 0 && args_.once) {
        return {grpc::StatusCode::FAILED_PRECONDITION, "this server ran its one job (--once) and is ending"};
      }
      if (reservation_ && !running_ && Clock::now() > reservation_->expires) {
        log_line(fmt::format("the reservation for {} by {} expired unused", reservation_->label, reservation_->client));
        reservation_.reset();
      }
      if (reservation_) {
        return {grpc::StatusCode::FAILED_PRECONDITION,
                fmt::format("busy: {} {} for {}", running_ ? "running" : "reserved for", reservation_->label,
                            reservation_->client)};
      }
      const int port = free_port(/*loopback_only=*/false);
      if (port <= 0) return {grpc::StatusCode::RESOURCE_EXHAUSTED, "no free port for the task"};
      Reservation r;
      r.token = new_token();
      r.client = req->client();
      r.label = fmt::format("{} {}", req->task_type(), req->task_index());
      r.port = port;
      r.expires = Clock::now() + kReservationLifetime;
      log_line(fmt::format("reserved for {} by {} (the task will serve on port {})", r.label, r.client, port));
      resp->set_reservation(r.token);
      resp->set_task_port(port);
      resp->set_version(kDtrainVersion);
      resp->set_hostname(this_host());
      reservation_ = std::move(r);
      return grpc::Status::OK;
    });
  }

  grpc::Status Release(grpc::ServerContext*, const task::ReleaseRequest* req, task::ReleaseResponse*) override {
    return guarded_rpc("task server release", [&]() -> grpc::Status {
      std::lock_guard<std::mutex> lock(mu_);
      if (reservation_ && reservation_->token == req->reservation() && !running_) {
        log_line(fmt::format("{} released by {} without running", reservation_->label, reservation_->client));
        reservation_.reset();
      }
      return grpc::Status::OK;
    });
  }

  grpc::Status Stop(grpc::ServerContext*, const task::StopRequest* req, task::StopResponse*) override {
    return guarded_rpc("task server stop", [&]() -> grpc::Status {
      std::lock_guard<std::mutex> lock(mu_);
      if (!reservation_ || reservation_->token != req->reservation()) {
        return {grpc::StatusCode::NOT_FOUND, "no such task on this server"};
      }
      const int sig = req->signal() == SIGINT ? SIGINT : SIGTERM;
      if (running_ && child_pid_ > 0) {
        log_line(fmt::format("the client asks to stop {}: sending signal {}", reservation_->label, sig));
        ::kill(child_pid_, sig);
      }
      return grpc::Status::OK;
    });
  }

  grpc::Status Run(grpc::ServerContext* ctx, const task::RunRequest* req,
                   grpc::ServerWriter<task::RunEvent>* writer) override {
    return guarded_rpc("task server run", [&]() -> grpc::Status {
      std::string label, client;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!reservation_ || reservation_->token != req->reservation()) {
          return {grpc::StatusCode::FAILED_PRECONDITION, "no reservation for this run (it expired or was released)"};
        }
        if (running_) return {grpc::StatusCode::FAILED_PRECONDITION, "this reservation is already running"};
        running_ = true;
        label = reservation_->label;
        client = reservation_->client;
      }
      const int code = run_task(ctx, *req, writer, label, client);
      {
        std::lock_guard<std::mutex> lock(mu_);
        running_ = false;
        child_pid_ = -1;
        reservation_.reset();
        ++finished_jobs_;
      }
      done_cv_.notify_all();
      if (code < 0) return {grpc::StatusCode::INTERNAL, "the task could not start; see the server's log"};
      return grpc::Status::OK;
    });
  }

  // Stops the running task, if any (the server itself is ending).
  void stop_task(int sig) {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ && child_pid_ > 0) ::kill(child_pid_, sig);
  }

  bool idle() {
    std::lock_guard<std::mutex> lock(mu_);
    return !running_;
  }

  // True once a job has run and --once asks to end.
  bool wait_done(std::chrono::milliseconds for_at_most) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait_for(lock, for_at_most, [&] { return finished_jobs_ > 0 && !running_; });
    return args_.once && finished_jobs_ > 0 && !running_;
  }

 private:
  struct Reservation {
    std::string token, client, label;
    int port = 0;
    Clock::time_point expires;
  };

  // Runs `dtrain train` for the reserved task; returns its exit code, or -1
  // when it could not start (the client got an error event).
  int run_task(grpc::ServerContext* ctx, const task::RunRequest& req, grpc::ServerWriter<task::RunEvent>* writer,
               const std::string& label, const std::string& client) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir = fs::temp_directory_path(ec) / fmt::format("dtrain-server-{}-{}", ::getpid(), new_token());
    fs::create_directories(dir, ec);
    std::string name = fs::path(req.job_name()).filename().string();
    if (name.empty() || name == "." || name == "..") name = "job.yaml";
    const fs::path job_file = dir / name;
    bool client_gone = false;
    auto send = [&](const task::RunEvent& ev) {
      if (!client_gone && !writer->Write(ev)) client_gone = true;
    };
    {
      std::FILE* f = ec ? nullptr : std::fopen(job_file.c_str(), "w");
      if (f == nullptr || std::fwrite(req.job_yaml().data(), 1, req.job_yaml().size(), f) != req.job_yaml().size()) {
        if (f != nullptr) std::fclose(f);
        task::RunEvent ev;
        ev.set_stderr_line(fmt::format("dtrain server: cannot write the job to {}", job_file.string()));
        send(ev);
        log_line(ev.stderr_line());
        fs::remove_all(dir, ec);
        return -1;
      }
      std::fclose(f);
    }
    std::vector<std::string> argv = {self_exe(), "train", job_file.string()};
    argv.insert(argv.end(), req.train_args().begin(), req.train_args().end());
    auto child = spawn_child(argv, {"TF_CONFIG=" + req.tf_config()});
    if (!child) {
      task::RunEvent ev;
      ev.set_stderr_line("dtrain server: " + child.error().message);
      send(ev);
      log_line(child.error().message);
      fs::remove_all(dir, ec);
      return -1;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      child_pid_ = child->pid;
    }
    log_line(fmt::format("running {} of {} for {} (pid {})", label, name, client, child->pid));
    const std::string prefix = fmt::format("[{}] ", label);
    std::optional<Clock::time_point> stopping_since;
    std::optional<int> exit_code;
    while (!exit_code || child->out_fd >= 0 || child->err_fd >= 0) {
      if (!client_gone && ctx->IsCancelled()) client_gone = true;
      if (client_gone && !stopping_since && !exit_code) {
        log_line(fmt::format("the client went away; stopping {} (SIGTERM)", label));
        ::kill(child->pid, SIGTERM);
        stopping_since = Clock::now();
      }
      if (stopping_since && !exit_code &&
          Clock::now() - *stopping_since > std::chrono::duration<double>(args_.stop_grace_secs)) {
        log_line(fmt::format("{} did not end within {:g} s of SIGTERM; killing it", label, args_.stop_grace_secs));
        ::kill(child->pid, SIGKILL);
        stopping_since = Clock::now() + std::chrono::hours(24);  // once
      }
      pollfd fds[2];
      int n = 0;
      if (child->out_fd >= 0) fds[n++] = {child->out_fd, POLLIN, 0};
      if (child->err_fd >= 0) fds[n++] = {child->err_fd, POLLIN, 0};
      if (n > 0 && ::poll(fds, static_cast<nfds_t>(n), 100) > 0) {
        for (int i = 0; i < n; ++i) {
          if (fds[i].revents == 0) continue;
          const bool is_err = fds[i].fd == child->err_fd;
          auto forward = [&](std::string_view line) {
            task::RunEvent ev;
            if (is_err) {
              ev.set_stderr_line(std::string(line));
            } else {
              ev.set_stdout_line(std::string(line));
            }
            send(ev);
            // The server's own log keeps the task's output too.
            std::fprintf(stderr, "%s%.*s\n", prefix.c_str(), static_cast<int>(line.size()), line.data());
          };
          if (is_err) {
            read_lines(child->err_fd, child->err_buf, forward);
          } else {
            read_lines(child->out_fd, child->out_buf, forward);
          }
        }
        std::fflush(stderr);
      } else if (n == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (!exit_code) exit_code = try_reap(child->pid);
    }
    log_line(fmt::format("{} ended with exit code {}; waiting for work", label, *exit_code));
    task::RunEvent ev;
    ev.set_exit_code(*exit_code);
    send(ev);
    fs::remove_all(dir, ec);
    return *exit_code;
  }

  const ServerArgs args_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  std::optional<Reservation> reservation_;
  bool running_ = false;
  pid_t child_pid_ = -1;
  int finished_jobs_ = 0;
};

}  // namespace

int run_task_server(const ServerArgs& args) {
  TaskServerImpl service(args);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(fmt::format("{}:{}", args.host, args.port), grpc::InsecureServerCredentials(), &port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a second server on a used port must fail
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "dtrain: server: cannot listen on %s:%d (in use, or not an address of this machine)\n",
                 args.host.c_str(), args.port);
    return static_cast<int>(ExitCode::kCluster);
  }
  StopSignals signals;
  log_line(fmt::format("waiting for work on {}:{} (dtrain {}, pid {}{})", args.host, port, kDtrainVersion, ::getpid(),
                       args.once ? ", one job" : ""));
  int sig = 0;
  while ((sig = signals.last()) == 0) {
    if (service.wait_done(std::chrono::milliseconds(200))) break;
  }
  if (sig != 0) {
    log_line(fmt::format("stopped by signal {}", sig));
    service.stop_task(SIGTERM);
    const auto until = Clock::now() + std::chrono::duration<double>(args.stop_grace_secs);
    while (!service.idle() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    service.stop_task(SIGKILL);
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}

}  // namespace dtrain
