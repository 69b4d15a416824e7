// The subcommands: each declares its arguments and calls into the engine;
// errors become one line on stderr and an exit code.
#include "cli/commands.hpp"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "cli/data_commands.hpp"
#include "strategies/remote_cluster.hpp"
#include "cli/slurm_requeue.hpp"
#include "config_schema/job_loader.hpp"
#include "engine/cluster/cluster.hpp"
#include "engine/devices.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/threads.hpp"
#include "engine/version.hpp"
#include "estimator/estimator.hpp"
#include "engine/stop_signals.hpp"
#include "strategies/cluster_runtime.hpp"
#include "strategies/ps_service.hpp"
#include "strategies/program.hpp"
#include "strategies/strategy.hpp"

namespace dtrain::cli {
namespace {

int fail(const Error& e) {
  std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
  return static_cast<int>(exit_code_for(e.kind));
}

void add_job(CLI::App& sub, Args& a) {
  sub.add_option("job", a.jobs, "the job file (YAML)")->required()->expected(1);
  sub.add_option("--set", a.overrides, "override a job field: path.to.key=value (repeatable)");
}

void add_run_options(CLI::App& sub, Args& a) {
  sub.add_option("--model-dir", a.model_dir, "override run.model_dir");
  sub.add_option("--log-format", a.log_format, "auto (progress line on a terminal), plain or json")
      ->check(CLI::IsMember({"auto", "plain", "json"}));
  sub.add_option("--threads", a.threads,
                 "compute threads of each process, over run.threads and OMP_NUM_THREADS (default: the CPUs of the "
                 "affinity mask, capped by the cgroup CPU quota)")
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            int n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec == std::errc() && end == v.data() + v.size() && n >= 1 && n <= (1 << 20)) return "";
            return "\"" + v + "\" is not a thread count; expected an integer >= 1 (leave --threads out for "
                   "run.threads, OMP_NUM_THREADS or the thread budget)";
          },
          "N>=1"));
}

std::optional<int> threads_arg(const Args& a) { return a.threads > 0 ? std::optional<int>(a.threads) : std::nullopt; }

// Loads a job for `command` with --set and --model-dir applied.
Result<JobSpec> load_for(const Args& a, const std::string& path, std::string_view command) {
  LoadOptions options;
  options.overrides = a.overrides;
  if (!a.model_dir.empty()) options.overrides.push_back("run.model_dir=" + a.model_dir);
  auto job = load_job(path, options);
  if (!job) return job;
  if (Status s = check_for_command(*job, command); !s) return s.error();
  return job;
}

// The cluster `dtrain train` runs in, checked against the job's strategy:
// several training tasks need a strategy that spans processes; a ps task
// needs parameter_server. nullopt for a single local process.
Result<std::optional<ResolvedCluster>> training_cluster(const JobSpec& job, const std::string& path,
                                                       const EnvLookup& env = process_env()) {
  auto rc = resolve_cluster(job, env);
  if (!rc) return rc.error();
  if (rc->is_local()) return std::optional<ResolvedCluster>();
  const std::string& type = job.strategy.type;
  const StrategyTraits traits = strategy_traits(job.strategy);
  if (rc->task.type == "ps" && !traits.needs_ps_tasks) {
    return config_error(fmt::format("{}: this task is ps {} (from {}), but strategy.type is \"{}\"; ps tasks "
                                    "serve the parameter_server strategy",
                                    path, rc->task.index, rc->source, type));
  }
  if (traits.needs_ps_tasks && rc->cluster.count("ps") == 0) {
    return config_error(fmt::format("{}: strategy.type: {} needs ps tasks in the cluster, but the "
                                    "cluster from {} has none; add ps tasks (TF_CONFIG's cluster.ps, dtrain launch "
                                    "--ps N, or ps=HOST:PORT in --remote-cluster)",
                                    path, type, rc->source));
  }
  if (rc->cluster.num_training_tasks() > 1 && !traits.spans_processes) {
    return config_error(fmt::format(
        "{}: strategy.type: \"{}\" trains in one process, but the cluster from {} has {} training tasks; use "
        "strategy collective to train across them, or run a single task",
        path, type, rc->source, rc->cluster.num_training_tasks()));
  }
  return std::optional<ResolvedCluster>(*rc);
}

EstimatorOptions estimator_options(const Args& a) {
  EstimatorOptions o;
  o.log_format = a.log_format == "json" ? LogFormat::kJson : a.log_format == "plain" ? LogFormat::kPlain : LogFormat::kAuto;
  o.threads = threads_arg(a);
  return o;
}

// Loads the job for `command` and builds its Estimator (a local process:
// evaluate and predict never join a cluster).
Result<std::unique_ptr<Estimator>> estimator_for(const Args& a, std::string_view command) {
  auto job = load_for(a, a.jobs[0], command);
  if (!job) return job.error();
  return Estimator::create(*job, estimator_options(a));
}

std::optional<std::string> checkpoint_arg(const Args& a) {
  return a.checkpoint.empty() ? std::nullopt : std::optional<std::string>(a.checkpoint);
}

// A ps task: serves its share of the variables until the chief ends it.
int run_ps_task(const JobSpec& job, ClusterRuntime& cluster, std::optional<int> threads) {
  std::fprintf(stderr, "ps %lld: %s\n", static_cast<long long>(cluster.resolved().task.index),
               apply_compute_threads(threads, job.run.threads).line.c_str());
  PsConfig config;
  config.optimizer = job.optimizer;
  config.sync = job.strategy.mode == "sync";
  config.num_workers = cluster.size();
  config.timeout_secs = cluster.timeout_secs();
  config.elastic = cluster.elastic();
  const std::string& address = cluster.resolved().address;
  auto service = ParameterService::start("0.0.0.0:" + address.substr(address.rfind(':') + 1), config);
  if (!service) {
    cluster.client().report_error(service.error().message);
    return fail(service.error());
  }
  std::fprintf(stderr, "ps %lld: serving on %s (mode %s, %d workers)\n",
               static_cast<long long>(cluster.resolved().task.index), address.c_str(), job.strategy.mode.c_str(),
               config.num_workers);
  // Cluster failures end the process through the coordination client. A
  // stop signal (a launcher or a scheduler sends it to every task) does not
  // end a ps task: the training tasks stop after their step and the chief
  // saves, which needs the variables served here; the chief then ends this
  // task, which exits 75 as they do. A second signal ends it at once.
  bool noted = false;
  while (!(*service)->wait_for_shutdown(std::chrono::steady_clock::now() + std::chrono::milliseconds(200))) {
    if (const int sig = received_stop_signal(); sig != 0 && !noted) {
      noted = true;
      further_stop_signals_end_the_process();
      std::fprintf(stderr, "ps %lld: received %s; serving until the chief has saved and stops this task (another "
                   "signal ends it at once)\n", static_cast<long long>(cluster.resolved().task.index),
                   stop_signal_name(sig).c_str());
    }
  }
  std::fprintf(stderr, "ps %lld: stopped by the chief\n", static_cast<long long>(cluster.resolved().task.index));
  cluster.finish();
  return received_stop_signal() != 0 ? static_cast<int>(ExitCode::kStopped) : 0;
}

// train --remote-cluster: the job runs on `dtrain server`s; this process
// only sends it and shows their output.
int run_remote_train(const Args& a) {
  auto tasks = parse_remote_cluster(a.remote_cluster);
  if (!tasks) return fail(tasks.error());
  const std::string& path = a.jobs[0];
  auto job = load_for(a, path, "train");
  if (!job) return fail(job.error());
  if (Status s = no_cluster_addresses(*job, path, "--remote-cluster"); !s) return fail(s.error());
  // The servers have their own working directories: model_dir goes absolute
  // (data paths already are, in the resolved job).
  if (!std::filesystem::path(job->run.model_dir).is_absolute()) {
    Args with_dir = a;
    with_dir.model_dir = (std::filesystem::current_path() / job->run.model_dir).lexically_normal().string();
    job = load_for(with_dir, path, "train");
    if (!job) return fail(job.error());
  }
  // The roles must suit the job before any server is asked: checked as each
  // task will check its TF_CONFIG (the servers' own addresses stand in for the
  // task ports they will pick).
  std::vector<int> ports;
  for (const RemoteTaskSpec& t : *tasks) ports.push_back(std::stoi(t.server.substr(t.server.rfind(':') + 1)));
  const std::string cluster = remote_cluster_json(*tasks, ports);
  for (const RemoteTaskSpec& t : *tasks) {
    const std::string tf_config =
        fmt::format(R"({{"cluster": {}, "task": {{"type": "{}", "index": {}}}}})", cluster, t.type, t.index);
    EnvLookup env = [tf_config](const std::string& name) -> std::optional<std::string> {
      if (name == "TF_CONFIG") return tf_config;
      return std::nullopt;
    };
    auto rc = training_cluster(*job, path, env);
    if (!rc) return fail(Error{rc.error().kind, "--remote-cluster: " + rc.error().message});
  }
  RemoteRun run;
  run.job_path = path;
  run.job = std::move(*job);
  run.tasks = std::move(*tasks);
  if (a.no_eval) run.train_args.push_back("--no-eval");
  if (a.log_format != "auto") run.train_args.insert(run.train_args.end(), {"--log-format", a.log_format});
  if (a.threads > 0) run.train_args.insert(run.train_args.end(), {"--threads", std::to_string(a.threads)});
  return run_remote_cluster(run);
}

// train in a cluster: join it (rendezvous), then train as a training task
// or follow model_dir as the evaluator. A task that fails tells the others,
// which stop naming it.
int run_train(const Args& a) {
  if (!a.remote_cluster.empty()) return run_remote_train(a);
  auto job = load_for(a, a.jobs[0], "train");
  if (!job) return fail(job.error());
  auto rc = training_cluster(*job, a.jobs[0]);
  if (!rc) return fail(rc.error());
  EstimatorOptions options = estimator_options(a);
  options.on_requeue_signal = [policy = job->run.slurm_requeue](const std::string& checkpoint) {
    return requeue_slurm_job(policy, checkpoint, process_env());
  };
  std::unique_ptr<ClusterRuntime> cluster;
  if (*rc) {
    ClusterRuntime::JoinOptions join;
    join.with_ps = strategy_traits(job->strategy).needs_ps_tasks;
    join.workers_may_die = strategy_traits(job->strategy).workers_may_die;
    size_t tasks = 0, training = 0;
    for (const auto& [type, addresses] : (*rc)->cluster.tasks) {
      tasks += addresses.size();
      if (type == "chief" || type == "worker") training += addresses.size();
    }
    // Before joining: every task stops with the same config error.
    if (Status s = check_elastic(*job, static_cast<int>(training)); !s) return fail(s.error());
    join.elastic_min_workers = job->strategy.elastic_min_workers;
    join.elastic_max_workers = job->strategy.elastic_max_workers;
    // Collective: the group outlives the task hosting the coordination
    // service (the ps strategies keep it on the chief).
    join.failover = !join.with_ps;
    Logger startup(options.log_format, stderr);  // forming the cluster can take up to the timeout: say so at once
    startup.status(fmt::format("joining the cluster as {} {} ({} tasks, from {}; waiting up to {:g} s for the others)",
                               (*rc)->task.type, (*rc)->task.index, tasks, (*rc)->source, (*rc)->timeout_secs));
    auto joined = ClusterRuntime::join(**rc, join);
    startup.end_progress();
    if (!joined) return fail(joined.error());
    cluster = std::move(*joined);
    options.cluster = cluster.get();
  }
  if (cluster && cluster->is_ps()) return run_ps_task(*job, *cluster, threads_arg(a));
  auto est = Estimator::create(*job, options);
  // A training task's failure stops the cluster at once, naming it; the
  // evaluator's does not (TensorFlow's: training goes on without it).
  const bool training_task = !cluster || cluster->is_training_task();
  if (!est) {
    if (cluster && training_task) cluster->client().report_error(est.error().message);
    return fail(est.error());
  }
  // The evaluator follows model_dir until the chief's last step: a stop
  // signal ends it with the default action, as before it started.
  if (!training_task) stop_signals_end_the_process();
  Status s = training_task ? (*est)->train(!a.no_eval) : (*est)->evaluate_continuously();
  // A stop signal can reach a training task after it has already stopped:
  // dtrain launch and --remote-cluster pass one to every task, and a task may
  // have stopped first on a peer's word. While the task finishes (its
  // checkpoint is saved, it leaves the cluster), one such late signal is
  // ignored; a second ends the process at once.
  if (training_task) after_training_stop_signals();
  if (!s) {
    // Stopped by a signal is not a failure: every task stopped at the same
    // step and leaves the cluster as at the end (the others must not take
    // its exit for a death).
    if (cluster && training_task && s.error().kind != ErrorKind::kStopped) {
      cluster->client().report_error(s.error().message);
    }
    if (cluster && s.error().kind == ErrorKind::kStopped) cluster->finish();
    return fail(s.error());
  }
  if (cluster) cluster->finish();
  return 0;
}

int run_evaluate(const Args& a) {
  auto est = estimator_for(a, "evaluate");
  if (!est) return fail(est.error());
  auto r = (*est)->evaluate(checkpoint_arg(a));
  if (!r) return fail(r.error());
  for (const auto& [k, v] : r->metrics) std::printf("%s: %.6f\n", k.c_str(), v);
  std::fflush(stdout);
  (*est)->log_eval_report(*r);
  return 0;
}

int run_predict(const Args& a) {
  auto est = estimator_for(a, "predict");
  if (!est) return fail(est.error());
  Status s = (*est)->predict(a.input, a.output, checkpoint_arg(a));
  return s ? 0 : fail(s.error());
}

int run_export(const Args& a) {
  auto est = estimator_for(a, "export");
  if (!est) return fail(est.error());
  Status s = (*est)->export_model(a.format, a.out, checkpoint_arg(a));
  return s ? 0 : fail(s.error());
}

int run_validate(const Args& a) {
  int worst = 0;
  for (const std::string& path : a.jobs) {
    LoadOptions options;
    options.overrides = a.overrides;
    auto job = load_job(path, options);
    std::string graph;
    if (job) {
      // The model is built too: shape mistakes (conv2d on a flat input),
      // data whose shapes the job gives that do not fit it, and layers the
      // job's devices cannot run (conv2d on gpu:0) show here.
      auto sizes = resolve_auto_vocabulary_sizes(*job);  // embedding input_dim: auto
      if (!sizes) job = sizes.error();
      else if (!sizes->empty()) std::fprintf(stderr, "%s\n", sizes->c_str());
      auto program = job ? make_program(*job) : Result<Program>(job.error());
      if (!program) job = program.error();
      else if (Status s = check_declared_data_shapes(*job, *program); !s) job = s.error();
      else if (Status d = check_job_devices(*job, *program); !d) job = d.error();
      else {
        graph = program->model->graph_summary();
        // The buffers of one replica that runs the whole training batch (a
        // replica of a split batch holds its share).
        if (job->data.train) {
          const DataSourceSpec& t = *job->data.train;
          int64_t rows = t.batch_size_per_replica.value_or(t.batch_size);
          if (job->run.micro_batch_rows) rows = std::min(rows, *job->run.micro_batch_rows);
          else if (job->run.accumulation_steps > 1) rows = (rows + job->run.accumulation_steps - 1) / job->run.accumulation_steps;
          graph += program->model->memory_summary(rows);
        }
      }
    }
    if (!job) {
      const int code = fail(job.error());
      worst = std::max(worst, code);
      continue;
    }
    if (a.jobs.size() > 1) std::printf("# %s\n", path.c_str());
    std::fputs(a.graph ? graph.c_str() : job->resolved_yaml.c_str(), stdout);
  }
  return worst;
}

int run_schema(const Args&) {
  std::fputs(job_schema_json().c_str(), stdout);
  return 0;
}

int run_devices(const Args&) {
  std::fputs(format_device_report(discover_devices()).c_str(), stdout);
  return 0;
}

int run_inspect(const Args& a) {
  auto ckpt = load_checkpoint(a.checkpoint);
  if (!ckpt) return fail(ckpt.error());
  std::fputs(describe_checkpoint(*ckpt).c_str(), stdout);
  return 0;
}

int run_cluster(const Args& a) {
  LoadOptions options;
  options.overrides = a.overrides;
  auto job = load_job(a.jobs[0], options);
  if (!job) return fail(job.error());
  auto rc = resolve_cluster(*job, process_env());
  if (!rc) return fail(rc.error());
  std::fputs(format_cluster(*rc).c_str(), stdout);
  return 0;
}

int run_launch_command(const Args& a) {
  LaunchArgs l = a.launch;
  l.job = a.jobs[0];
  l.overrides = a.overrides;
  l.threads = a.threads;
  for (const std::string& o : a.overrides) {
    l.train_args.push_back("--set");
    l.train_args.push_back(o);
  }
  if (!a.model_dir.empty()) l.train_args.insert(l.train_args.end(), {"--model-dir", a.model_dir});
  if (a.log_format != "auto") l.train_args.insert(l.train_args.end(), {"--log-format", a.log_format});
  if (a.no_eval) l.train_args.push_back("--no-eval");
  return run_launch(l);
}

int run_version(const Args&) {
  std::printf("dtrain %s\n", kDtrainVersion);
  return 0;
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"train", "train (and evaluate after checkpoints) the job, resuming from model_dir",
       [](CLI::App& s, Args& a) {
         add_job(s, a);
         add_run_options(s, a);
         s.add_flag("--no-eval", a.no_eval, "do not evaluate during training");
         s.add_option("--remote-cluster", a.remote_cluster,
                      "run the job on dtrain servers instead: [TYPE=]HOST:PORT,... (TYPE chief, worker, ps, evaluator; "
                      "none: worker)");
       },
       run_train},
      {"evaluate", "evaluate a checkpoint (default: the latest) on data.eval",
       [](CLI::App& s, Args& a) {
         add_job(s, a);
         add_run_options(s, a);
         s.add_option("--checkpoint", a.checkpoint, "checkpoint file to evaluate");
       },
       run_evaluate},
      {"predict", "write the model's predictions for an input file",
       [](CLI::App& s, Args& a) {
         add_job(s, a);
         add_run_options(s, a);
         s.add_option("--input", a.input, "examples as a .npy array (N, input shape...), for several model inputs an "
                      ".npz of one array per input, images (a .jpg/.jpeg/.png file or a folder of them) for a job "
                      "whose data.train is an image_folder, or CSV rows (.csv, .csv.gz) for a job whose data.train "
                      "is a csv, read with its columns (the label column may be left out)")->required();
         s.add_option("--output", a.output, "predictions file: .npy, .csv or .jsonl (one JSON object per example: class, class_name, probabilities); P.LAYER.npy per output with model.outputs")->required();
         s.add_option("--checkpoint", a.checkpoint, "checkpoint file to use");
       },
       run_predict},
      {"export", "write the model's inference graph with a checkpoint's values (ONNX)",
       [](CLI::App& s, Args& a) {
         add_job(s, a);
         add_run_options(s, a);
         s.add_option("--format", a.format, "file format: onnx (the default)");
         s.add_option("--out", a.out, "file to write, e.g. model.onnx")->required();
         s.add_option("--checkpoint", a.checkpoint, "checkpoint file to export (default: the latest)");
       },
       run_export},
      {"validate", "check job files and print each resolved job with defaults",
       [](CLI::App& s, Args& a) {
         s.add_option("job", a.jobs, "job files (YAML)")->required();
         s.add_option("--set", a.overrides, "override a job field: path.to.key=value (repeatable)");
         s.add_flag("--graph", a.graph,
                    "print the expanded model graph (every layer's inputs, output shape and parameter count) "
                    "instead of the resolved job");
       },
       run_validate},
      {"schema", "print the JSON Schema of the job file", [](CLI::App&, Args&) {}, run_schema},
      {"devices", "list CPUs, GPUs, memory and CUDA/cuDNN/NCCL versions", [](CLI::App&, Args&) {}, run_devices},
      {"inspect", "list a checkpoint's step, metadata and tensors",
       [](CLI::App& s, Args& a) { s.add_option("checkpoint", a.checkpoint, "checkpoint file")->required(); },
       run_inspect},
      {"runs", "list the training runs (model_dirs) under a directory side by side, or --compare two",
       [](CLI::App& s, Args& a) { declare_runs(s, a.runs); }, [](const Args& a) { return run_runs(a.runs); }},
      {"data", "fetch, convert, inspect and benchmark data (data fetch|convert|inspect|bench --help)",
       [](CLI::App& s, Args& a) { add_data_subcommands(s, a.data_exit); },
       [](const Args& a) { return a.data_exit; }},
      {"cluster", "print the resolved cluster and this task's role",
       [](CLI::App& s, Args& a) { add_job(s, a); }, run_cluster},
      {"launch", "start a local cluster of dtrain train processes on loopback (TF_CONFIG set for each)",
       [](CLI::App& s, Args& a) {
         add_job(s, a);
         add_run_options(s, a);
         s.add_flag("--no-eval", a.no_eval, "do not evaluate during training");
         s.add_option("--workers", a.launch.workers, "worker tasks; worker 0 is the chief unless --chief")
             ->check(CLI::Range(1, 1024));
         s.add_flag("--chief", a.launch.chief, "add a chief task besides the workers");
         s.add_flag("--no-pin", a.launch.no_pin,
                    "do not pin each worker to its own CPUs (threads are still divided between them)");
         s.add_flag("--evaluator", a.launch.evaluator, "add an evaluator task that evaluates each checkpoint");
         s.add_option("--ps", a.launch.ps, "ps tasks (strategy parameter_server)")->check(CLI::Range(0, 1024));
         s.add_option("--port-base", a.launch.port_base, "ports base, base+1, ... (default: free ports)")
             ->check(CLI::Range(1, 65535));
         s.add_option("--max-restarts", a.launch.max_restarts,
                      "when a task is lost, restart every task (they resume from the latest checkpoint) up to N "
                      "times (default 0)")
             ->check(CLI::Range(0, 1000000));
       },
       run_launch_command},
      {"server", "wait for work: run the tasks that dtrain train --remote-cluster sends (one at a time)",
       [](CLI::App& s, Args& a) {
         s.add_option("--port", a.server.port, "port to listen on (default: a free one, printed)")
             ->check(CLI::Range(0, 65535));
         s.add_option("--host", a.server.host, "address to listen on (default 0.0.0.0: every interface)");
         s.add_flag("--once", a.server.once, "exit after the first job");
         s.add_option("--stop-grace-secs", a.server.stop_grace_secs,
                      "after SIGTERM to a task, kill it when it has not ended within this (default 30)")
             ->check(CLI::PositiveNumber);
       },
       [](const Args& a) { return run_task_server(a.server); }},
      {"version", "print dtrain's version", [](CLI::App&, Args&) {}, run_version},
  };
  return table;
}

}  // namespace dtrain::cli
