// unknown_choice_error: "x is not one of ..." with a suggestion (see choice_error.hpp).
#include "engine/losses/choice_error.hpp"

#include <string>
#include <vector>

#include "engine/base/did_you_mean.hpp"

namespace dtrain {

Error unknown_choice_error(std::string_view what, std::string_view got,
                           std::initializer_list<std::string_view> choices) {
  std::string msg = std::string(what) + " \"" + std::string(got) + "\" is not one of ";
  std::vector<std::string> names;
  for (std::string_view c : choices) {
    if (!names.empty()) msg += ", ";
    msg += c;
    names.emplace_back(c);
  }
  return config_error(msg + did_you_mean(got, names));
}

}  // namespace dtrain
