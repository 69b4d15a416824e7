// The error for a name that must be one of a fixed list (loss, metric,
// optimizer, schedule and initializer names), with config_schema's
// "did you mean" suggestion.
#pragma once

#include <initializer_list>
#include <string_view>

#include "engine/base/status.hpp"

namespace dtrain {

// A kConfig error: `<what> "<got>" is not one of a, b, c (did you mean "b"?)`;
// the parenthesis only when engine/base/did_you_mean.hpp finds a close choice.
Error unknown_choice_error(std::string_view what, std::string_view got,
                           std::initializer_list<std::string_view> choices);

}  // namespace dtrain
