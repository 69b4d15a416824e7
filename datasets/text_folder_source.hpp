// format: text_folder: a directory with one sub-folder of .txt files per
// class (Keras' text_dataset_from_directory). Class ids follow the sorted
// sub-folder names, or data.*.classes' order; each file is one example, its
// UTF-8 text tokenized (datasets/tokenizer.hpp), its token ids padded with
// <pad> (0) or truncated to max_length: features [max_length] int32 ids,
// label the class id. holdout/split keep a fixed share of each class apart
// (by a hash of the file's path below dir, as image_folder does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "datasets/class_folders.hpp"
#include "datasets/source.hpp"
#include "datasets/tokenizer.hpp"

namespace dtrain {

// Whether `path` names a file text_folder reads (.txt, any case).
bool is_text_file_name(const std::string& path);

// A kConfig error (starting `prefix`) when spec's tokenizer keys do not fit
// together: an unknown tokenizer, sentencepiece without sentencepiece_model
// or with max_tokens/min_count, sentencepiece_model with another tokenizer.
Status check_tokenizer_keys(const DataSourceSpec& spec, const std::string& prefix);
// spec's tokenizer, checked, with its sentencepiece model loaded (resolved
// against ctx.base_dir; kData errors name it).
Result<TextTokenizer> load_text_tokenizer(const DataSourceSpec& spec, const SourceContext& ctx);

// The .txt files of `split` ("train" or "holdout") of spec.dir's class
// folders (datasets/class_folders.hpp), spec's holdout and classes applied;
// its other keys are not checked.
Result<ClassFolderFiles> list_text_folder_files(const DataSourceSpec& spec, const SourceContext& ctx,
                                                const std::string& split);

// The tokens of one UTF-8 text file (a leading BOM dropped). kData error
// "<path>: invalid UTF-8 at byte offset <n>: <why>" for text that is not UTF-8.
Result<std::vector<std::string>> read_text_file_tokens(const std::string& path, const TextTokenizer& tokenizer);

// The vocabulary of the training split of `spec` (a text_folder source),
// whatever its own split: tokenizer, max_tokens and min_count as given.
// kConfig errors (prefixed ctx.prefix) for a bad spec, kData for the files.
Result<TokenVocabularyPtr> build_text_folder_vocabulary(const DataSourceSpec& spec, const SourceContext& ctx);

// The class names of `spec` (a text_folder source) in id order: its classes,
// or its dir's sorted sub-folders (the folders are listed, no file is read).
Result<std::vector<std::string>> text_folder_class_names(const DataSourceSpec& spec, const SourceContext& ctx);

// [max_length] int32 token ids, labels [].
std::optional<ExampleShapes> text_folder_shapes(const DataSourceSpec& spec);

// The format table's loader. Ids come from ctx.tokens, or when that is null
// from build_text_folder_vocabulary(spec). kConfig errors (prefixed
// ctx.prefix): no dir or max_length, a bad tokenizer, holdout, split, scale
// other than 1, map operations, a tokenizer other than ctx.tokens'. kData
// errors: the folder and its files (named).
Result<SourcePtr> load_text_folder_source(const DataSourceSpec& spec, const SourceContext& ctx);

}  // namespace dtrain
