// The process's stop-signal handler (see stop_signals.hpp). Only
// async-signal-safe work in the handler: atomics, signal() and raise().
#include "estimator/stop_signals.hpp"

#include <csignal>

#include <atomic>

namespace dtrain {
namespace {

std::atomic<int> g_first{0};
std::atomic<int> g_count{0};
// After training: the count at that moment plus the one late signal that is
// ignored; a signal beyond it ends the process. 0: not after training.
std::atomic<int> g_late_limit{0};

extern "C" void on_stop_signal(int sig) {
  int none = 0;
  g_first.compare_exchange_strong(none, sig);
  const int n = g_count.fetch_add(1) + 1;
  const int limit = g_late_limit.load();
  if (limit > 0 && n > limit) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGUSR1};

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : kStopSignals) sigaction(sig, &sa, nullptr);
}

int received_stop_signal() { return g_first.load(); }
int received_stop_signals() { return g_count.load(); }

void after_training_stop_signals() { g_late_limit.store(g_count.load() + 1); }

void default_stop_signal_actions() {
  for (int sig : kStopSignals) std::signal(sig, SIG_DFL);
  if (const int sig = g_first.load(); sig != 0) std::raise(sig);
}

}  // namespace dtrain
