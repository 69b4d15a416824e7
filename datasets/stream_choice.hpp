// data.*.stream (auto | true | false) resolved for one source: whether
// make_input() streams it (stream_input.hpp) or reads it whole (source.hpp),
// and the one start-up line that says which and why, with the files' size on
// disk and, where it matters, the memory available.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "datasets/pipeline.hpp"
#include "engine/base/job_spec.hpp"

namespace dtrain {

// What keeps a source from streaming.
enum class StreamObstacle {
  kNone,
  kFormat,    // a format other than tfrecord
  kSkipTake,  // skip or take (they count the examples of the whole data set)
  kInputs,    // a model of several inputs, or of int32 ids
};

// The first obstacle of `spec` read for a model as `options` describes it
// (input_names, feature_dtype).
StreamObstacle stream_obstacle(const DataSourceSpec& spec, const InputOptions& options);

// Whether `spec` streams: stream true or false as written (true with an
// obstacle is make_stream_input's error); auto (nullopt) streams exactly
// when there is no obstacle, also with cache: memory. It depends on the job
// alone, never on sizes or memory: a streamed and a whole input order their
// examples differently, so every worker of a job and every restart must
// decide alike.
bool resolves_to_stream(const DataSourceSpec& spec, const InputOptions& options);

// text_folder and csv never take make_stream_input's path: they read their
// files from disk as training goes (text_folder holding only their paths,
// csv only where each row starts) with stream: true, and under stream: auto
// when their `bytes` on disk are more than a quarter of the memory `room`
// (unknown room: held, as token ids or compact columns). Either way the
// examples and their order are the same, so sizes may decide. A gzip csv is
// always held.
bool reads_as_training_goes(const DataSourceSpec& spec, int64_t bytes, std::optional<int64_t> room);
// The same with the room of this process (detect_memory_room()).
bool reads_as_training_goes(const DataSourceSpec& spec, int64_t bytes);
// Whether `format` reads as training goes by itself (text_folder, csv).
bool streams_by_itself(const std::string& format);

// Why `spec` streams or not: "stream: true", "stream: false", or auto's
// reason ("stream: auto: format tfrecord streams", "stream: auto: format idx
// does not stream", "stream: auto: skip and take count the examples of the
// whole data set", ...).
std::string stream_reason(const DataSourceSpec& spec, const InputOptions& options);

// The files of a source on disk.
struct DataSize {
  int64_t files = 0;
  int64_t bytes = 0;
};

// The start-up line of `spec` (named options.name) that resolves_to_stream
// gives, its files measuring `size` and `room` bytes of memory available
// (nullopt: unknown) from `room_source` ("MemAvailable" or a cgroup file):
//   "data.train: 8 tfrecord files, 317.5 MiB: streaming (stream: auto: format tfrecord streams)"
// Read whole, it warns when 4 x the bytes on disk (uint8 values held as
// float32) are more than half the room; streamed with cache: memory, when the
// bytes are. Formats without files (synthetic) give "".
std::string describe_stream_choice(const DataSourceSpec& spec, const InputOptions& options,
                                   const std::optional<DataSize>& size, std::optional<int64_t> room,
                                   const std::string& room_source);

// describe_stream_choice() of this process: the spec's files measured (globs
// expanded, paths resolved against options.base_dir) and the memory room
// detected (engine/host_memory.hpp). "" when a file is missing or a glob
// matches nothing: the loader's error says so.
std::string stream_choice_line(const DataSourceSpec& spec, const InputOptions& options);

}  // namespace dtrain
