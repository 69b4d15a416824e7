// The file lists of the class-folder formats (image_folder, text_folder): a
// directory with one sub-folder per class, class ids in sorted folder order
// (or data.*.classes'), and holdout/split keeping a fixed share of each class
// apart, chosen by a hash of each file's path below the directory (the same
// files whatever the machine, the listing order or the folder's location).
#pragma once

#include <string>
#include <vector>

#include "datasets/source.hpp"

namespace dtrain {

struct ClassFolderFiles {
  std::string dir;                              // spec.dir, resolved against ctx.base_dir
  std::vector<std::string> classes;             // in id order
  std::vector<std::vector<std::string>> files;  // per class: the split's files, sorted by path
};

// What a format's messages call its files.
struct ClassFolderKind {
  bool (*reads)(const std::string& path);  // whether a file name is one of the format's
  const char* files;                       // "images", ".txt files"
  const char* example;                     // "cat/*.jpg and {dir}/dog/*.png" after "{dir}/"
};

// The classes of the folder spec.dir without its files (`files` left
// empty): spec.classes, or its sorted sub-folders. kData errors (prefixed
// ctx.prefix): dir not a directory, fewer than two classes, a class of
// spec.classes that is not a folder.
Result<ClassFolderFiles> list_class_names(const DataSourceSpec& spec, const SourceContext& ctx,
                                          const ClassFolderKind& kind);

// The files of `split` ("train": what is not held out; "holdout") of the
// folder spec.dir: each class folder's files that kind.reads (sub-folders
// included), the floor(spec.holdout x count) of the smallest path hashes held
// out. kData errors: list_class_names'.
Result<ClassFolderFiles> list_class_folders(const DataSourceSpec& spec, const SourceContext& ctx,
                                            const std::string& split, const ClassFolderKind& kind);

}  // namespace dtrain
