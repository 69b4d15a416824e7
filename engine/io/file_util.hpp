// Durable file I/O for checkpoints and indexes: whole-file reads, and atomic
// writes (temporary name, fsync, rename, fsync of the directory) so that a
// crash leaves either the old file or the new one, never a torn one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain::io {

// strerror(err) as a std::string.
std::string errno_message(int err);

// Reads the whole file. Errors (missing, unreadable) are of `kind` and name
// the path and the system's reason.
Result<std::string> read_whole_file(const std::string& path, ErrorKind kind);

// Creates `dir` and its parents if missing (kRuntime error naming the path).
Status ensure_directory(const std::string& dir);

// fsyncs a directory so that renames and unlinks inside it are durable.
Status fsync_directory(const std::string& dir);

// "<path>.tmp-<host>-<pid>": where write_file_atomic writes before renaming.
// The host (gethostname, characters other than letters, digits, '.' and '-'
// as '_') and the pid let a later run tell a dead writer's leftovers from the
// file of a writer still running.
std::string temporary_name(const std::string& path);

// Removes from `dir` (not its subdirectories) the temporary files that
// writers on this host left when they died: names made by temporary_name()
// with this host and the pid of no running process. Files of running writers
// (this one included), of other hosts (a shared file system) and every other
// file are left. Returns the names removed; a missing dir removes nothing.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

// Writes the concatenation of `pieces` to temporary_name(path), flushes and
// fsyncs it, renames it to `path` and fsyncs the directory. On any failure
// the temporary file is removed, `path` keeps its previous contents, and a
// kRuntime error names the file and the system's reason.
Status write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces);

// The directory holding `path` ("." when it has none).
std::string parent_directory(const std::string& path);

}  // namespace dtrain::io
