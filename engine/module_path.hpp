// Where dtrain looks for a module it loads at run time (dlopen): the CUDA
// module (engine/cuda_module.hpp) and the SentencePiece module
// (datasets/sentencepiece.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtrain {

// A place to look for a module, and why it is looked for there.
struct ModuleCandidate {
  std::string path;
  std::string origin;  // "DTRAIN_CUDA_MODULE", "beside the executable", ...
};

// Where to look for the module file `file`, in order: only `env_value` when it
// is set and non-empty (the environment variable `env_name`: the user's
// choice, never second-guessed); else <dir of exe>/../lib/<file> (an
// installed bin/ + lib/ bundle), <dir of exe>/<file>, then `build_path` (the
// module in the build tree). Empty `exe_path` or `build_path` leave their
// entries out. Pure: touches no file.
std::vector<ModuleCandidate> module_candidates(std::string_view file, std::string_view env_name, const char* env_value,
                                               std::string_view exe_path, std::string_view build_path);

// The path of the running executable (/proc/self/exe), or "" when unknown.
std::string this_executable();

}  // namespace dtrain
