// StreamInput: RecordStream -> global batch of records (read a batch ahead on
// a reader thread) -> this worker's rows -> decode on a MapPool -> scale ->
// map, on the prefetch thread; each batch
// carries the stream's position after it, which state() reports once the
// batch is delivered.
#include "datasets/stream_input.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <future>
#include <tuple>
#include <utility>

#include "datasets/example_decode.hpp"
#include "datasets/file_glob.hpp"
#include "datasets/jpeg_rows.hpp"
#include "datasets/map_ops.hpp"
#include "datasets/map_pool.hpp"
#include "datasets/prefetch.hpp"
#include "datasets/read_ahead.hpp"
#include "datasets/shard.hpp"
#include "datasets/record_stream.hpp"
#include "datasets/source.hpp"
#include "datasets/stream_choice.hpp"
#include "engine/thread_errors.hpp"

namespace dtrain {

namespace {

constexpr double kMiB = 1 << 20;

struct StreamParts {
  StreamSpec stream;
  ExampleLayout layout;
  MapPlan map;
  int threads = 1;
  int64_t order_batch = 1;  // records per batch of the stream (global with shard: data)
  int workers = 1, worker = 0;  // rows of each batch: shard: data's cut
  std::vector<int64_t> row_cuts;  // InputOptions::row_cuts
  bool drop_remainder = false;
  float scale = 1.0f;
  int64_t prefetch = 0;
  std::string description;
};

class StreamInput final : public Input {
 public:
  explicit StreamInput(StreamParts parts)
      : parts_(std::move(parts)),
        stream_(std::make_unique<RecordStream>(parts_.stream)),
        state_(stream_->snapshot()),
        pool_(parts_.threads > 1 ? std::make_unique<MapPool>(parts_.threads) : nullptr),
        jpeg_(JpegRows::make(parts_.layout, parts_.map, parts_.scale)),
        scratch_(static_cast<size_t>(std::max(1, parts_.threads))) {}

  ~StreamInput() override {  // joins the threads before stream_ and pool_ go
    prefetcher_.reset();
    stop_reading();
  }

  Result<std::optional<Batch>> next() override {
    Result<std::optional<Batch>> r = std::optional<Batch>();
    if (parts_.prefetch > 0) {
      if (!prefetcher_) prefetcher_ = std::make_unique<Prefetcher>([this] { return produce(); }, parts_.prefetch);
      r = prefetcher_->next();
    } else {
      r = produce();
    }
    if (r.ok() && r->has_value()) {
      ++position_;
      state_ = (*r)->state;
    }
    return r;
  }

  int64_t position() const override { return position_; }
  std::string state() const override { return state_->text(); }

  Status restore(int64_t batches_delivered) override {
    prefetcher_.reset();
    stop_reading();
    stream_ = std::make_unique<RecordStream>(parts_.stream);
    for (int64_t b = 0; b < batches_delivered; ++b) {
      std::vector<StreamRecord> records;
      if (Status s = read_batch(records); !s) return s;
      if (records.empty()) {
        return data_error(fmt::format("cannot restore the input to batch {}: it has {} batches", batches_delivered, b));
      }
    }
    position_ = batches_delivered;
    state_ = stream_->snapshot();
    return {};
  }

  Status restore_state(int64_t batches_delivered, const std::string& state) override {
    if (state.empty()) return restore(batches_delivered);
    prefetcher_.reset();
    stop_reading();
    stream_ = std::make_unique<RecordStream>(parts_.stream);
    if (Status s = stream_->restore(state); !s) return s;
    position_ = batches_delivered;
    state_ = stream_->snapshot();
    return {};
  }

  Shape feature_shape() const override { return parts_.map.feature_shape(); }
  Shape label_shape() const override { return parts_.map.label_shape(); }
  std::string describe() const override { return parts_.description; }
  std::string locate(int64_t id, const ExampleValue& value) const override {  // ids are stream_record_id()s
    const auto file = static_cast<size_t>(id >> 40);
    if (file >= parts_.stream.files.size()) return "";
    const std::string record = fmt::format("{}: record {}", parts_.stream.files[file], id & ((int64_t{1} << 40) - 1));
    if (value.label) return record + feature_of_value(parts_.layout, value);
    if (value.position < 0) return record;
    // The map made the example anew: a position in what it made.
    if (!parts_.map.empty()) return fmt::format("{}, position {} after the map", record, value.position);
    return record + feature_of_value(parts_.layout, value);
  }

 private:
  // One batch of the stream's records and the stream's position after it.
  struct RecordBatch {
    std::vector<StreamRecord> records;
    std::shared_ptr<const InputState> state;
    Status status;
  };
  RecordBatch read_records() {
    RecordBatch b;
    b.status = read_batch(b.records);
    if (b.status) b.state = stream_->snapshot();
    return b;
  }
  // Waits for a read in flight and drops it: before stream_ is replaced.
  void stop_reading() {
    if (reading_.valid()) reading_.wait();
    reading_ = {};
  }

  // The records of the next batch of the stream; empty at the end.
  Status read_batch(std::vector<StreamRecord>& records) {
    records.clear();
    while (static_cast<int64_t>(records.size()) < parts_.order_batch) {
      StreamRecord r;
      auto got = stream_->next(r);
      if (!got) return got.error();
      if (!*got) break;
      records.push_back(std::move(r));
    }
    for (const std::string& m : stream_->take_skipped()) std::fprintf(stderr, "warning: skipped %s\n", m.c_str());
    if (parts_.drop_remainder && static_cast<int64_t>(records.size()) < parts_.order_batch) records.clear();
    return {};
  }

  // A features tensor of `shape` for the next batch: one of the pool's that
  // no batch uses any more (every row is written, so its old contents do not
  // matter), else a new one, pooled while the pool holds fewer than the
  // batches in flight (prefetch + 2). Reusing saves the kernel's zeroing of
  // fresh pages, about an eighth of an ImageNet-sized batch's time.
  Tensor features_buffer(const Shape& shape) {
    for (Tensor& t : pool_buffers_) {
      if (t.sole_owner() && t.shape() == shape) return t;
    }
    Tensor t(shape);
    if (static_cast<int64_t>(pool_buffers_.size()) < parts_.prefetch + 2) {
      pool_buffers_.push_back(t);
    } else {
      for (Tensor& old : pool_buffers_) {
        if (old.sole_owner()) {  // of another shape (the last, short batch): replace it
          old = t;
          break;
        }
      }
    }
    return t;
  }

  // Runs on the prefetch thread while prefetcher_ exists, else on the caller's.
  Result<std::optional<Batch>> produce() {
    RecordBatch next = reading_.valid() ? reading_.get() : read_records();
    if (!next.status) return next.status.error();
    std::vector<StreamRecord> records = std::move(next.records);
    auto state = std::move(next.state);
    // The next batch's records are read (files, CRCs, the shuffle buffer)
    // while this one decodes.
    if (!records.empty()) reading_ = std::async(std::launch::async, [this] { return read_records(); });
    auto n = static_cast<int64_t>(records.size());
    int64_t lo = 0, hi = n;
    if (parts_.workers > 1 && n > 0) {
      if (n < parts_.workers) return std::optional<Batch>();  // as the in-memory pipeline
      std::tie(lo, hi) = worker_rows(n, parts_.workers, parts_.worker, parts_.row_cuts);
    }
    if (hi == lo) return std::optional<Batch>();
    const int64_t b = hi - lo;
    const ExampleLayout& layout = parts_.layout;
    Shape fshape = jpeg_ ? jpeg_->row_shape() : layout.feature_shape, lshape = layout.label_shape;
    fshape.insert(fshape.begin(), b);
    lshape.insert(lshape.begin(), b);
    Batch out{features_buffer(fshape), Tensor(lshape), {}};
    if (layout.weight) out.weights = Tensor(Shape{b});
    out.offset = lo;
    out.state = std::move(state);
    std::vector<int64_t> epochs;
    for (int64_t r = lo; r < hi; ++r) {
      out.ids.push_back(stream_record_id(records[static_cast<size_t>(r)].ref));
      epochs.push_back(records[static_cast<size_t>(r)].epoch);
    }
    const int64_t frow = num_elements(Shape(fshape.begin() + 1, fshape.end())), lrow = num_elements(layout.label_shape);
    // Rows decode independently; the error reported is the first bad row's.
    const int chunks = pool_ ? static_cast<int>(std::min<int64_t>(pool_->threads(), b)) : 1;
    std::vector<Status> status(static_cast<size_t>(chunks));
    auto decode = [&](int c) {
      try {
        for (int64_t r = b * c / chunks; r < b * (c + 1) / chunks; ++r) {
          const StreamRecord& rec = records[static_cast<size_t>(lo + r)];
          const std::string where =
              fmt::format("{}: record {}", parts_.stream.files[static_cast<size_t>(rec.ref.file)], rec.ref.index);
          if (jpeg_) {
            Status s = jpeg_->run(rec.data, rec.epoch, out.ids[static_cast<size_t>(r)], out.features.data() + r * frow,
                                  out.labels.data() + r * lrow, scratch_[static_cast<size_t>(c)], where,
                                  layout.weight ? out.weights.data() + r : nullptr);
            if (!s) {
              status[static_cast<size_t>(c)] = s;
              return;
            }
            continue;  // scaled (and normalized where the map says) already
          }
          Status s = decode_example(rec.data, layout, out.features.data() + r * frow, out.labels.data() + r * lrow,
                                    where, layout.weight ? out.weights.data() + r : nullptr);
          if (!s) {
            status[static_cast<size_t>(c)] = s;
            return;
          }
          if (parts_.scale != 1.0f) {
            float* f = out.features.data() + r * frow;
            for (int64_t k = 0; k < frow; ++k) f[k] *= parts_.scale;
          }
        }
      } catch (...) {
        status[static_cast<size_t>(c)] = current_exception_error("input pipeline");
      }
    };
    if (pool_ && chunks > 1) {
      pool_->run(chunks, decode);
    } else {
      decode(0);
    }
    for (const Status& s : status) {
      if (!s) return s.error();
    }
    if (!parts_.map.empty()) {
      if (Status s = parts_.map.apply(out, epochs, jpeg_ ? jpeg_->rest() : 0); !s) return s.error();
    }
    return std::optional<Batch>(std::move(out));
  }

  const StreamParts parts_;
  std::unique_ptr<RecordStream> stream_;  // owned by the prefetch thread while prefetcher_ exists
  std::shared_ptr<const InputState> state_;  // after the batches delivered; consumer thread only
  int64_t position_ = 0;
  const std::unique_ptr<MapPool> pool_;
  const std::optional<JpegRows> jpeg_;  // one JPEG feature: decoded fused with the map's pixel operations
  std::vector<JpegRows::Scratch> scratch_;  // one per decode chunk (prefetch thread's)
  std::vector<Tensor> pool_buffers_;  // batch features buffers for reuse (prefetch thread's)
  std::future<RecordBatch> reading_;  // the next batch's records, read on their own thread
  std::unique_ptr<Prefetcher> prefetcher_;  // last member: destroyed first
};

}  // namespace

Result<std::unique_ptr<Input>> make_stream_input(const DataSourceSpec& spec, const InputOptions& options) {
  const std::string prefix = (spec.where.empty() ? "" : spec.where + ": ") + options.name + ": ";
  const StreamObstacle obstacle = stream_obstacle(spec, options);
  if (obstacle == StreamObstacle::kFormat) {
    return config_error(fmt::format("{}stream: true reads format tfrecord only (format {} is read whole; write it as "
                                    "tfrecord shards with dtrain data convert)",
                                    prefix, spec.format));
  }
  if (obstacle == StreamObstacle::kSkipTake) {
    return config_error(prefix + "skip and take are not available with stream: true (they count examples of the "
                                 "whole data set); split the files instead, or use stream: false");
  }
  if (obstacle == StreamObstacle::kInputs) {
    return config_error(prefix + "stream: true reads one float32 model input so far; use stream: false for models "
                                 "of several inputs or of int32 ids");
  }
  StreamParts parts;
  StreamSpec& st = parts.stream;
  if (!parse_tfrecord_compression(spec.compression, st.compression)) {
    return config_error(prefix + "compression \"" + spec.compression + "\" is not one of none, gzip, auto");
  }
  if (spec.on_error != "fail" && spec.on_error != "skip") {
    return config_error(prefix + "on_error \"" + spec.on_error + "\" is not one of fail, skip");
  }
  st.skip_corrupt = spec.on_error == "skip";
  if (spec.cache != "none" && spec.cache != "memory") {
    return config_error(prefix + "cache \"" + spec.cache + "\" is not one of none, memory");
  }
  st.cache = spec.cache == "memory";
  auto layout = make_example_layout(spec, prefix);
  if (!layout) return layout.error();
  parts.layout = std::move(layout.value());
  std::vector<std::string> patterns;
  for (const std::string& p : spec.files) patterns.push_back(resolve_source_path(p, options.base_dir));
  if (patterns.empty()) return config_error(prefix + "format tfrecord needs files");
  auto files = glob_files(patterns);
  if (!files) return files.error();
  st.files = std::move(files.value());
  const auto nfiles = static_cast<int32_t>(st.files.size());
  const int n = options.num_workers, w = options.worker_index;
  const std::string policy = n == 1 ? "off" : spec.shard == "auto" ? "data" : spec.shard;
  if (policy != "data" && policy != "file" && policy != "off") {
    return config_error(fmt::format("{}shard \"{}\" is not one of auto, file, data, off", prefix, spec.shard));
  }
  for (int32_t f = policy == "file" ? w : 0; f < nfiles; f += policy == "file" ? n : 1) st.use.push_back(f);
  if (st.use.empty()) {
    return config_error(fmt::format("{}shard: file needs at least as many files as workers: {} file{} for {} workers",
                                    prefix, nfiles, nfiles == 1 ? "" : "s", n));
  }
  if (spec.interleave) {
    st.cycle_length = spec.interleave->cycle_length;
    st.block_length = spec.interleave->block_length;
  }
  st.shuffle_buffer = spec.shuffle;
  st.seed = spec.seed.value_or(options.default_seed);
  st.repeat = spec.repeat;
  auto map = MapPlan::make(spec.map, parts.layout.feature_shape, parts.layout.label_shape, st.seed, spec.where,
                           options.name, spec.scale);
  if (!map) return map.error();
  parts.map = std::move(map.value());
  parts.threads = MapPool::resolve_threads(spec.num_parallel_calls);
  parts.order_batch = options.ordered_batch(policy == "data");
  if (policy == "data") {
    parts.workers = n;
    parts.worker = w;
    parts.row_cuts = options.row_cuts;
  }
  parts.drop_remainder = spec.drop_remainder;
  parts.scale = static_cast<float>(spec.scale);
  parts.prefetch = spec.prefetch;

  // What the pipeline holds besides the shuffle buffer: the decoded batches
  // (queued, being made, and the one the caller holds) and the open files' buffers.
  const int64_t rows = options.global_batch;
  // A batch's features: the decoded rows (a JPEG's after its pixel
  // operations), then what the rest of the map makes of them.
  const auto jpeg = JpegRows::make(parts.layout, parts.map, static_cast<float>(spec.scale));
  const int64_t row_elements = std::max(num_elements(jpeg ? jpeg->row_shape() : parts.layout.feature_shape),
                                        num_elements(parts.map.feature_shape()));
  const int64_t batch_bytes = rows * (row_elements + num_elements(parts.map.label_shape())) * 4;
  // Each open file: its read buffer (64 KiB) and the records read ahead of use.
  const int64_t held = batch_bytes * (spec.prefetch + 2) + st.cycle_length * ((64 << 10) + ReadAheadReader::kQueueBytes);
  std::string budget = "no max_buffer_mb";
  if (spec.max_buffer_mb) {
    const int64_t cap = *spec.max_buffer_mb << 20;
    if (held >= cap) {
      return config_error(fmt::format("{}max_buffer_mb {} is too small: {} decoded batches of {} examples ({:.1f} MiB "
                                      "each) and {} open files need {:.1f} MiB before the shuffle buffer; raise "
                                      "max_buffer_mb or lower batch_size or prefetch",
                                      prefix, *spec.max_buffer_mb, spec.prefetch + 2, rows, batch_bytes / kMiB,
                                      st.cycle_length, held / kMiB));
    }
    st.max_buffer_bytes = cap - held;
    st.cap_message = fmt::format("{}max_buffer_mb {} exceeded: the shuffle buffer{} may hold {:.1f} MiB of records "
                                 "besides {:.1f} MiB of decoded batches and open files; lower shuffle{} or raise "
                                 "max_buffer_mb",
                                 prefix, *spec.max_buffer_mb, st.cache ? " and the cache" : "",
                                 st.max_buffer_bytes / kMiB, held / kMiB, st.cache ? ", use cache: none" : "");
    budget = fmt::format("max_buffer_mb {} ({:.1f} MiB for the shuffle buffer{})", *spec.max_buffer_mb,
                         st.max_buffer_bytes / kMiB, st.cache ? " and the cache" : "");
  }
  if (st.cache) budget += "; cache memory: later epochs read the records from memory";
  const bool shuffled = spec.shuffle > 1;
  parts.description = fmt::format(
      "{}: streaming {} of {} tfrecord file{} ({}), interleave {} x {}, shuffle buffer {} records, {} decode "
      "thread{}, prefetch {} batch{} of {:.1f} MiB; {}{}",
      options.name, st.use.size(), nfiles, nfiles == 1 ? "" : "s", shuffled ? "file order shuffled each epoch" : "in order",
      st.cycle_length, st.block_length, spec.shuffle, parts.threads, parts.threads == 1 ? "" : "s", spec.prefetch,
      spec.prefetch == 1 ? "" : "es", batch_bytes / kMiB, budget,
      n == 1 ? ""
      : policy == "data"
          ? fmt::format("; shard data: every worker reads the stream in global batches of {} and worker {} of {} "
                        "keeps rows {}..{}",
                        parts.order_batch, w, n, rows * w, rows * (w + 1) - 1)
      : policy == "file"
          ? fmt::format("; shard file: worker {} of {} reads its files alone (the workers see different examples than "
                        "one process would)",
                        w, n)
          : "; shard off: every worker reads every example");
  return std::unique_ptr<Input>(std::make_unique<StreamInput>(std::move(parts)));
}

}  // namespace dtrain
