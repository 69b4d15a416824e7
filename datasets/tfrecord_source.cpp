// Loading tfrecord sources: glob, read and CRC-check each file, decode each
// tf.Example by the layout of the feature spec.
#include "datasets/tfrecord_source.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <mutex>
#include <optional>

#include "datasets/example_decode.hpp"
#include "datasets/file_glob.hpp"
#include "datasets/tfrecord_file.hpp"
#include "engine/threads.hpp"

namespace dtrain {

Result<TfRecordLoad> load_tfrecord_examples(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.files.empty()) return config_error(ctx.prefix + "format tfrecord needs files");
  TfRecordCompression compression{};
  if (!parse_tfrecord_compression(spec.compression, compression)) {
    return config_error(ctx.prefix + "compression \"" + spec.compression + "\" is not one of none, gzip, auto");
  }
  if (spec.on_error != "fail" && spec.on_error != "skip") {
    return config_error(ctx.prefix + "on_error \"" + spec.on_error + "\" is not one of fail, skip");
  }
  auto layout = make_example_layout(spec, ctx.prefix, ctx.inputs);
  if (!layout) return layout.error();
  if (layout->feature_shape.size() == 3 && layout->feature_shape[0] < 0) {
    return config_error(fmt::format("{}features.{}: images of varying size (shape [null, null, {}]) are read "
                                    "streamed only (a source read whole holds every image at one size); stream the "
                                    "files (stream: auto or true), or give the images' one size",
                                    ctx.prefix, layout->inputs[0].name, layout->feature_shape[2]));
  }
  std::vector<std::string> patterns;
  for (const std::string& p : spec.files) patterns.push_back(resolve_source_path(p, ctx.base_dir));
  auto files = glob_files(patterns);
  if (!files) return files.error();

  const auto frow = static_cast<size_t>(num_elements(layout->feature_shape));
  const auto lrow = static_cast<size_t>(num_elements(layout->label_shape));
  std::vector<float> features, labels, weights;
  TfRecordLoad load;
  int64_t rows = 0;
  std::vector<int64_t> file_starts;  // first example of each file with any records
  std::vector<std::string> file_names;  // those files
  std::vector<bool> file_skipped;        // whether on_error: skip left records of it out
  // Decoding threads: num_parallel_calls (0 = auto: the process's thread count, at most 8).
  const int threads = spec.num_parallel_calls > 0 ? static_cast<int>(spec.num_parallel_calls) : auto_input_threads();
  for (const std::string& path : *files) {
    auto file = read_tfrecord_file(path, compression, spec.on_error == "skip");
    if (!file) return file.error();
    if (file->skipped > 0) {
      load.skipped_records += file->skipped;
      ++load.files_with_skips;
      load.problems.insert(load.problems.end(), file->problems.begin(), file->problems.end());
    }
    if (!file->records.empty()) {
      file_starts.push_back(rows);
      file_names.push_back(path);
      file_skipped.push_back(file->skipped > 0);
    }
    const auto n = static_cast<int64_t>(file->records.size());
    const size_t f0 = features.size(), l0 = labels.size();
    features.resize(f0 + static_cast<size_t>(n) * frow);
    labels.resize(l0 + static_cast<size_t>(n) * lrow);
    if (layout->weight) weights.resize(static_cast<size_t>(rows + n));
    // Records decode independently into their own rows, on num_parallel_calls
    // threads; the error reported is the first bad record's, whatever the
    // thread count.
    std::mutex mu;
    int64_t first_bad = n;
    std::optional<Error> first_error;  // GUARDED_BY(mu)
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      Status s = decode_example(file->records[k], *layout, features.data() + f0 + k * frow,
                                labels.data() + l0 + k * lrow, fmt::format("{}: record {}", path, i),
                                layout->weight ? weights.data() + rows + i : nullptr);
      if (!s) {
        std::lock_guard<std::mutex> lock(mu);
        if (i < first_bad) {
          first_bad = i;
          first_error = s.error();
        }
      }
    }
    if (first_error) return *first_error;
    rows += n;
  }
  const std::string name = patterns_text(spec.files);
  if (rows == 0) return data_error(name + ": no records in " + std::to_string(files->size()) + " file(s)");
  Shape fshape{rows}, lshape{rows};
  fshape.insert(fshape.end(), layout->feature_shape.begin(), layout->feature_shape.end());
  lshape.insert(lshape.end(), layout->label_shape.begin(), layout->label_shape.end());
  std::vector<Tensor> inputs;
  if (layout->input_shapes.empty()) {
    inputs.push_back(Tensor::from(fshape, features));
  } else {
    inputs = split_inputs(features, rows, layout->input_shapes);
  }
  std::vector<Tensor> all_labels;
  all_labels.push_back(Tensor::from(lshape, labels));
  // Data errors found later (a label out of the model's range) name the file and record.
  ExampleLocator locate = [starts = file_starts, names = std::move(file_names), skipped = std::move(file_skipped),
                           layout = *layout](int64_t id, const ExampleValue& value) {
    const auto f = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), id) - starts.begin()) - 1;
    const bool whole = !value.label && value.position < 0;
    return fmt::format("{}: {}record {}{}", names[f], skipped[f] ? "readable " : "", id - starts[f],
                       whole ? std::string() : feature_of_value(layout, value));
  };
  load.source = make_tensor_source(std::move(inputs), std::move(all_labels), name, std::move(file_starts),
                                   layout->weight ? Tensor::from(Shape{rows}, weights) : Tensor(), {}, "",
                                   std::move(locate));
  return load;
}

Result<SourcePtr> load_tfrecord_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  auto load = load_tfrecord_examples(spec, ctx);
  if (!load) return load.error();
  if (load->skipped_records > 0) {
    std::fprintf(stderr, "%sskipped %lld corrupt record%s in %lld file%s (first: %s)\n", ctx.prefix.c_str(),
                 static_cast<long long>(load->skipped_records), load->skipped_records == 1 ? "" : "s",
                 static_cast<long long>(load->files_with_skips), load->files_with_skips == 1 ? "" : "s",
                 load->problems.front().c_str());
  }
  return load->source;
}

}  // namespace dtrain
