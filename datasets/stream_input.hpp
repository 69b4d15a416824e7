// data.*.stream: a tfrecord input read, decoded and batched as training goes,
// holding only its buffers (interleaved open files, the shuffle buffer of
// encoded records, the prefetched batches) instead of the whole data set.
#pragma once

#include <memory>

#include "engine/base/job_spec.hpp"
#include "datasets/dataset.hpp"
#include "datasets/pipeline.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// The streaming Input of `spec` (format tfrecord, spec.stream true). Its
// batches hold the records RecordStream gives (see record_stream.hpp),
// decoded by spec.features on num_parallel_calls threads, scaled and mapped
// as the in-memory pipeline's; example ids are (file number << 40 | record
// number in the file). shard: data (and auto) has every worker read the
// same stream in global batches and keep its rows, file gives worker i the
// files i, i+n, ..., off everything. state() is the exact position after the
// batches delivered; restore(n) without a state replays n batches' records
// (reading, not decoding, them).
// Errors (kConfig, "<where>: <name>: "): another format; skip or take; a
// model of several inputs or of int32 ids; max_buffer_mb too small for the
// prefetched batches (the shuffle buffer's overflow is reported by next()).
// Files: kData errors as the in-memory loader's, when first read.
// spec.cache "memory" keeps each file's records once read whole, and later
// epochs read them from memory (the same records in the same order).
Result<std::unique_ptr<Input>> make_stream_input(const DataSourceSpec& spec, const InputOptions& options);

}  // namespace dtrain
