// make_input(): a loaded source, the index order (skip/take/shard/interleave/
// shuffle/repeat/batch), gathering with scale and map (split over a MapPool
// when num_parallel_calls > 1), and optional prefetching on one thread.
#include "datasets/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <functional>
#include <utility>

#include "datasets/index_order.hpp"
#include "datasets/map_ops.hpp"
#include "datasets/map_pool.hpp"
#include "datasets/prefetch.hpp"
#include "datasets/shard.hpp"
#include "datasets/source.hpp"
#include "datasets/stream_choice.hpp"
#include "datasets/stream_input.hpp"

namespace dtrain {

namespace {

struct PipelineParts {
  OrderSpec order;
  MapPlan map;
  int threads = 1;          // gathering + map
  std::string description;  // Input::describe()
  DType features = DType::f32;  // the batches' features (float32 sources converted to int32 ids when asked)
  std::vector<DType> extra_features;  // the same for each of extra_features
  std::vector<std::string> input_names;  // InputOptions::input_names
  std::string prefix;           // "<where>: data.train: ", for data errors
  // shard: data over several workers: order batches are global batches of
  // which this worker takes rows [n*worker/workers, n*(worker+1)/workers).
  int workers = 1;
  int worker = 0;
  std::vector<int64_t> row_cuts;  // InputOptions::row_cuts
};

// f (B, example...) float32 as int32 ids; a kData error at the first value
// that is not a whole number in int32's range, naming where it is in the data
// (`place` of its row in the batch and flat position in the example).
// `key` names the input: "model.input", or "model.inputs.NAME".
Result<Tensor> to_token_ids(const Tensor& f, const std::function<std::string(int64_t row, int64_t position)>& place,
                            const std::string& prefix, const std::string& key) {
  Tensor out = Tensor::zeros(f.shape(), DType::i32, kHost);
  const float* in = f.data();
  int32_t* to = out.host_data<int32_t>();
  const int64_t per = f.dim(0) == 0 ? 1 : f.numel() / f.dim(0);
  for (int64_t i = 0; i < f.numel(); ++i) {
    const double v = in[i];
    if (!(v == static_cast<double>(static_cast<int64_t>(v)) && v >= -2147483648.0 && v <= 2147483647.0)) {
      return data_error(fmt::format("{}{}: {} is not a token id ({}.dtype is int32, so features must be whole numbers "
                                    "in int32's range)",
                                    prefix, place(i / per, i % per), in[i], key));
    }
    to[i] = static_cast<int32_t>(v);
  }
  return out;
}

class PipelineInput final : public Input {
 public:
  PipelineInput(SourcePtr source, PipelineParts parts, float scale, int64_t prefetch)
      : source_(std::move(source)),
        order_(parts.order),
        repeat_(parts.order.repeat),
        map_(std::move(parts.map)),
        description_(std::move(parts.description)),
        scale_(scale),
        features_(parts.features),
        extra_dtypes_(std::move(parts.extra_features)),
        input_names_(std::move(parts.input_names)),
        prefix_(std::move(parts.prefix)),
        workers_(parts.workers),
        worker_(parts.worker),
        row_cuts_(parts.row_cuts),
        prefetch_(prefetch),
        pool_(parts.threads > 1 ? std::make_unique<MapPool>(parts.threads) : nullptr) {}

  ~PipelineInput() override { prefetcher_.reset(); }  // joins the thread before order_ and pool_ go

  Result<std::optional<Batch>> next() override {
    Result<std::optional<Batch>> r = std::optional<Batch>();
    if (prefetch_ > 0) {
      if (!prefetcher_) prefetcher_ = std::make_unique<Prefetcher>([this] { return produce(); }, prefetch_);
      r = prefetcher_->next();
    } else {
      r = produce();
    }
    if (r.ok() && r->has_value()) ++position_;
    return r;
  }

  int64_t position() const override { return position_; }

  Status restore(int64_t batches_delivered) override {
    const int64_t total = order_num_batches_;
    if (batches_delivered < 0 || (!repeat_ && batches_delivered > total)) {
      return data_error(fmt::format("cannot restore the input of {} to batch {}: it has {} batches", source_->describe(),
                                    batches_delivered, total));
    }
    prefetcher_.reset();  // stops the thread and drops what it prepared
    order_.seek(batches_delivered);
    position_ = batches_delivered;
    return {};
  }

  Shape feature_shape() const override { return map_.feature_shape(); }
  DType feature_dtype() const override { return features_; }
  std::vector<Shape> extra_feature_shapes() const override { return source_->extra_feature_shapes(); }
  std::vector<Shape> extra_label_shapes() const override { return source_->extra_label_shapes(); }
  std::vector<DType> extra_feature_dtypes() const override { return extra_dtypes_; }
  Shape label_shape() const override { return map_.label_shape(); }
  std::string describe() const override { return description_; }
  std::vector<std::string> class_names() const override { return source_->class_names(); }
  std::string locate(int64_t id, const ExampleValue& value) const override {
    if (value.label || value.input > 0 || value.position < 0 || map_.empty()) return source_->locate(id, value);
    // The map made the example anew: its place, and the position in what the map made.
    const std::string at = source_->locate(id, ExampleValue{});
    return at.empty() ? at : fmt::format("{}, position {} after the map", at, value.position);
  }
  void set_profiler(Profiler* profiler) override { profiler_.store(profiler); }

 private:
  // The next batch from order_. Runs on the prefetch thread while prefetcher_
  // exists, else on the caller's.
  Result<std::optional<Batch>> produce() {
    Profiler* profiler = profiler_.load();
    if (profiler) profiler->name_thread("input");  // the prefetch thread; the caller's has its name
    const ProfileScope profile(profiler, "pipeline", "batch");
    std::vector<int64_t> epochs;
    std::vector<int64_t> ids = order_.next_batch(&epochs);
    int64_t offset = 0;
    if (workers_ > 1 && !ids.empty()) {
      // This worker's rows of the global batch. A final global batch smaller
      // than the workers ends the input for every worker alike.
      const auto n = static_cast<int64_t>(ids.size());
      if (n < workers_) return std::optional<Batch>();
      const auto [begin, end] = worker_rows(n, workers_, worker_, row_cuts_);
      offset = begin;
      ids = std::vector<int64_t>(ids.begin() + offset, ids.begin() + end);
      epochs = std::vector<int64_t>(epochs.begin() + offset, epochs.begin() + end);
    }
    if (ids.empty()) return std::optional<Batch>();
    Result<Batch> b = pool_ && ids.size() > 1 ? materialize_parallel(ids, epochs) : materialize(ids, epochs);
    if (!b.ok()) return b.error();
    b->offset = offset;
    return std::optional<Batch>(std::move(b.value()));
  }

  // Gathers and maps the examples `ids` (of epochs `epochs`).
  Result<Batch> materialize(const std::vector<int64_t>& ids, const std::vector<int64_t>& epochs) const {
    Batch b = source_->gather(ids, scale_);
    if (!map_.empty()) {
      if (Status s = map_.apply(b, epochs); !s) return s.error();
    }
    for (size_t k = 0; k <= b.extra_features.size(); ++k) {
      Tensor& t = k == 0 ? b.features : b.extra_features[k - 1];
      if (t.dtype() == (k == 0 ? features_ : extra_dtypes_[k - 1])) continue;
      const auto place = [&](int64_t row, int64_t position) {
        const int64_t id = row < std::ssize(b.ids) ? b.ids[static_cast<size_t>(row)] : row;
        return value_place(*this, id, ExampleValue{.input = k, .position = position});
      };
      auto converted = to_token_ids(t, place, prefix_,
                                    input_names_.empty() ? std::string("model.input") : "model.inputs." + input_names_[k]);
      if (!converted.ok()) return converted.error();
      t = std::move(*converted);
    }
    return b;
  }

  // materialize() over contiguous row ranges, one task each on pool_; every
  // example's values depend only on (id, epoch), so the batch is bit-for-bit
  // the serial one. The first failing range's error (in row order) is returned.
  Result<Batch> materialize_parallel(const std::vector<int64_t>& ids, const std::vector<int64_t>& epochs) {
    const auto b = static_cast<int64_t>(ids.size());
    const int chunks = static_cast<int>(std::min<int64_t>(pool_->threads(), b));
    Shape fshape = map_.feature_shape(), lshape = map_.label_shape();
    fshape.insert(fshape.begin(), b);
    lshape.insert(lshape.begin(), b);
    Batch out{Tensor::zeros(fshape, features_, kHost), Tensor(lshape), ids};
    const auto frow_bytes = static_cast<size_t>(num_elements(map_.feature_shape())) * dtype_size(out.features.dtype());
    const int64_t lrow = num_elements(map_.label_shape());
    const std::vector<Shape> extra_shapes = source_->extra_feature_shapes();
    std::vector<size_t> extra_row_bytes;
    for (size_t k = 0; k < extra_shapes.size(); ++k) {
      Shape shape = extra_shapes[k];
      extra_row_bytes.push_back(static_cast<size_t>(num_elements(shape)) * dtype_size(extra_dtypes_[k]));
      shape.insert(shape.begin(), b);
      out.extra_features.push_back(Tensor::zeros(shape, extra_dtypes_[k], kHost));
    }
    const std::vector<Shape> label_shapes = source_->extra_label_shapes();
    for (Shape shape : label_shapes) {
      shape.insert(shape.begin(), b);
      out.extra_labels.emplace_back(shape);
    }
    if (source_->has_weights()) out.weights = Tensor(Shape{b});
    std::vector<Status> status(static_cast<size_t>(chunks));
    pool_->run(chunks, [&](int c) {
      const int64_t lo = b * c / chunks, hi = b * (c + 1) / chunks;
      try {
        Result<Batch> part = materialize(std::vector<int64_t>(ids.begin() + lo, ids.begin() + hi),
                                         std::vector<int64_t>(epochs.begin() + lo, epochs.begin() + hi));
        if (!part.ok()) {
          status[static_cast<size_t>(c)] = part.error();
          return;
        }
        std::memcpy(static_cast<char*>(out.features.raw()) + static_cast<size_t>(lo) * frow_bytes, part->features.raw(),
                    static_cast<size_t>(hi - lo) * frow_bytes);
        std::copy_n(part->labels.data(), (hi - lo) * lrow, out.labels.data() + lo * lrow);
        for (size_t k = 0; k < extra_row_bytes.size(); ++k) {
          std::memcpy(static_cast<char*>(out.extra_features[k].raw()) + static_cast<size_t>(lo) * extra_row_bytes[k],
                      part->extra_features[k].raw(), static_cast<size_t>(hi - lo) * extra_row_bytes[k]);
        }
        for (size_t k = 0; k < label_shapes.size(); ++k) {
          const int64_t row = num_elements(label_shapes[k]);
          std::copy_n(part->extra_labels[k].data(), (hi - lo) * row, out.extra_labels[k].data() + lo * row);
        }
        if (!out.weights.empty()) std::copy_n(part->weights.data(), hi - lo, out.weights.data() + lo);
      } catch (const ErrorException& e) {
        status[static_cast<size_t>(c)] = e.error;
      } catch (const std::exception& e) {
        status[static_cast<size_t>(c)] = runtime_error(std::string("input pipeline: ") + e.what());
      }
    });
    for (const Status& s : status) {
      if (!s) return s.error();
    }
    return out;
  }

  const SourcePtr source_;
  IndexOrder order_;  // owned by the prefetch thread while prefetcher_ exists
  const int64_t order_num_batches_ = order_.num_batches();
  const bool repeat_;
  const MapPlan map_;
  const std::string description_;
  const float scale_;
  const DType features_;
  const std::vector<DType> extra_dtypes_;  // one per source_->extra_feature_shapes()
  const std::vector<std::string> input_names_;  // InputOptions::input_names
  const std::string prefix_;
  const int workers_, worker_;  // see PipelineParts
  const std::vector<int64_t> row_cuts_;
  const int64_t prefetch_;  // queue capacity; 0 = synchronous
  int64_t position_ = 0;    // batches returned by next(); consumer thread only
  const std::unique_ptr<MapPool> pool_;     // nullptr: one thread; used by whichever thread runs produce()
  std::atomic<Profiler*> profiler_{nullptr};  // run.profile's window (set_profiler)
  std::unique_ptr<Prefetcher> prefetcher_;  // last member: destroyed first
};

std::string message_prefix(const DataSourceSpec& spec, const InputOptions& options) {
  return (spec.where.empty() ? "" : spec.where + ": ") + options.name + ": ";
}

// The checks of the stages' settings that need no data.
Status check_stages(const DataSourceSpec& spec, const InputOptions& options) {
  const std::string prefix = message_prefix(spec, options);
  if (options.global_batch <= 0) {
    return config_error(fmt::format("{}the global batch size must be positive, got {}", prefix, options.global_batch));
  }
  if (options.num_workers < 1 || options.worker_index < 0 || options.worker_index >= options.num_workers) {
    return config_error(fmt::format("{}worker {} of {} does not exist: expected 0 <= worker index < workers", prefix,
                                    options.worker_index, options.num_workers));
  }
  const std::pair<const char*, int64_t> counts[] = {{"skip", spec.skip},
                                                    {"take", spec.take.value_or(0)},
                                                    {"shuffle", spec.shuffle},
                                                    {"prefetch", spec.prefetch},
                                                    {"num_parallel_calls", spec.num_parallel_calls}};
  for (const auto& [option, value] : counts) {
    if (value < 0) return config_error(fmt::format("{}{} must not be negative, got {}", prefix, option, value));
  }
  if (spec.interleave && (spec.interleave->cycle_length < 1 || spec.interleave->block_length < 1)) {
    return config_error(fmt::format("{}interleave: cycle_length and block_length must be at least 1, got {} and {}",
                                    prefix, spec.interleave->cycle_length, spec.interleave->block_length));
  }
  return {};
}

// Input::describe() of a sharded input; "" for one worker.
std::string shard_description(const ShardChoice& c, const InputOptions& options, int64_t count) {
  if (options.num_workers == 1) return "";
  const std::string policy = c.policy == "auto" ? "auto (" + c.used + ")" : c.policy;
  const int64_t w = options.worker_index, n = options.num_workers, b = options.global_batch;
  if (c.used == "data") {
    return fmt::format("{}: shard {}: every worker orders the {} examples alike; worker {} of {} takes rows {}..{} of "
                       "each global batch of {}",
                       options.name, policy, count, w, n, b * w, b * (w + 1) - 1, b * n);
  }
  const std::string base = fmt::format("{}: shard {}: worker {} of {} reads {} of {} examples", options.name, policy, w,
                                       n, c.num_examples, count);
  if (c.used == "off") return base + ", as every worker does (each trains on the same examples)";
  return fmt::format("{}, from {} file{}: the workers see different examples than one process would (shard: data trains "
                     "as one process with the global batch)",
                     base, c.files.size(), c.files.size() == 1 ? "" : "s");
}

}  // namespace

Result<std::unique_ptr<Input>> make_pipeline(SourcePtr source, const DataSourceSpec& spec, const InputOptions& options) {
  if (Status s = check_stages(spec, options); !s) return s.error();
  const std::string prefix = message_prefix(spec, options);
  const int64_t n = source->size();
  const std::string what = fmt::format("{} ({} examples)", source->describe(), n);
  if (spec.skip >= n) return config_error(fmt::format("{}skip {} leaves no examples in {}", prefix, spec.skip, what));
  const int64_t taken = std::min(spec.take.value_or(n), n - spec.skip);
  if (taken == 0) return config_error(fmt::format("{}take 0 leaves no examples in {}", prefix, what));
  auto shard = shard_files(split_by_file(source->file_starts(), spec.skip, taken), spec.shard, options.num_workers,
                           options.worker_index, prefix);
  if (!shard.ok()) return shard.error();
  const int64_t count = shard->num_examples;
  const bool global = shard->used == "data";  // batches over every worker, cut into rows per worker
  const int64_t order_batch = options.ordered_batch(global);
  if (!spec.repeat && spec.drop_remainder && count < order_batch) {
    return config_error(fmt::format("{}drop_remainder leaves no batches: {} examples are fewer than the {}batch size {} ({})",
                                    prefix, count, global ? "global " : "", order_batch, source->describe()));
  }
  PipelineParts parts;
  const uint64_t seed = spec.seed.value_or(options.default_seed);
  auto map = MapPlan::make(spec.map, source->feature_shape(), source->label_shape(), seed, spec.where, options.name,
                           spec.scale);
  if (!map.ok()) return map.error();
  parts.map = std::move(map.value());
  parts.threads = MapPool::resolve_threads(spec.num_parallel_calls);
  parts.features = source->feature_dtype() == DType::f32 ? options.feature_dtype : source->feature_dtype();
  const size_t extra = source->extra_feature_shapes().size();
  if (const size_t outs = source->extra_label_shapes().size(); outs > 0 && !spec.map.empty()) {
    return config_error(fmt::format("{}map: its operations apply to one labels tensor, but the model has {} outputs; "
                                    "prepare the data before writing it",
                                    prefix, outs + 1));
  }
  if (extra > 0 && !spec.map.empty()) {
    return config_error(fmt::format("{}map: its operations apply to one features tensor, but the model has {} inputs; "
                                    "prepare the inputs before writing the data",
                                    prefix, extra + 1));
  }
  parts.extra_features = options.extra_feature_dtypes;
  parts.extra_features.resize(extra, DType::f32);
  parts.input_names = options.input_names;
  parts.prefix = prefix;
  parts.description = shard_description(*shard, options, taken);
  if (const std::string summary = source->summary(); !summary.empty()) {
    parts.description = options.name + ": " + summary + (parts.description.empty() ? "" : "; ") + parts.description;
  }
  if (spec.format == "tfrecord") {
    // Say what reading whole costs (stream: false, or auto with skip or take).
    int64_t floats = num_elements(source->feature_shape()) + num_elements(source->label_shape());
    for (const Shape& s : source->extra_feature_shapes()) floats += num_elements(s);
    parts.description += fmt::format("{}{}: {} examples held in memory as float32 ({:.1f} MiB; streaming reads the "
                                     "files as training goes)",
                                     parts.description.empty() ? "" : "; ", options.name, n,
                                     static_cast<double>(n * floats * 4) / (1 << 20));
  }
  if (spec.num_parallel_calls == 0) {
    parts.description += fmt::format("{}{}: num_parallel_calls auto: {} thread{}", parts.description.empty() ? "" : "; ",
                                     options.name, parts.threads, parts.threads == 1 ? "" : "s");
  }
  OrderSpec& order = parts.order;
  order.begin = spec.skip;
  order.count = count;
  order.shuffle_buffer = spec.shuffle;
  order.seed = seed;
  order.repeat = spec.repeat;
  order.batch = order_batch;
  order.drop_remainder = spec.drop_remainder;
  if (global) {
    parts.workers = options.num_workers;
    parts.worker = options.worker_index;
    parts.row_cuts = options.row_cuts;
  }
  // The input order is begin .. begin+count-1 unless file sharding or interleave change it.
  if (shard->used == "file" || (spec.interleave && shard->files.size() > 1)) {
    std::vector<int64_t> base;
    if (spec.interleave) {
      base = interleave_files(shard->files, spec.interleave->cycle_length, spec.interleave->block_length);
    } else {
      for (const auto& file : shard->files) base.insert(base.end(), file.begin(), file.end());
    }
    order.base = std::make_shared<const std::vector<int64_t>>(std::move(base));
  }
  return std::unique_ptr<Input>(
      std::make_unique<PipelineInput>(std::move(source), std::move(parts), static_cast<float>(spec.scale), spec.prefetch));
}

Result<std::unique_ptr<Input>> make_input(const DataSourceSpec& spec, const InputOptions& options) {
  // Spec mistakes are reported before reading any data.
  if (Status s = check_stages(spec, options); !s) return s.error();
  if (resolves_to_stream(spec, options)) return make_stream_input(spec, options);
  if (spec.cache == "memory") {
    return config_error(fmt::format("{}cache: memory applies to streamed input, and this one is read whole ({}); a "
                                    "source read whole is held in memory already",
                                    message_prefix(spec, options), stream_reason(spec, options)));
  }
  auto source = load_source(spec, SourceContext{options.base_dir, message_prefix(spec, options), options.vocabulary,
                                                options.input_names, options.output_names, options.label_names,
                                                options.tabular, false, options.tokens});
  if (!source) return source.error();
  return make_pipeline(std::move(source.value()), spec, options);
}

std::string value_place(const Input& input, int64_t id, const ExampleValue& value) {
  std::string at = input.locate(id, value);
  if (!at.empty()) return at;
  at = fmt::format("example {} of the source", id);
  if (!value.label && value.position >= 0) at += fmt::format(", position {}", value.position);
  return at;
}

}  // namespace dtrain
