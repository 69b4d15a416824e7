// The one table of strategies and device resolution.
#include <fmt/format.h>

#include <functional>
#include <string>

#include <set>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/layers/batch_norm.hpp"
#include "engine/ops/support.hpp"
#include "strategies/cluster_runtime.hpp"
#include "strategies/collective.hpp"
#include "strategies/mirrored.hpp"
#include "strategies/parameter_server.hpp"
#include "strategies/one_device.hpp"
#include "strategies/strategy.hpp"
#include "strategies/towers.hpp"

namespace dtrain {
namespace {

using Factory =
    std::function<Result<std::unique_ptr<Strategy>>(const JobSpec&, Program&, std::vector<Device>, ClusterRuntime*)>;

Result<std::unique_ptr<Strategy>> make_one_device(const JobSpec& job, Program& program, std::vector<Device> devices,
                                                  ClusterRuntime*) {
  if (devices.size() != 1) {
    return config_error(fmt::format("{}: strategy.devices: one_device runs on exactly one device; got {} ({})",
                                    job.source_path, devices.size(), device_list(devices)));
  }
  return std::unique_ptr<Strategy>(std::make_unique<OneDeviceStrategy>(program, devices[0]));
}

Result<std::unique_ptr<Strategy>> make_towers(const JobSpec&, Program& program, std::vector<Device> devices,
                                              ClusterRuntime*) {
  return std::unique_ptr<Strategy>(std::make_unique<TowersStrategy>(program, std::move(devices)));
}

Result<std::unique_ptr<Strategy>> make_mirrored(const JobSpec& job, Program& program, std::vector<Device> devices,
                                                ClusterRuntime*) {
  const double bucket_bytes = job.strategy.bucket_mb * 1024.0 * 1024.0;
  return std::unique_ptr<Strategy>(std::make_unique<MirroredStrategy>(program, std::move(devices), bucket_bytes));
}

// communication: ring is Gloo over TCP; nccl needs every device to be a GPU
// and NCCL communication (not built yet); auto picks nccl when every device
// is a GPU, else ring.
Result<std::unique_ptr<Strategy>> make_collective(const JobSpec& job, Program& program, std::vector<Device> devices,
                                                  ClusterRuntime* cluster) {
  if (job.strategy.communication == "nccl") {
    return config_error(fmt::format(
        "{}: strategy.communication: nccl all-reduces between GPUs, and this dtrain has no NCCL communication "
        "yet (devices: {}); use communication: ring (Gloo over TCP) or auto",
        job.source_path, device_list(devices)));
  }
  const double bucket_bytes = job.strategy.bucket_mb * 1024.0 * 1024.0;
  std::unique_ptr<GlooComm> comm;
  // A task that was lost and started again joins the running group later
  // (CollectiveStrategy::regroup), not the first one.
  if (cluster && cluster->is_training_task() && cluster->size() > 1 && !cluster->rejoining()) {
    auto c = GlooComm::create(cluster->client(), cluster->rank(), cluster->size(), cluster->bind_host(),
                              cluster->timeout_secs(), "collective/gloo/");
    if (!c) return c.error();
    comm = std::move(*c);
  }
  return std::unique_ptr<Strategy>(
      std::make_unique<CollectiveStrategy>(program, std::move(devices), bucket_bytes, cluster, std::move(comm)));
}

// parameter_server needs a cluster with ps tasks; this process is a worker
// (or the chief) and connects to every ps task.
Result<std::unique_ptr<Strategy>> make_parameter_server(const JobSpec& job, Program& program,
                                                        std::vector<Device> devices, ClusterRuntime* cluster) {
  // The evaluator only restores checkpoints and runs forward: the variables
  // live in this process (towers over its devices), not on the ps tasks.
  if (cluster && !cluster->is_training_task() && !cluster->is_ps()) {
    return std::unique_ptr<Strategy>(std::make_unique<TowersStrategy>(program, std::move(devices)));
  }
  const ClusterSpec* spec = cluster ? &cluster->resolved().cluster : nullptr;
  if (!spec || spec->count("ps") == 0 || !cluster->is_training_task()) {
    return config_error(fmt::format(
        "{}: strategy.type: parameter_server needs ps tasks in the cluster (TF_CONFIG's cluster.ps, the job's "
        "cluster.ps, or dtrain launch --ps N); this process is {}",
        job.source_path, cluster ? cluster->resolved().task.type + " " + std::to_string(cluster->resolved().task.index)
                                 : std::string("a single local process")));
  }
  const auto& addresses = spec->tasks.at("ps");
  std::vector<std::unique_ptr<PsClient>> clients;
  for (size_t i = 0; i < addresses.size(); ++i) {
    auto c = PsClient::connect(addresses[i], fmt::format("ps {} ({})", i, addresses[i]), cluster->timeout_secs());
    if (!c) return c.error();
    clients.push_back(std::move(*c));
  }
  PsPlacement placement =
      place_variables(program.model->variables(), static_cast<int>(addresses.size()),
                      job.strategy.partition_max_shards, job.strategy.partition_min_shard_mb * 1024.0 * 1024.0);
  return std::unique_ptr<Strategy>(std::make_unique<ParameterServerStrategy>(
      program, std::move(devices), *cluster, std::move(placement), std::move(clients), job.strategy.mode == "sync",
      job.run.model_dir));
}

// The job's devices: "auto" is one CPU device; num_gpus N asks for
// gpu:0..N-1 (several GPUs need NCCL, not built yet); a list names virtual
// CPU devices cpu:K, debug devices debug:K (CPU kernels over guarded memory,
// for tests) or GPUs gpu:K (one_device only so far).
Result<std::vector<DeviceSpec>> resolve_devices(const JobSpec& job) {
  const StrategySpec& st = job.strategy;
  if (st.num_gpus && *st.num_gpus > 0) {
    return config_error(fmt::format(
        "{}: strategy.num_gpus: {} GPUs requested, but only one_device runs on a GPU in this dtrain so far; "
        "use strategy: {{type: one_device, devices: [gpu:0]}}, or devices: [cpu:0, ...]",
        job.source_path, *st.num_gpus));
  }
  if (st.devices.empty()) return std::vector<DeviceSpec>{{Device{DeviceKind::cpu, 0}, ""}};
  std::set<std::string> seen;
  for (size_t i = 0; i < st.devices.size(); ++i) {
    const DeviceSpec& d = st.devices[i];
    const std::string place = fmt::format("{}: strategy.devices[{}]", d.where.empty() ? job.source_path : d.where, i);
    if (d.device.kind == DeviceKind::cuda && st.type != "one_device") {
      return config_error(fmt::format(
          "{}: {} with strategy.type {}: only one_device runs on a GPU in this dtrain so far "
          "(several devices need NCCL); use one_device with devices: [{}], or cpu:N devices",
          place, d.name(), st.type, d.name()));
    }
    if (!seen.insert(d.name()).second) return config_error(fmt::format("{}: {} is listed twice", place, d.name()));
  }
  return st.devices;
}

// The resolved devices without the places they were read from.
std::vector<Device> devices_of(const std::vector<DeviceSpec>& specs) {
  std::vector<Device> out;
  for (const DeviceSpec& d : specs) out.push_back(d.device);
  return out;
}

struct StrategyRow {
  const char* name;
  Factory factory;  // null: defined by the job schema, not built into this dtrain yet
  // What the strategy needs of a cluster (StrategyTraits).
  bool spans_processes;
  bool needs_ps_tasks;
  bool has_async_mode;  // strategy.mode: async lets workers other than the chief come and go
  bool elastic;         // regroups over the workers that remain (strategy.elastic; not in async mode)
};

//  name                factory                spans  ps     async  elastic
const StrategyRow kStrategies[] = {
    {"one_device",       make_one_device,       false, false, false, false},
    {"towers",           make_towers,           false, false, false, false},
    {"mirrored",         make_mirrored,         false, false, false, false},
    {"collective",       make_collective,       true,  false, false, true},
    {"parameter_server", make_parameter_server, true,  true,  true,  true},
};

}  // namespace

std::vector<std::pair<int64_t, int64_t>> split_batch(int64_t global, int replicas) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const int64_t base = global / replicas, extra = global % replicas;
  int64_t begin = 0;
  for (int r = 0; r < replicas; ++r) {
    const int64_t n = base + (r < extra ? 1 : 0);
    out.emplace_back(begin, begin + n);
    begin += n;
  }
  return out;
}

// Mixed precision the job's devices can run: float16 needs GPUs, and every
// layer must have a backend for each device in the compute type.
static Status check_precision(const JobSpec& job, const Program& program, const std::vector<Device>& devices) {
  const std::string where = job.precision.compute_where.empty() ? job.source_path : job.precision.compute_where;
  for (const Device& device : devices) {
    const ops::Context ctx = program.context_on(device);
    if (ctx.compute == DType::f16 && ctx.device.kind != DeviceKind::cuda) {
      return config_error(fmt::format(
          "{}: precision.compute: float16 needs GPU devices, and strategy.devices has {}: oneDNN has no float16 "
          "matmul or convolution on the CPU; use bfloat16 on the CPU",
          where, device.str()));
    }
    if (Status s = program.model->check_support(ctx); !s) return s;
    // The losses, the optimizer and the reductions the step runs.
    std::vector<std::pair<std::string, std::string>> step_ops;  // (op, what asks for it)
    for (const ProgramOutput& o : program.outputs) step_ops.emplace_back(o.loss->name(), "model.loss");
    step_ops.emplace_back(program.optimizer->name(), "optimizer.type");
    if (program.optimizer_spec.clip_by_global_norm) step_ops.emplace_back("reduce", "optimizer.clip_by_global_norm");
    for (const auto& [op, field] : step_ops) {
      if (!ops::supports(op, ctx)) {
        return config_error(fmt::format("{}: {}: {} cannot run on {} in {}: {}", job.source_path, field, op,
                                        device.str(), dtype_name(ctx.compute), ops::why_unsupported(op, ctx)));
      }
    }
  }
  return Status::Ok();
}

// GPU devices need the CUDA module and the GPU itself; checked after the
// model (whose errors do not depend on the machine).
static Status check_gpus(const JobSpec& job, const std::vector<DeviceSpec>& devices) {
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceSpec& d = devices[i];
    if (d.device.kind != DeviceKind::cuda) continue;
    if (Status s = gpu::check_device(d.device); !s) {
      return config_error(fmt::format("{}: strategy.devices[{}]: {} cannot be used: {}",
                                      d.where.empty() ? job.source_path : d.where, i, d.name(), s.error().message));
    }
  }
  return Status::Ok();
}

// batch_norm with sync: true sums its statistics over every replica of the
// step: in process always; across the training processes of collective and
// sync parameter_server through a communicator of its own. Async
// parameter_server workers step independently: there is no global batch.
Status connect_synchronised_statistics(const JobSpec& job, Strategy& strategy, ClusterRuntime* cluster) {
  const LayerSpec* synced = nullptr;
  for (const LayerSpec& l : job.model.layers) {
    if (is_synchronised_batch_norm(l) && synced == nullptr) synced = &l;
  }
  if (synced == nullptr || cluster == nullptr || !cluster->is_training_task() || cluster->size() < 2) return Status::Ok();
  if (job.strategy.type == "parameter_server" && job.strategy.mode != "sync") {
    return config_error(fmt::format("{}: {} (batch_norm) has sync: true, which needs a global batch, but "
                                    "parameter_server runs in mode async (each worker steps on its own); use mode: sync "
                                    "or sync: false",
                                    synced->where, synced->name));
  }
  auto* replicated = dynamic_cast<ReplicatedStrategy*>(&strategy);
  if (replicated == nullptr) return Status::Ok();
  auto comm = GlooComm::create(cluster->client(), cluster->rank(), cluster->size(), cluster->bind_host(),
                               cluster->timeout_secs(), "syncbn/gloo/");
  if (!comm) return comm.error();
  replicated->sum_statistics_over(std::move(*comm), cluster);
  return Status::Ok();
}

Status check_job_devices(const JobSpec& job, const Program& program) {
  auto devices = resolve_devices(job);
  if (!devices) return devices.error();
  return check_precision(job, program, devices_of(*devices));
}

StrategyTraits strategy_traits(const StrategySpec& spec) {
  for (const StrategyRow& row : kStrategies) {
    if (spec.type == row.name) {
      const bool async = row.has_async_mode && spec.mode == "async";
      return {row.spans_processes, row.needs_ps_tasks, async, row.elastic && !async};
    }
  }
  return {};
}

// strategy.elastic: collective (every worker holds all the state the
// survivors need) or sync parameter_server (the ps tasks hold it), and
// nothing else that spans the workers.
Status check_elastic(const JobSpec& job, int training_tasks) {
  const int64_t min_workers = job.strategy.elastic_min_workers;
  if (min_workers <= 0) return Status::Ok();
  const StrategyTraits traits = strategy_traits(job.strategy);
  if (traits.workers_may_die) {
    return config_error(fmt::format("{}: strategy.elastic.min_workers: in mode: {} the workers come and go without "
                                    "strategy.elastic (training goes on while the chief lives, and a worker that "
                                    "starts again trains on); remove elastic, or use mode: sync",
                                    job.source_path, job.strategy.mode));
  }
  if (!traits.elastic) {
    return config_error(fmt::format("{}: strategy.elastic.min_workers: elastic training needs strategy.type: "
                                    "collective (each worker holds every variable, so the survivors go on alone) "
                                    "or parameter_server in mode: sync (the ps tasks hold them), not {}; remove "
                                    "elastic or use one of those",
                                    job.source_path, job.strategy.type));
  }
  for (const LayerSpec& l : job.model.layers) {
    if (is_synchronised_batch_norm(l)) {
      return config_error(fmt::format("{}: {} (batch_norm) has sync: true, whose statistics are summed over the "
                                      "workers, and strategy.elastic does not regroup them yet; use sync: false or "
                                      "remove strategy.elastic",
                                      l.where, l.name));
    }
  }
  if (const int64_t max_workers = job.strategy.elastic_max_workers; max_workers > 0) {
    if (traits.needs_ps_tasks) {
      return config_error(fmt::format("{}: strategy.elastic.max_workers: new workers join collective training only "
                                      "(parameter_server keeps its workers to the cluster spec); remove max_workers",
                                      job.source_path));
    }
    if (max_workers < min_workers || (training_tasks >= 0 && max_workers < training_tasks)) {
      return config_error(fmt::format("{}: strategy.elastic.max_workers: {} is less than {}; it counts every training "
                                      "task (the chief and the workers), the cluster spec's included",
                                      job.source_path, max_workers,
                                      max_workers < min_workers ? fmt::format("min_workers {}", min_workers)
                                                                : fmt::format("the cluster's {} training tasks",
                                                                              training_tasks)));
    }
  }
  if (training_tasks >= 0 && training_tasks < min_workers) {
    return config_error(fmt::format("{}: strategy.elastic.min_workers: {} is more than the cluster's {} training "
                                    "task(s) (the chief and the workers)",
                                    job.source_path, min_workers, training_tasks));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Strategy>> make_strategy(const JobSpec& job, Program& program, ClusterRuntime* cluster) {
  if (Status s = check_elastic(job, cluster != nullptr && cluster->is_training_task() ? cluster->size() : -1); !s) {
    return s.error();
  }
  auto devices = resolve_devices(job);
  if (!devices) return devices.error();
  if (Status s = check_precision(job, program, devices_of(*devices)); !s) return s.error();
  if (Status s = check_gpus(job, *devices); !s) return s.error();
  for (const StrategyRow& row : kStrategies) {
    if (job.strategy.type != row.name) continue;
    if (!row.factory) {
      return config_error(fmt::format("{}: strategy.type: \"{}\" is not available in this version of dtrain; "
                                      "available: one_device, towers, mirrored, collective, parameter_server",
                                      job.source_path, row.name));
    }
    auto strategy = row.factory(job, program, devices_of(*devices), cluster);
    if (!strategy) return strategy;
    if (Status s = connect_synchronised_statistics(job, **strategy, cluster); !s) return s.error();
    return strategy;
  }
  return config_error(fmt::format("{}: strategy.type: unknown strategy \"{}\"", job.source_path, job.strategy.type));
}

}  // namespace dtrain
