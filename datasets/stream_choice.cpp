// data.*.stream resolved, and the start-up line that says so (see stream_choice.hpp).
#include "datasets/stream_choice.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>
#include <vector>

#include "datasets/csv_scan.hpp"
#include "datasets/file_glob.hpp"
#include "datasets/source.hpp"
#include "datasets/text_folder_source.hpp"
#include "engine/host_memory.hpp"

namespace dtrain {
namespace {

// "317.5 MiB", "2.4 GiB".
std::string size_text(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.1f} GiB", b / (1024.0 * 1024 * 1024));
  return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
}

// Why auto reads `spec` whole.
std::string obstacle_reason(StreamObstacle o, const DataSourceSpec& spec) {
  switch (o) {
    case StreamObstacle::kFormat:
      return spec.format == "image_folder" ? "format image_folder holds its list of files, not the images"
                                           : fmt::format("format {} does not stream", spec.format);
    case StreamObstacle::kSkipTake:
      return "skip and take count the examples of the whole data set";
    case StreamObstacle::kInputs:
      return "streaming reads one float32 model input so far";
    case StreamObstacle::kNone:
      break;
  }
  return "";
}

// What turns a whole read that may not fit into a streamed one.
std::string stream_hint(StreamObstacle o) {
  switch (o) {
    case StreamObstacle::kNone:
      return ": stream: auto streams it";
    case StreamObstacle::kFormat:
      return ": dtrain data convert writes it as tfrecord shards, which stream";
    case StreamObstacle::kSkipTake:
      return ": split the files instead of skip and take, and it streams";
    case StreamObstacle::kInputs:
      break;
  }
  return "";
}

}  // namespace

StreamObstacle stream_obstacle(const DataSourceSpec& spec, const InputOptions& options) {
  if (spec.format != "tfrecord") return StreamObstacle::kFormat;
  if (spec.skip > 0 || spec.take) return StreamObstacle::kSkipTake;
  if (options.input_names.size() > 1 || options.feature_dtype != DType::f32) return StreamObstacle::kInputs;
  return StreamObstacle::kNone;
}

bool resolves_to_stream(const DataSourceSpec& spec, const InputOptions& options) {
  if (streams_by_itself(spec.format)) return false;
  return spec.stream.value_or(stream_obstacle(spec, options) == StreamObstacle::kNone);
}

bool streams_by_itself(const std::string& format) { return format == "text_folder" || format == "csv"; }

bool reads_as_training_goes(const DataSourceSpec& spec, int64_t bytes, std::optional<int64_t> room) {
  if (spec.stream) return *spec.stream;
  return room && bytes > *room / 4;
}

bool reads_as_training_goes(const DataSourceSpec& spec, int64_t bytes) {
  const auto room = detect_memory_room();
  return reads_as_training_goes(spec, bytes, room ? std::optional<int64_t>(room->bytes) : std::nullopt);
}

std::string stream_reason(const DataSourceSpec& spec, const InputOptions& options) {
  if (spec.stream) return *spec.stream ? "stream: true" : "stream: false";
  const StreamObstacle o = stream_obstacle(spec, options);
  return "stream: auto: " + (o == StreamObstacle::kNone ? "format tfrecord streams" : obstacle_reason(o, spec));
}

std::string describe_stream_choice(const DataSourceSpec& spec, const InputOptions& options,
                                   const std::optional<DataSize>& size, std::optional<int64_t> room,
                                   const std::string& room_source) {
  if (spec.format == "synthetic" || spec.format == "synthetic_sequence") return "";
  if (streams_by_itself(spec.format) && size) {
    const bool csv = spec.format == "csv";
    const bool gzip = csv && csv_internal::is_gzip_path(spec.path);
    const bool goes = !gzip && reads_as_training_goes(spec, size->bytes, room);
    std::string line = fmt::format("{}: {} {} file{}, {}: ", options.name, size->files, spec.format,
                                   size->files == 1 ? "" : "s", size_text(size->bytes));
    if (csv) line += goes ? "rows read from the file as training goes" : "columns held in memory";
    else line += goes ? "files read and tokenized as training goes" : "token ids held in memory";
    if (gzip) return line + " (a gzip file is read whole)";
    if (spec.stream) return line + (*spec.stream ? " (stream: true)" : " (stream: false)");
    if (!room) return line + " (stream: auto: memory available unknown)";
    return line + fmt::format(" (stream: auto: {} a quarter of the {} of memory available ({}))",
                              goes ? "more than" : "at most", size_text(*room), room_source);
  }
  const StreamObstacle obstacle = stream_obstacle(spec, options);
  const bool stream = resolves_to_stream(spec, options);
  const bool cache = stream && spec.cache == "memory";
  std::string line = options.name + ": ";
  line += size ? fmt::format("{} {} file{}, {}", size->files, spec.format, size->files == 1 ? "" : "s",
                             size_text(size->bytes))
               : "format " + spec.format;
  line += stream                            ? (cache ? ": streaming, the encoded records kept in memory once read" : ": streaming")
          : spec.format == "image_folder" ? ": images decoded batch by batch"
                                          : ": read whole";
  line += " (" + stream_reason(spec, options) + ")";
  if (!size || !room) return line;
  const std::string available = fmt::format("{} of memory available ({})", size_text(*room), room_source);
  if (!stream && spec.format != "image_folder" && size->bytes * 4 > *room / 2) {
    line += fmt::format("; as float32 it holds about 4 x its {} on disk, more than half the {}{}",
                        size_text(size->bytes), available, stream_hint(obstacle));
  } else if (cache && size->bytes > *room / 2) {
    line += fmt::format("; its {} of records may not fit in the cache, more than half the {}: cache: none reads the "
                        "files every epoch",
                        size_text(size->bytes), available);
  }
  return line;
}

std::string stream_choice_line(const DataSourceSpec& spec, const InputOptions& options) {
  // The files the spec reads: text_folder's split, or every file the spec
  // names (the loaders say which of them they read); none for image_folder.
  std::vector<std::string> files;
  if (spec.format == "text_folder") {
    auto listed = list_text_folder_files(spec, SourceContext{options.base_dir, ""}, spec.split);
    if (!listed) return "";
    for (const auto& of_class : listed->files) files.insert(files.end(), of_class.begin(), of_class.end());
  } else if (spec.format != "image_folder") {
    for (const std::string* p : {&spec.images, &spec.labels, &spec.path}) {
      if (!p->empty()) files.push_back(resolve_source_path(*p, options.base_dir));
    }
    if (!spec.files.empty()) {
      std::vector<std::string> patterns;
      for (const std::string& p : spec.files) patterns.push_back(resolve_source_path(p, options.base_dir));
      auto matched = glob_files(patterns);
      if (!matched) return "";
      files.insert(files.end(), matched->begin(), matched->end());
    }
  }
  std::optional<DataSize> size;
  if (spec.format != "image_folder") {
    size = DataSize{};
    for (const std::string& f : files) {
      std::error_code ec;
      const auto bytes = std::filesystem::file_size(f, ec);
      if (ec) return "";
      size->files += 1;
      size->bytes += static_cast<int64_t>(bytes);
    }
  }
  std::optional<int64_t> room;
  std::string room_source;
  if (const auto r = detect_memory_room()) {
    room = r->bytes;
    room_source = r->source;
  }
  return describe_stream_choice(spec, options, size, room, room_source);
}

}  // namespace dtrain
