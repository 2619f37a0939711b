// SIGINT/SIGTERM for the long-running commands (controller, metasync, exporter): block them
// before any thread starts, so every thread inherits the mask and one thread waits for them;
// then run the service until a signal asks it to stop or it ends on its own.
#pragma once

#include <csignal>
#include <functional>
#include <stop_token>

#include "core/expected.hpp"

namespace gpubank::cli {

class StopOnSignal {
 public:
  StopOnSignal();  // blocks SIGINT and SIGTERM in the calling thread (and the threads it starts)
  // Calls `service` with a token that SIGINT/SIGTERM request; returns what it returned.
  Expected<bool> run(const std::function<Expected<bool>(std::stop_token)>& service);

 private:
  sigset_t signals_{};
};

}  // namespace gpubank::cli
