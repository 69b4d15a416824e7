// The process's stop-signal handler (see stop_signals.hpp), run on a thread
// of its own. Only async-signal-safe work in the handler: atomics, signal()
// and raise().
#include "engine/stop_signals.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <csignal>
#include <string>
#include <thread>

namespace dtrain {
namespace {

std::atomic<int> g_first{0};
std::atomic<int> g_count{0};
// A signal whose number (1 for the first) is beyond this ends the process
// with its default action; none does while it is kNever. After training: the
// count at that moment plus the one late signal that is ignored.
constexpr int kNever = std::numeric_limits<int>::max();
std::atomic<int> g_late_limit{kNever};

extern "C" void on_stop_signal(int sig) {
  int none = 0;
  g_first.compare_exchange_strong(none, sig);
  const int n = g_count.fetch_add(1) + 1;
  const int limit = g_late_limit.load();
  if (n > limit) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGUSR1};

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  return set;
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : kStopSignals) sigaction(sig, &sa, nullptr);
  // The signals are taken by a thread of their own, which does nothing else:
  // a signal that interrupts a thread in oneDNN's kernels corrupts them (a
  // no-op handler, 5 signals in 40 steps of mnist_mlp: 87 of 160 runs ended
  // in SIGSEGV or heap corruption), so every other thread blocks them: this
  // one, and every thread created after it, which inherits the mask.
  const sigset_t set = stop_signal_set();
  std::thread([set] {
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    for (;;) pause();
  }).detach();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

std::string stop_signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "signal " + std::to_string(sig);
  }
}

int received_stop_signal() { return g_first.load(); }
int received_stop_signals() { return g_count.load(); }

void after_training_stop_signals() { g_late_limit.store(g_count.load() + 1); }

void further_stop_signals_end_the_process() { g_late_limit.store(g_count.load()); }

void stop_signals_end_the_process() {
  g_late_limit.store(0);
  // One that came already: again, to the process (the signal thread takes it).
  if (const int sig = g_first.load(); sig != 0) kill(getpid(), sig);
}

void default_stop_signal_actions() {
  for (int sig : kStopSignals) std::signal(sig, SIG_DFL);
  // To the process: the signal thread, which does not block it, takes it.
  if (const int sig = g_first.load(); sig != 0) kill(getpid(), sig);
}

}  // namespace dtrain
