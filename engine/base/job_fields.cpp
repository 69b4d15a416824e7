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
      field<&OptimizerSpec::type>("type", "The update rule: sgd (with optional momentum), adam, adamw, rmsprop or adagrad.")
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
      field<&EarlyStoppingSpec::metric>("metric", "loss, or one of model.metrics.")
          .shaped(R"({"type": "string"})"),
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
              "convolution on the CPU). A step whose gradients are not finite is skipped by every replica and worker in "
              "bfloat16 and float16.")
              .shaped(R"({"enum": ["float32", "bfloat16", "float16"]})")),
      field<&PrecisionSpec::matmul>("matmul",
                                    "float32 matmuls and convolutions on GPUs: highest (true float32) or tf32 "
                                    "(TensorFloat-32 tensor cores). No effect on the CPU.")
          .shaped(R"({"enum": ["highest", "tf32"]})"),
  };
  return kFields;
}

std::span<const Field> job_section_fields() {
  static const Field kFields[] = {
      field_struct<&JobSpec::optimizer>("optimizer", "How the variables are updated from their gradients.",
                                        optimizer_fields),
      field_struct<&JobSpec::precision>(
          "precision",
          "Mixed precision. Variables, gradients after reduction, optimizer slots and checkpoints stay float32 "
          "(master weights); dense and conv2d compute in `compute` with float32 accumulation; softmax, losses, "
          "normalisation and reductions stay float32.",
          precision_fields),
      field_struct<&JobSpec::eval>("eval", "Evaluation during dtrain train.", eval_fields),
  };
  return kFields;
}

}  // namespace dtrain
