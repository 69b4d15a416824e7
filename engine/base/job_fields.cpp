// The field tables of the job's sections (engine/base/fields.hpp): each
// option's name, member, bounds and documentation, written once. The
// loader reads the YAML through them, the resolved job is written from them
// and the schema's sections (and dtrain-job(5)) are made from them.
#include "engine/base/job_spec.hpp"

namespace dtrain {

std::span<const Field> schedule_fields() {
  static const Field kFields[] = {
      field<&ScheduleSpec::type>("type", "How the learning rate changes with the global step.")
          .shaped(R"({"enum": ["constant", "exponential_decay", "piecewise_constant", "cosine_decay"]})"),
      field<&ScheduleSpec::decay_steps>("decay_steps", "exponential_decay, cosine_decay: steps of one decay period.")
          .min(1),
      field<&ScheduleSpec::decay_rate>("decay_rate", "exponential_decay: factor per decay period.").above(0),
      field<&ScheduleSpec::staircase>("staircase", "exponential_decay: decay in discrete steps."),
      field<&ScheduleSpec::boundaries>("boundaries",
                                       "piecewise_constant: increasing global steps where the rate changes.")
          .shaped(R"({"type": "array", "items": {"type": "integer", "minimum": 0}})"),
      field<&ScheduleSpec::values>("values", "piecewise_constant: the learning rates, one more than boundaries."),
      field<&ScheduleSpec::alpha>("alpha", "cosine_decay: final learning rate as a fraction of learning_rate.")
          .min(0)
          .max(1),
      field<&ScheduleSpec::warmup_steps>("warmup_steps", "Steps of linear warmup from 0 before the schedule starts.")
          .min(0),
  };
  return kFields;
}

std::span<const Field> optimizer_fields() {
  static const Field kFields[] = {
      field<&OptimizerSpec::type>("type",
                                  "The update rule: sgd (with optional momentum), adam, adamw, rmsprop or adagrad.")
          .shaped(R"({"enum": ["sgd", "adam", "adamw", "rmsprop", "adagrad"]})"),
      field<&OptimizerSpec::learning_rate>("learning_rate", "Base learning rate (the schedule scales it).").above(0),
      field_struct<&OptimizerSpec::schedule>("schedule", "Learning-rate schedule (optionally after a linear warmup).",
                                             schedule_fields)
          .shaped(R"({"allOf": [{"if": {"properties": {"type": {"const": "piecewise_constant"}}, "required": ["type"]},
                                 "then": {"required": ["boundaries", "values"]}}]})"),
      field<&OptimizerSpec::momentum>("momentum", "sgd, rmsprop: momentum.").min(0).below(1),
      field<&OptimizerSpec::nesterov>("nesterov", "sgd: Nesterov momentum."),
      field<&OptimizerSpec::beta1>("beta1", "adam, adamw: decay of the first-moment estimate.").min(0).below(1),
      field<&OptimizerSpec::beta2>("beta2", "adam, adamw: decay of the second-moment estimate.").min(0).below(1),
      field<&OptimizerSpec::epsilon>("epsilon",
                                     "adam, adamw, rmsprop, adagrad: added to denominators for numerical stability.")
          .above(0),
      field<&OptimizerSpec::weight_decay>("weight_decay", "adamw: decoupled weight decay.").min(0),
      field<&OptimizerSpec::rho>("rho", "rmsprop: decay of the squared-gradient average.").min(0).below(1),
      field<&OptimizerSpec::initial_accumulator_value>("initial_accumulator_value",
                                                       "adagrad: starting value of the accumulator.")
          .min(0),
      field<&OptimizerSpec::clip_by_global_norm>(
          "clip_by_global_norm", "Clip gradients to this global norm before the update; null means no clipping.")
          .above(0),
  };
  return kFields;
}

std::span<const Field> early_stopping_fields() {
  static const Field kFields[] = {
      field<&EarlyStoppingSpec::metric>("metric", "loss, or one of model.metrics.").shaped(R"({"type": "string"})"),
      field<&EarlyStoppingSpec::mode>("mode", "min: lower is better (loss); max: higher is better (accuracy).")
          .shaped(R"({"type": "string", "enum": ["min", "max"]})"),
      field<&EarlyStoppingSpec::patience_evals>("patience_evals",
                                                "Evaluations in a row without improvement that stop training.")
          .min(1),
      field<&EarlyStoppingSpec::min_delta>("min_delta", "The least change that counts as an improvement.").min(0),
  };
  return kFields;
}

std::span<const Field> eval_fields() {
  static const Field kFields[] = {
      field<&EvalSpec::steps>("steps", "Batches per evaluation; null means the whole eval input.").min(1),
      field<&EvalSpec::throttle_secs>("throttle_secs",
                                      "Evaluate again no sooner than this many seconds after the last evaluation.")
          .min(0),
      field<&EvalSpec::start_delay_secs>("start_delay_secs", "Seconds to wait before the first evaluation.").min(0),
      field_optional_struct<&EvalSpec::early_stopping>(
          "early_stopping",
          "Stop training when an evaluated metric stops improving (Estimator's stop_if_no_decrease_hook / "
          "stop_if_no_increase_hook, counted in evaluations): after each evaluation, the metric improves when it is "
          "below the best so far minus min_delta (mode min) or above the best plus min_delta (mode max); once "
          "patience_evals evaluations in a row have not improved, training stops at that step, saves a checkpoint, "
          "logs the reason, writes the scalar early_stopping/stopped to the eval summaries and "
          "model_dir/eval/early_stopping.json, and exits 0. In a cluster the evaluator task decides and every "
          "training task stops at the same step: the first after the chief sees the decision (training runs ahead of "
          "the evaluator, so that step can be later than the evaluated checkpoint's). The history is the evaluations "
          "in model_dir/eval/metrics-<step>.json, so a resumed run continues it (and a run that has stopped stays "
          "stopped unless patience_evals or min_delta change). Needs data.eval; dtrain train --no-eval does not stop "
          "early. null never stops early.",
          early_stopping_fields),
  };
  return kFields;
}

std::span<const Field> precision_fields() {
  static const Field kFields[] = {
      located<&PrecisionSpec::compute_where>(
          field<&PrecisionSpec::compute>(
              "compute",
              "Compute type of dense and conv2d: float32; bfloat16 (CPU: oneDNN on processors with AVX512_BF16 or AMX, "
              "else emulated and slow); float16 (GPUs only, with dynamic loss scaling: oneDNN has no float16 matmul or "
              "convolution on the CPU). A step whose gradients are not finite is skipped by every replica and worker "
              "in bfloat16 and float16.")
              .shaped(R"({"enum": ["float32", "bfloat16", "float16"]})")),
      field<&PrecisionSpec::matmul>("matmul",
                                    "float32 matmuls and convolutions on GPUs: highest (true float32) or tf32 "
                                    "(TensorFloat-32 tensor cores). No effect on the CPU.")
          .shaped(R"({"enum": ["highest", "tf32"]})"),
  };
  return kFields;
}

namespace {

// A list of "host:port" addresses of one task type (cluster.*), and of a type that has at most one task.
constexpr const char* kAddresses =
    R"({"type": "array", "items": {"type": "string", "pattern": "^[^:\\s]+:[0-9]+$", "examples": ["worker0.example.com:2222"]}})";
constexpr const char* kOneAddress =
    R"({"type": "array", "items": {"type": "string", "pattern": "^[^:\\s]+:[0-9]+$", "examples": ["worker0.example.com:2222"]}, "maxItems": 1})";

}  // namespace

namespace {

std::span<const Field> partition_fields() {
  static const Field kFields[] = {
      field<&StrategySpec::partition_max_shards>("max_shards",
                                                 "At most this many shards per variable (never more than the ps tasks "
                                                 "or the variable's rows); 1 keeps every variable whole.")
          .min(1),
      field<&StrategySpec::partition_min_shard_mb>(
          "min_shard_mb",
          "A shard holds at least this many MiB: a variable of B MiB gets at most floor(B / min_shard_mb) shards.")
          .above(0),
  };
  return kFields;
}

std::span<const Field> elastic_fields() {
  static const Field kFields[] = {
      field<&StrategySpec::elastic_min_workers>(
          "min_workers",
          "collective, and parameter_server in mode: sync: when a worker process is lost (killed, crashed, its node "
          "gone), the others go on without it from the state held in memory (collective: each worker's; "
          "parameter_server: the ps tasks', kept one update back), the global batch split over the survivors, while "
          "at least this many training tasks (the chief and the workers) remain; below, the cluster stops with exit "
          "code 4. A lost worker that starts again with its identity joins at a step boundary. 0: not elastic (a "
          "lost worker stops the cluster). collective: the chief too (the next worker hosts the coordination "
          "service and takes over the chief's duties); parameter_server: a lost ps task pauses training until it "
          "starts again, then every ps is reloaded from the latest checkpoint. In mode: async workers come and go "
          "without it.")
          .min(0),
      field<&StrategySpec::elastic_max_workers>(
          "max_workers",
          "collective with min_workers: a worker that is not in the running cluster's spec (its TF_CONFIG lists the "
          "same tasks at the same addresses plus itself, e.g. a TFJob scaled up) joins the running training at a "
          "step boundary while the group has fewer than this many workers; it receives the state from rank 0 and "
          "the global batch is split over one more. 0: only the cluster spec's tasks.")
          .min(0),
  };
  return kFields;
}

}  // namespace

std::span<const Field> strategy_fields() {
  static const Field kFields[] = {
      field<&StrategySpec::type>(
          "type",
          "Distribution strategy: one_device; towers (one copy of the variables, each device computes its shard of the "
          "batch, gradients summed and applied once, as replicate_model_fn); mirrored (a copy on every device, "
          "gradients all-reduced, every copy updated identically); collective (MultiWorkerMirrored: mirrored across "
          "the devices of every worker process of the cluster, gradients all-reduced between workers; alone it is "
          "mirrored). parameter_server (variables and optimizer slots sharded over the cluster's ps tasks; workers "
          "pull them, compute with towers semantics and push gradients; see mode and partition).")
          .shaped(R"({"enum": ["one_device", "towers", "mirrored", "collective", "parameter_server"]})"),
      custom<&StrategySpec::devices>(
          "devices",
          "Devices of this task, one replica each: \"auto\" (one CPU device in this version), or a list of virtual CPU "
          "devices such as [cpu:0, cpu:1, cpu:2, cpu:3] (one worker thread each, sharing the host's cores), or of "
          "debug devices debug:0, debug:1, ... (the CPU kernels over memory that is inaccessible outside their own "
          "kernels, with guard pages: a missed host<->device transfer crashes at once; for testing, several times "
          "slower). gpu:N devices: one_device only so far, float32, for the layers, losses and optimizers the cuda "
          "backend runs (dense, conv2d, max_pool2d and avg_pool2d except a SAME padding with more after the input than "
          "before, activation except gelu, dropout, flatten/reshape; sparse_softmax_cross_entropy; sgd, adam, adamw); "
          "anything else is refused when the job starts, naming the layer.",
          "devices")
          .shaped(
              R"({"oneOf": [{"enum": ["auto"]}, {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": "^(cpu|gpu|debug):[0-9]+$", "examples": ["cpu:0", "gpu:1"]}}]})"),
      field<&StrategySpec::num_gpus>(
          "num_gpus",
          "Use GPUs gpu:0 .. gpu:N-1 (0 = CPU only) instead of listing devices; null means devices decides.")
          .min(0),
      field<&StrategySpec::loss_reduction>(
          "loss_reduction",
          "How the loss of one step combines its examples, for every strategy alike: mean (sum of per-example losses "
          "divided by the global batch) or sum (their sum). A batch split over replicas weighs every example exactly "
          "as one_device does.")
          .shaped(R"({"enum": ["mean", "sum"]})"),
      field<&StrategySpec::communication>(
          "communication",
          "collective: the all-reduce between workers: ring (Gloo's ring all-reduce over TCP, for CPU workers), nccl "
          "(NCCL between GPUs; not built yet), auto (nccl when every device is a GPU, else ring).")
          .shaped(R"({"enum": ["auto", "ring", "nccl"]})"),
      field<&StrategySpec::bucket_mb>(
          "bucket_mb",
          "mirrored and collective: gradients are all-reduced in buckets of about this many MiB, each started as soon "
          "as backward has produced it; the first bucket (the last layers, which backward finishes first) closes at 1 "
          "MiB when this is larger, as in PyTorch DDP, so that its all-reduce overlaps the rest of backward.")
          .above(0),
      field<&StrategySpec::mode>(
          "mode",
          "parameter_server: async applies each worker's gradients on the ps as they arrive (TensorFlow's default; the "
          "global step counts pushes); sync applies one update per step once every worker's gradients for that step "
          "arrived, summed in worker order (SyncReplicasOptimizer), equal to one_device with the global batch.")
          .shaped(R"({"enum": ["async", "sync"]})"),
      field_group<StrategySpec>("partition",
                                "parameter_server: splitting large variables along dimension 0 over several ps tasks "
                                "(TensorFlow's min_max_variable_partitioner).",
                                partition_fields),
      field_group<StrategySpec>("elastic",
                                "collective: training that survives the loss of worker processes (see min_workers).",
                                elastic_fields),
  };
  return kFields;
}

namespace {

std::span<const Field> cluster_task_fields() {
  static const Field kFields[] = {
      field<&ClusterTaskSpec::type>("type", "Task type.")
          .shaped(R"({"enum": ["chief", "worker", "ps", "evaluator"]})")
          .need(),
      field<&ClusterTaskSpec::index>("index", "Index of the task within its type.").min(0),
  };
  return kFields;
}

}  // namespace

std::span<const Field> cluster_fields() {
  static const Field kFields[] = {
      field<&ClusterConfig::chief>("chief", "Address of the chief task (\"host:port\"); at most one.")
          .shaped(kOneAddress),
      field<&ClusterConfig::worker>("worker", "Addresses of the worker tasks (\"host:port\").").shaped(kAddresses),
      field<&ClusterConfig::ps>("ps", "Addresses of the parameter-server tasks (\"host:port\").").shaped(kAddresses),
      field<&ClusterConfig::evaluator>("evaluator", "Address of the evaluator task (\"host:port\"); at most one.")
          .shaped(kOneAddress),
      field_optional_struct<&ClusterConfig::task>(
          "task", "Which task of the cluster this process is; null means not given here.", cluster_task_fields),
      field<&ClusterConfig::cluster_timeout_secs>(
          "timeout_secs",
          "Seconds to wait for the other tasks (rendezvous, barriers, each all-reduce) and without a heartbeat from "
          "one before every task stops, naming the missing one, with exit code 4.")
          .above(0),
  };
  return kFields;
}

namespace {

std::span<const Field> warm_start_fields() {
  static const Field kFields[] = {
      located<&WarmStartSpec::from_where>(
          custom<&WarmStartSpec::from>("from",
                                       "A checkpoint file (model.ckpt-N.safetensors), or a model_dir whose latest "
                                       "checkpoint is used; relative to the current directory, as model_dir.",
                                       "cwd_path")
              .shaped(R"({"type": "string", "minLength": 1})")
              .need()),
      located<&WarmStartSpec::vars_where>(
          field<&WarmStartSpec::vars>(
              "vars",
              "ECMAScript regular expression over the new model's variable names (e.g. conv2d.*); a variable is copied "
              "when the whole name matches (TF's vars_to_warm_start). Selecting no variable is an error.")
              .shaped(R"({"type": "string", "minLength": 1})")),
      custom_whole<WarmStartSpec>("rename",
                                  "New-model variable name -> the name of the checkpoint variable to copy into it "
                                  "(TF's var_name_to_prev_var_name); only for variables that vars selects.",
                                  "warm_start_rename")
          .shaped(R"({"type": "object", "additionalProperties": {"type": "string", "minLength": 1}})"),
      field<&WarmStartSpec::slots>("slots",
                                   "Also copy the optimizer slots of the copied variables (when the checkpoint has "
                                   "them for this optimizer); false starts them fresh."),
  };
  return kFields;
}

}  // namespace

namespace {

std::span<const Field> profile_fields() {
  static const Field kFields[] = {
      field<&ProfileSpec::start_step>("start_step",
                                      "The global step the window starts at (the step being computed: 0 is the first).")
          .min(0),
      field<&ProfileSpec::steps>("steps", "Steps in the window.").min(1),
  };
  return kFields;
}

}  // namespace

std::span<const Field> run_fields() {
  static const Field kFields[] = {
      field<&RunSpec::model_dir>("model_dir",
                                 "Directory of checkpoints and summaries (relative to the current directory).")
          .shaped(R"({"type": "string", "minLength": 1})"),
      field<&RunSpec::max_steps>("max_steps", "Train until the global step reaches this.").min(1),
      field<&RunSpec::save_checkpoints_steps>("save_checkpoints_steps",
                                              "Save a checkpoint every this many steps; the default 500 applies only "
                                              "when save_checkpoints_secs is not given.")
          .min(1)
          .documented_default("500"),
      field<&RunSpec::save_checkpoints_secs>(
          "save_checkpoints_secs",
          "Save a checkpoint every this many seconds instead of by steps; null means by steps.")
          .above(0),
      field<&RunSpec::keep_checkpoint_max>("keep_checkpoint_max", "Checkpoints kept; older ones are deleted.").min(1),
      field<&RunSpec::keep_checkpoint_every_n_hours>(
          "keep_checkpoint_every_n_hours",
          "Besides the keep_checkpoint_max newest, keep one checkpoint per this many hours of wall-clock forever "
          "(tf.train.Saver's keep_checkpoint_every_n_hours): a checkpoint leaving the newest set is kept when it was "
          "saved at least this long after the first checkpoint of model_dir, or after the last one kept this way. Kept "
          "ones are marked \"preserved\" in model_dir/checkpoint, so a resumed run keeps them too. Fractions are "
          "allowed (0.5 is every 30 minutes). null keeps only the newest.")
          .above(0),
      field<&RunSpec::save_summary_steps>(
          "save_summary_steps",
          "Write train summaries (loss, metrics, learning rate) into model_dir every this many steps; 0 means never. "
          "While the chief writes summaries (this or histogram_steps above 0), each start of training also writes the "
          "resolved job as text (tag job, TensorBoard's Text tab), the job's hyperparameters for the HParams tab and "
          "the sample images of summary_images; the end of training writes the session's status (success or "
          "failure; none when a stop signal ends it, to be resumed).")
          .min(0),
      field<&RunSpec::histogram_steps>(
          "histogram_steps",
          "Every this many steps the chief writes a histogram of every trainable variable (tag weights/<variable>) "
          "and of the gradient the optimizer applied to it (gradients/<variable>: summed over the global batch, the "
          "loss scale divided out, after optimizer.clip_by_global_norm; under parameter_server only weights: the ps "
          "tasks apply the gradients) for TensorBoard's Histograms and Distributions tabs, with TensorFlow's "
          "default buckets. 0: off. Each write bins every value of every variable and gradient and adds two "
          "events per variable: for sample_configs/mnist_cnn.yaml (421,642 parameters in 8 variables) about 6 ms "
          "and 33 KB of event file, on 2 CPU cores where its training step takes 10 ms; histogram_steps: 100 adds "
          "under 1%. Steps that do not write cost nothing.")
          .min(0),
      field<&RunSpec::summary_images>(
          "summary_images",
          "When training starts, the chief writes this many examples of the first batch as images (tags "
          "input/image/0, input/image/1, ...; TensorBoard's Images tab) if the model's input is an image: "
          "(height, width, channels) with 1, 3 or 4 channels, or (height, width). They show the features as the "
          "model gets them, after data.train's scale and map: values within [0, 1] are multiplied by 255, others "
          "stretched from each image's minimum to its maximum. At most the batch; 0: none. Written only while "
          "summaries are (save_summary_steps or histogram_steps above 0).")
          .min(0),
      field<&RunSpec::log_step_count_steps>("log_step_count_steps",
                                            "Log loss and steps/sec every this many steps; 0 means never.")
          .min(0),
      field<&RunSpec::seed>("seed", "Seed of initializers, dropout and shuffling.").min(0),
      field<&RunSpec::deterministic>(
          "deterministic",
          "Make a resumed run continue the uninterrupted run exactly (fixed reduction order). On GPUs, convolutions "
          "take the algorithms cuDNN marks deterministic (no atomics) where cuDNN offers one; the log names each "
          "convolution's algorithm at the end of training."),
      custom<&RunSpec::slurm_requeue>(
          "slurm_requeue",
          "Under a Slurm batch job, when training stops on SIGUSR1 (sbatch --signal=USR1@SECONDS, the warning before "
          "the time limit) and the checkpoint is saved, the chief requeues the job (scontrol requeue $SLURM_JOB_ID), "
          "and the requeued job resumes from that checkpoint. auto: only when scontrol show job says it is a batch job "
          "that may be requeued (sbatch --requeue, or the cluster's JobRequeue=1); true: always try under Slurm; "
          "false: never. SIGTERM and SIGINT (scancel, the time limit) never requeue.",
          "auto_bool")
          .shaped(R"({"oneOf": [{"enum": ["auto"]}, {"type": "boolean"}]})"),
      custom<&RunSpec::threads>(
          "threads",
          "Compute threads of each process (OpenMP, oneDNN); num_parallel_calls auto takes the same count, at most 8. "
          "auto means OMP_NUM_THREADS when it is set, else the thread budget: the CPUs of the process's affinity mask, "
          "capped by its cgroup CPU quota, less one for each of them that other processes keep busy at start-up "
          "(measured for 100 ms; not under run.deterministic). The command line's --threads wins over this. A run.deterministic resume "
          "uses the count that wrote the checkpoint.",
          "auto_int")
          .shaped(R"({"oneOf": [{"enum": ["auto"]}, {"type": "integer", "minimum": 1}]})"),
      placed<&WarmStartSpec::where>(
          field_optional_struct<&RunSpec::warm_start>(
              "warm_start",
              "Initialise variables from another run's checkpoint and train from step 0 (Estimator's "
              "WarmStartSettings). Applies only when model_dir has no checkpoint of its own (a restart resumes from "
              "its own checkpoints). The start lists what was copied and every variable left to its initializer, and "
              "saves the warm-started state as model.ckpt-0.",
              warm_start_fields)
              .hidden_at_default()),
      field_optional_struct<&RunSpec::profile>(
          "profile",
          "Profile a window of training steps: writes model_dir/profile/trace-<start>-<end>.json (Chrome Trace Event "
          "Format, for ui.perfetto.dev or chrome://tracing) with input wait, each layer's forward and backward per "
          "replica, loss, all-reduce buckets, optimizer, summaries, checkpoint and eval, and prints a per-phase time "
          "table when the window ends.",
          profile_fields)
          .hidden_at_default(),
      field<&RunSpec::accumulation_steps>(
          "accumulation_steps",
          "Gradient accumulation: each replica's shard of a training batch runs as this many micro-batches of "
          "consecutive rows, one after the other, and their gradients are summed before the one optimizer update, so "
          "only one micro-batch's activations are in memory at a time. data.train.batch_size stays the batch of one "
          "update (of each worker, in a cluster): an update with K micro-batches equals one step on the whole batch "
          "(within float32 summation order) under every strategy, dropout included (it is keyed by the example's row "
          "in the batch); the loss is the mean (or sum) over the whole batch, the loss scale and the skip of a "
          "non-finite update act once per update, steps, logs and summaries count updates. The batch must be divisible "
          "by accumulation_steps times the replicas of each process (a final short batch of the input is split as "
          "evenly as it goes). batch_norm computes its statistics per micro-batch, so a model with it trains "
          "differently than with one full batch (as in every framework).")
          .min(1),
      field<&RunSpec::micro_batch_rows>(
          "micro_batch_rows",
          "One summation order for every strategy: each replica's shard of a training batch runs as micro-batches of "
          "this many consecutive rows (the last may be shorter), one after the other, as run.accumulation_steps does, "
          "and their gradients are added in a fixed pairwise tree; replicas, collective's workers (an all-to-all and "
          "all-gather in place of the ring) and a sync parameter server's workers are added in the same tree. When "
          "every replica's shard (and, in a cluster, every worker's batch) is a power-of-two number of micro-batches, "
          "one_device on the whole global batch and towers, mirrored, collective and sync parameter_server on any "
          "split of it add the same floats in the same grouping: their variables are bit-identical, step after step, "
          "with shuffle and dropout, on any CPU. Costs: one micro-batch's activations at a time (more, smaller kernel "
          "calls). batch_norm computes its statistics per micro-batch; sync batch_norm and accumulation_steps > 1 "
          "cannot be combined with it. null: off (each replica's shard in one pass, workers summed by the ring).")
          .min(1),
  };
  return kFields;
}

std::span<const Field> export_fields() {
  static const Field kFields[] = {
      field<&ExportSpec::format>("format", "File format of the exported model.").shaped(R"({"enum": ["onnx"]})"),
      field<&ExportSpec::every>("every",
                                "When to export: eval (after each evaluation during training, which needs data.eval) "
                                "or final (once, after the last step).")
          .shaped(R"({"enum": ["eval", "final"]})"),
      field<&ExportSpec::keep>("keep", "Exports kept in model_dir/export; the oldest steps beyond this are deleted.")
          .min(1),
      field<&ExportSpec::best_by>("best_by",
                                  "Export only when this evaluation metric (loss, or one of model.metrics) is better "
                                  "than at every export before (BestExporter; lower is better for loss, mean_loss and "
                                  "mean_absolute_error, higher for the others); the best value is kept in "
                                  "model_dir/export/best.json. Needs data.eval. null: every export (LatestExporter)."),
  };
  return kFields;
}

std::span<const Field> job_section_fields() {
  static const Field kFields[] = {
      field_struct<&JobSpec::optimizer>("optimizer", "How the variables are updated from their gradients.",
                                        optimizer_fields),
      field_struct<&JobSpec::strategy>(
          "strategy", "Where the computation runs. Changing it never changes what is computed.", strategy_fields),
      field_struct<&JobSpec::cluster>("cluster",
                                      "The cluster this task belongs to (TF_CONFIG layout). When absent, TF_CONFIG, "
                                      "then Slurm variables, else a single local task.",
                                      cluster_fields),
      field_struct<&JobSpec::data>(
          "data", "The inputs. dtrain train needs data.train; dtrain evaluate needs data.eval.", data_fields),
      field_struct<&JobSpec::precision>(
          "precision",
          "Mixed precision. Variables, gradients after reduction, optimizer slots and checkpoints stay float32 "
          "(master weights); dense and conv2d compute in `compute` with float32 accumulation; softmax, losses, "
          "normalisation and reductions stay float32.",
          precision_fields),
      field_struct<&JobSpec::run>("run", "The run: where it writes, how long it trains, how often it saves.",
                                  run_fields),
      field_struct<&JobSpec::eval>("eval", "Evaluation during dtrain train.", eval_fields),
      placed<&ExportSpec::where>(
          field_optional_struct<&JobSpec::export_spec>(
              "export",
              "Exports the inference graph during dtrain train, like Estimator's LatestExporter and BestExporter: into "
              "model_dir/export/<step>/model.onnx (what dtrain export writes). Absent: no export during training.",
              export_fields)
              .hidden_at_default()),
  };
  return kFields;
}

}  // namespace dtrain
