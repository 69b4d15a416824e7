// Exceptions turned into Errors at thread boundaries, and the throw-injection
// test hook (thread_errors.hpp).
#include "engine/thread_errors.hpp"

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

namespace dtrain {

Error current_exception_error(std::string_view where) {
  try {
    throw;
  } catch (const ErrorException& e) {
    return e.error;
  } catch (const dnnl::error& e) {
    return runtime_error(fmt::format("{}: oneDNN failed: {}", where, e.what()));
  } catch (const std::bad_alloc&) {
    return runtime_error(fmt::format("{}: out of memory", where));
  } catch (const std::exception& e) {
    return runtime_error(fmt::format("{}: {}", where, e.what()));
  } catch (...) {
    return runtime_error(fmt::format("{}: an exception of unknown type", where));
  }
}

void maybe_pause_for_test(std::string_view where) {
  static const std::string spec = [] {
    const char* v = std::getenv("DTRAIN_TEST_PAUSE");
    return std::string(v == nullptr ? "" : v);
  }();
  if (spec.empty()) return;
  std::string_view rest = spec;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t colon = item.find(':');
    if (item.substr(0, colon) != where) continue;
    int ms = 200;
    if (colon != std::string_view::npos) ms = std::atoi(std::string(item.substr(colon + 1)).c_str());
    std::fprintf(stderr, "dtrain: test pause: %.*s\n", static_cast<int>(where.size()), where.data());
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return;
  }
}

void maybe_throw_for_test(std::string_view boundary) {
  static const std::string spec = [] {
    const char* v = std::getenv("DTRAIN_TEST_THROW");
    return std::string(v == nullptr ? "" : v);
  }();
  if (spec.empty()) return;
  const auto colon = spec.find(':');
  if (std::string_view(spec).substr(0, colon) != boundary) return;
  const std::string kind = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "std") throw std::runtime_error(fmt::format("injected at {} (DTRAIN_TEST_THROW)", boundary));
  if (kind == "unknown") throw 42;
  throw ErrorException{runtime_error(fmt::format("injected failure at {} (DTRAIN_TEST_THROW)", boundary))};
}

}  // namespace dtrain
