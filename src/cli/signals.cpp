#include "cli/signals.hpp"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <thread>

namespace gpubank::cli {

StopOnSignal::StopOnSignal() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

Expected<bool> StopOnSignal::run(const std::function<Expected<bool>(std::stop_token)>& service) {
  std::stop_source stop;
  std::thread waiter([&stop, signals = signals_] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != 0 && !stop.stop_requested()) spdlog::info("signal {}: stopping", sig);
    stop.request_stop();
  });
  Expected<bool> result = service(stop.get_token());
  // The service ended on its own: wake the waiter.
  if (!stop.stop_requested()) {
    stop.request_stop();
    pthread_kill(waiter.native_handle(), SIGTERM);
  }
  waiter.join();
  return result;
}

}  // namespace gpubank::cli
