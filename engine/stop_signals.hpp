// The stop signals (SIGINT, SIGTERM, SIGUSR1: Ctrl-C, a scheduler's stop, a
// batch scheduler's warning such as Slurm's --signal=USR1@90), caught from
// the first line of main to the end of the process, so that none is lost
// while the job loads, the data is read or the cluster forms: training acts
// on the first one as soon as it can (before its first step, or after the
// step in progress); commands that do not stop gracefully get the default
// action back, at once if a signal already came.
#pragma once

#include <string>

namespace dtrain {

// Installs the handler for SIGINT, SIGTERM and SIGUSR1 (call first thing in
// main). It records the first signal and counts them; nothing else until
// after_training_stop_signals(). An ignored SIGINT (a background job of a
// non-interactive shell) is caught too: a stop signal always stops training.
void install_stop_signal_handlers();

// "SIGTERM" for a stop signal's number (as the log says it).
std::string stop_signal_name(int sig);

// The first stop signal received since install (0: none).
int received_stop_signal();
// How many stop signals were received since install.
int received_stop_signals();

// After training returned: a task may still get the signal its launcher
// passes on to every task (it stopped first on a peer's word): the next one
// is ignored, and one after it ends the process at once (default action).
void after_training_stop_signals();

// A ps task that received a stop signal keeps serving until the chief,
// which stops after its step and saves, ends it: any further stop signal
// ends the process at once (default action).
void further_stop_signals_end_the_process();

// For the evaluator task: a stop signal ends the process with its default
// action (at once if one came already), as default_stop_signal_actions()
// does, but the handler stays installed, so that the process still shows
// it catches the signals (dtrain launch forwards a signal to a task only once
// it catches it: before, the task is still loading and would die of it).
void stop_signals_end_the_process();

// For commands that do not stop gracefully (evaluate, predict, export,
// data): the default actions again; a signal
// already received is raised again now, with its default action.
void default_stop_signal_actions();

}  // namespace dtrain
