// Estimator set-up, checkpoint restore/save and the shape checks between the
// model and its data.
#include "estimator/estimator.hpp"
#include "estimator/model_outputs.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cassert>
#include <filesystem>
#include <fstream>

#include "datasets/example_decode.hpp"
#include "datasets/map_ops.hpp"
#include "datasets/map_pool.hpp"
#include "datasets/source.hpp"
#include "datasets/stream_choice.hpp"
#include "engine/cpu_isa.hpp"
#include "engine/kernels/bf16_path.hpp"
#include "engine/losses/label_check.hpp"
#include "engine/version.hpp"

namespace dtrain {

namespace fs = std::filesystem;

Status check_example_features(const std::string& prefix, const Shape& shape, DType dtype, const Model& model,
                              size_t input) {
  const ModelInput& in = model.inputs()[input];
  const bool named = model.num_inputs() > 1;
  const std::string key = named ? "model.inputs." + in.name : "model.input";
  const std::string what = named ? fmt::format("examples' \"{}\"", in.name) : "examples";
  if (shape != in.shape) {
    return config_error(fmt::format("{}{} have shape {} but {}.shape is {}", prefix, what, shape_str(shape), key,
                                    shape_str(in.shape)));
  }
  if (dtype == in.dtype) return Status::Ok();
  if (dtype == DType::i32) {
    return config_error(fmt::format("{}{} are int32 token ids but {}.dtype is {}; declare the input as ids ({}: {{shape: "
                                    "{}, dtype: int32}}) and read it with an embedding",
                                    prefix, what, key, dtype_name(in.dtype), key,
                                    shape_str(shape)));
  }
  return config_error(fmt::format("{}{} are {} features but {}.dtype is {}; an int32 input reads token "
                                  "ids (format text or synthetic_sequence, or whole numbers in npy, npz, csv or "
                                  "tfrecord files)",
                                  prefix, what, dtype_name(dtype), key, dtype_name(in.dtype)));
}

Status check_input_features(const std::string& prefix, const Input& input, const Model& model) {
  if (Status s = check_example_features(prefix, input.feature_shape(), input.feature_dtype(), model); !s) return s;
  const std::vector<Shape> shapes = input.extra_feature_shapes();
  const std::vector<DType> dtypes = input.extra_feature_dtypes();
  assert(shapes.size() + 1 == model.num_inputs() && dtypes.size() == shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (Status s = check_example_features(prefix, shapes[k], dtypes[k], model, k + 1); !s) return s;
  }
  return Status::Ok();
}

void set_model_inputs(InputOptions& options, const Model& model) {
  options.feature_dtype = model.input_dtype();
  options.input_names.clear();
  options.extra_feature_dtypes.clear();
  if (model.num_inputs() < 2) return;
  for (const ModelInput& in : model.inputs()) options.input_names.push_back(in.name);
  for (size_t k = 1; k < model.num_inputs(); ++k) options.extra_feature_dtypes.push_back(model.inputs()[k].dtype);
}

Status check_declared_data_shapes(const JobSpec& job, const Program& program) {
  const std::pair<const char*, const std::optional<DataSourceSpec>*> roles[] = {{"train", &job.data.train},
                                                                               {"eval", &job.data.eval}};
  for (const auto& [role, spec] : roles) {
    if (!*spec) continue;
    const std::string prefix = ((*spec)->where.empty() ? "" : (*spec)->where + ": ") + "data." + role + ": ";
    if (Status s = check_source_weights(**spec, prefix); !s) return s;
    if (program.outputs.size() > 1) {
      InputOptions names;
      set_model_outputs(names, program);
      if (Status s = check_source_outputs(**spec, names.output_names, prefix); !s) return s;
    }
    if (program.model->num_inputs() > 1) {
      InputOptions names;
      set_model_inputs(names, *program.model);
      if (Status s = check_source_inputs(**spec, names.input_names, prefix); !s) return s;
      if ((*spec)->format == "tfrecord") {
        if (auto layout = make_example_layout(**spec, prefix, names.input_names); !layout) return layout.error();
      }
      continue;  // the formats that name their inputs take their shapes from their files
    }
    InputOptions model_inputs;
    set_model_inputs(model_inputs, *program.model);
    for (const FeatureSpec& f : (*spec)->features) {
      if ((*spec)->format != "tfrecord" || std::none_of(f.shape.begin(), f.shape.end(), [](int64_t d) { return d < 0; })) {
        continue;
      }
      // Streamed, the map must fix the size (the files are read when training starts).
      if (resolves_to_stream(**spec, model_inputs)) {
        auto layout = make_example_layout(**spec, prefix);
        if (!layout) return layout.error();
        auto map = MapPlan::make((*spec)->map, layout->feature_shape, layout->label_shape, 0, (*spec)->where,
                                 std::string("data.") + role, (*spec)->scale);
        if (!map) return map.error();
        continue;
      }
      return config_error(fmt::format("{}: data.{}: features.{}: images of varying size (null height and width) are "
                                      "read streamed only (a source read whole holds every image at one size), and "
                                      "this source is read whole ({}); give the images' one size",
                                      f.where, role, f.name, stream_reason(**spec, model_inputs)));
    }
    auto shapes = declared_shapes(**spec);
    if (!shapes) continue;
    // The model sees the examples after the map (a resize changes their shape).
    auto map = MapPlan::make((*spec)->map, shapes->features, shapes->labels, 0, (*spec)->where,
                             std::string("data.") + role, (*spec)->scale);
    if (!map) return map.error();
    shapes->features = map->feature_shape();
    shapes->labels = map->label_shape();
    if (Status s = check_example_features(prefix, shapes->features, shapes->features_dtype, *program.model); !s) {
      return s;
    }
    if (Status s = program.outputs[0].loss->check_shapes(program.model->output_shape(), shapes->labels); !s) {
      return config_error(prefix + s.error().message);
    }
  }
  return Status::Ok();
}

Estimator::Estimator(const JobSpec& job, const EstimatorOptions& options)
    : job_(job), options_(options), log_(options.log_format, options.log) {}

Estimator::~Estimator() = default;

Result<std::unique_ptr<Estimator>> Estimator::create(const JobSpec& job, const EstimatorOptions& options) {
  std::unique_ptr<Estimator> e(new Estimator(job, options));
  if (Status s = e->setup(); !s) return s.error();
  return e;
}

void Estimator::choose_compute_threads() {
  const AppliedThreads applied = apply_compute_threads(options_.threads, job_.run.threads, !job_.run.deterministic);
  threads_ = applied.choice;
  // The input pipelines' gathering threads (num_parallel_calls; auto shares the count above).
  std::vector<std::pair<const char*, int>> inputs;
  if (job_.data.train) inputs.emplace_back("data.train", MapPool::resolve_threads(job_.data.train->num_parallel_calls));
  if (job_.data.eval) inputs.emplace_back("data.eval", MapPool::resolve_threads(job_.data.eval->num_parallel_calls));
  std::string input;
  if (inputs.size() == 1 || (inputs.size() == 2 && inputs[0].second == inputs[1].second)) {
    input = fmt::format("; input {}", inputs[0].second);
  } else if (inputs.size() == 2) {
    input = fmt::format("; input {} ({}), {} ({})", inputs[0].second, inputs[0].first, inputs[1].second,
                        inputs[1].first);
  }
  // Logged when the command starts its work (log_threads()), not before an
  // early error such as a missing checkpoint.
  threads_line_ = applied.line + input;
}

void Estimator::log_threads() {
  if (threads_line_.empty()) return;
  log_.info(threads_line_);
  threads_line_.clear();
  log_.info(fmt::format("cpu: kernels use {}; oneDNN {}", describe_cpu_isa(), onednn_isa_name()));
  if (job_.precision.compute == "bfloat16") log_.info(kernels::describe_bf16_path());
}

Status Estimator::setup() {
  choose_compute_threads();
  if (Status s = resolve_auto_vocabulary_sizes(); !s) return s;  // embedding input_dim: auto
  auto program = make_program(job_);
  if (!program) return program.error();
  program_ = std::move(*program);
  if (Status s = check_declared_data_shapes(job_, program_); !s) return s;
  auto strategy = make_strategy(job_, program_, options_.cluster);
  if (!strategy) return strategy.error();
  strategy_ = std::move(*strategy);
  return strategy_->create_variables();
}

Result<BatchPlan> Estimator::batch_plan(const DataSourceSpec& d, const char* role) const {
  const int replicas = strategy_->num_replicas();
  const BatchPlan plan = plan_batch(d.batch_size, d.batch_size_per_replica, replicas, strategy_->num_workers());
  const int64_t global = plan.per_process;
  if (global < replicas) {
    return config_error(fmt::format("{}: data.{}.batch_size: the global batch {} is smaller than the {} replicas of "
                                    "strategy {}; every replica needs at least one example",
                                    d.where.empty() ? job_.source_path : d.where, role, global, replicas,
                                    strategy_->name()));
  }
  return plan;
}

Result<std::unique_ptr<Input>> Estimator::open_input(const DataSourceSpec& spec, const char* role, int64_t batch,
                                                     VocabularyPtr vocabulary, bool split_over_workers,
                                                     std::string* stream_line) {
  const std::string name = std::string("data.") + role;
  InputOptions input_options{job_.base_dir, batch, job_.run.seed, name};
  set_model_inputs(input_options, *program_.model);
  set_model_outputs(input_options, program_);
  if (split_over_workers) {
    input_options.num_workers = strategy_->num_workers();
    input_options.worker_index = strategy_->worker_index();
    input_options.rows_over_workers = elastic_global_rows_;
    input_options.row_cuts = elastic_row_cuts_;
  }
  input_options.vocabulary = std::move(vocabulary);
  if (spec.format == "csv") input_options.tabular = tabular_;
  if (Status s = attach_token_vocabulary(spec, input_options); !s) return s.error();
  // Streamed or read whole, and why: once per source (evaluation opens its input each time).
  if (stream_line != nullptr) {
    *stream_line = stream_choice_line(spec, input_options);
  } else if (std::find(stream_told_.begin(), stream_told_.end(), name) == stream_told_.end()) {
    stream_told_.push_back(name);
    // Logged where it tells something: where streaming is a choice
    // (tfrecord), where data read whole may not fit (its warning), or where
    // text_folder data is read from disk as training goes.
    const std::string line = stream_choice_line(spec, input_options);
    if (!line.empty() && (spec.format == "tfrecord" || line.find("more than half") != std::string::npos ||
                          line.find("as training goes") != std::string::npos)) {
      log_.info(line);
    }
  }
  auto input = make_input(spec, input_options);
  if (!input) return input.error();
  if (Status s = check_input_features(spec.where + ": " + name + ": ", **input, *program_.model); !s) {
    if (spec.format == "csv" && input_options.tabular) {  // say where the width comes from
      return config_error(s.error().message + "; the columns give " + input_options.tabular->describe());
    }
    return s.error();
  }
  if (Status s = check_label_shapes(**input, program_, job_.source_path); !s) return s.error();
  return input;
}

Status Estimator::check_batch(const Batch& b, const DataSourceSpec& spec, const char* role, const Input& input) const {
  // A bad value is named where the user can find it: file and line and
  // column (csv), file and record (tfrecord), array and row (npz), else its
  // example number in the source.
  auto id_of = [&](int64_t row) { return row < std::ssize(b.ids) ? b.ids[static_cast<size_t>(row)] : row; };
  auto value = [&](size_t k, int64_t row, int64_t position) {
    return value_place(input, id_of(row), ExampleValue{.input = k, .position = position});
  };
  if (Status s = program_.model->check_input(b.features, b.extra_features, value); !s) {
    return data_error(fmt::format("{}: {}: {}", spec.where, role, s.error().message));
  }
  auto place = [&](size_t output, int64_t row) {
    return value_place(input, id_of(row), ExampleValue{.label = true, .output = output});
  };
  if (Status s = check_batch_labels(b, program_, place); !s) {
    return data_error(fmt::format("{}: {}: {}", spec.where, role, s.error().message));
  }
  return Status::Ok();
}

Result<CheckpointData> Estimator::read_compatible_checkpoint(const std::string& path) const {
  auto ckpt = load_checkpoint(path);
  if (!ckpt) return ckpt.error();
  std::vector<std::string> problems;
  for (const VariableSpec& v : program_.model->variables()) {
    const Tensor* t = ckpt->find(v.name);
    if (t == nullptr) {
      problems.push_back(fmt::format("  {} {}: not in the checkpoint", v.name, shape_str(v.shape)));
    } else if (t->shape() != v.shape) {
      problems.push_back(fmt::format("  {}: the model has shape {}, the checkpoint {}", v.name, shape_str(v.shape),
                                     shape_str(t->shape())));
    }
  }
  for (const auto& [name, t] : ckpt->tensors) {
    bool known = false;
    for (const VariableSpec& v : program_.model->variables()) {
      known = known || name == v.name || name.rfind(v.name + "/", 0) == 0;
    }
    if (!known) problems.push_back(fmt::format("  {} {}: in the checkpoint but not in the model", name, shape_str(t.shape())));
  }
  if (!problems.empty()) {
    return config_error(fmt::format("{}: the checkpoint does not match the model of {} ({} mismatching variables):\n{}\n"
                                    "use a new run.model_dir (or --model-dir) for a changed model",
                                    path, job_.source_path, problems.size(), fmt::join(problems, "\n")));
  }
  return ckpt;
}

Status Estimator::restore_from(const CheckpointData& ckpt) {
  if (Status s = strategy_->restore(ckpt); !s) return s;
  global_step_ = ckpt.global_step;
  // A float32 checkpoint resumes under mixed precision with a fresh scale;
  // a mixed one under float32 ignores its scale.
  if (auto scale = ckpt.metadata.find("loss_scale"); scale != ckpt.metadata.end() && program_.mixed()) {
    auto good = ckpt.metadata.find("loss_scale_good_steps");
    program_.loss_scale.restore(std::strtod(scale->second.c_str(), nullptr),
                                good == ckpt.metadata.end() ? 0 : std::strtoll(good->second.c_str(), nullptr, 10));
  }
  auto it = ckpt.metadata.find("input_position");
  restored_input_position_ = it == ckpt.metadata.end() ? 0 : std::stoll(it->second);
  auto state = ckpt.metadata.find("input_state");
  restored_input_state_ = state == ckpt.metadata.end() ? "" : state->second;
  // Float sums split over threads change with the thread count, so a
  // deterministic run continues with the count that wrote the checkpoint.
  auto threads = ckpt.metadata.find("compute_threads");
  // This wins over --threads and run.threads: the run asked to reproduce.
  if (job_.run.deterministic && threads != ckpt.metadata.end()) {
    const int saved = std::stoi(threads->second);
    if (saved > 0 && saved != threads_.threads) {
      log_.info(fmt::format("run.deterministic: using {} compute threads, as the run that wrote the checkpoint "
                            "(instead of {} from {})",
                            saved, threads_.threads,
                            threads_.source == "budget" ? "the thread budget" : threads_.source));
      set_process_threads(saved);
      threads_ = ThreadChoice{saved, "the checkpoint (run.deterministic)", ""};
    }
  }
  return Status::Ok();
}

Result<std::string> Estimator::checkpoint_or_latest(const std::optional<std::string>& checkpoint) const {
  if (checkpoint) return *checkpoint;
  if (auto latest = latest_checkpoint(job_.run.model_dir)) return *latest;
  return config_error(fmt::format("no checkpoint in model_dir {}: train first, or pass --checkpoint PATH",
                                  job_.run.model_dir));
}

Result<std::string> Estimator::restore_for_inference(const std::optional<std::string>& checkpoint) {
  auto found = checkpoint_or_latest(checkpoint);
  if (!found) return found.error();
  const std::string path = *found;
  auto ckpt = read_compatible_checkpoint(path);
  if (!ckpt) return ckpt.error();
  if (Status s = restore_from(*ckpt); !s) return s.error();
  return path;
}

Status Estimator::save(int64_t input_position, const std::string& input_state) {
  CheckpointData data;
  data.global_step = global_step_;
  data.metadata = {
      {"global_step", std::to_string(global_step_)},
      {"input_position", std::to_string(input_position)},
      {"model_hash", job_.model_hash},
      {"rng", fmt::format("philox4x32-10 seed={} counter=(step, example)", job_.run.seed)},
      {"strategy", strategy_->name()},
      {"optimizer", job_.optimizer.type},
      {"dtrain_version", kDtrainVersion},
      {"compute_threads", std::to_string(omp_get_max_threads())},
      {"precision_compute", job_.precision.compute},
  };
  if (!input_state.empty()) data.metadata["input_state"] = input_state;
  if (program_.mixed()) {
    // The loss scale (1 for bfloat16, dynamic for float16) resumes where it was.
    data.metadata["loss_scale"] = fmt::format("{}", program_.loss_scale.scale());
    data.metadata["loss_scale_good_steps"] = std::to_string(program_.loss_scale.good_steps());
  }
  data.tensors = strategy_->logical_state();
  // Elastic training: the workers changed before this step's state was
  // whole (a sync parameter server's snapshot waits for every push); the
  // group redoes the step and saves it then.
  if (strategy_->membership_lost()) return Status::Ok();
  auto path = save_checkpoint(job_.run.model_dir, data,
                              KeepPolicy{job_.run.keep_checkpoint_max, job_.run.keep_checkpoint_every_n_hours, {}});
  if (!path) return path.error();
  last_checkpoint_ = *path;
  return run_record_.saved(global_step_);
}

}  // namespace dtrain
