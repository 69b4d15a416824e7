// The text source (format: text): token windows of text files for language
// models. The files' units (bytes or UTF-8 characters) are concatenated, the
// text optionally cut into a training part and a held-out end (holdout,
// split), and each example is a window of sequence_length token ids (every
// stride-th position) with labels the next sequence_length ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/source.hpp"
#include "datasets/text_vocab.hpp"

namespace dtrain {

// The units of files read one after another.
struct TextUnits {
  std::vector<uint32_t> units;       // bytes, or Unicode code points
  std::vector<std::string> files;    // as read
  std::vector<int64_t> file_starts;  // index in `units` where each file starts
};

// Reads `files` in order. kData errors: a file that cannot be read; with
// kChar, invalid UTF-8: "<file>: invalid UTF-8 at byte offset <n>: <why>; ...".
Result<TextUnits> read_text_units(const std::vector<std::string>& files, TextUnit unit);

// The vocabulary of the text `spec` (a text source) names: all of its files,
// whatever its holdout and split. kConfig errors (prefixed ctx.prefix) for a
// bad unit or no files; kData errors for the files.
Result<VocabularyPtr> build_text_vocabulary(const DataSourceSpec& spec, const SourceContext& ctx);

// -sum p log p (nats) of the ids' frequencies; *distinct receives how many
// distinct ids occur. 0 for no ids.
double unigram_entropy(const std::vector<int32_t>& ids, int64_t vocabulary_size, int64_t* distinct);

// The format table's loader. Ids come from ctx.vocabulary, or when that is
// null from a vocabulary built from this source's own files. kConfig errors
// (prefixed ctx.prefix): missing files or sequence_length, a bad unit, stride,
// holdout or split, scale other than 1 or map operations (they do not apply
// to token ids), a unit other than ctx.vocabulary's. kData errors: the files,
// and a part of the text too short for one window.
// The source's file_starts() are the first window starting in each file.
Result<SourcePtr> load_text_source(const DataSourceSpec& spec, const SourceContext& ctx);

}  // namespace dtrain
