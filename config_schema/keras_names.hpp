// Keras's names for unnamed layers: the type, then type_1, type_2, ... per
// type, skipping names the model already uses. The loader and the block
// expansion (which names layers before a block refers to them) share it, so a
// layer gets the same name either way.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>

namespace dtrain {

class KerasNamer {
 public:
  // `taken`: the names written in the job.
  explicit KerasNamer(std::set<std::string> taken) : taken_(std::move(taken)) {}

  // The next free name for a layer of `type`.
  std::string next(const std::string& type) {
    int& n = counts_[type];
    std::string name;
    do {
      name = n == 0 ? type : type + "_" + std::to_string(n);
      ++n;
    } while (taken_.count(name) != 0);
    taken_.insert(name);
    return name;
  }

 private:
  std::set<std::string> taken_;
  std::map<std::string, int> counts_;
};

}  // namespace dtrain
