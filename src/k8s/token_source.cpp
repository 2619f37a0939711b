#include "k8s/token_source.hpp"

#include "document/loader.hpp"
#include "k8s/credentials.hpp"

namespace gpubank::k8s {

FileTokenSource::FileTokenSource(std::string path, std::chrono::steady_clock::duration min_reread, Clock clock,
                                 Reader read)
    : path_(std::move(path)),
      min_reread_(min_reread),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })),
      read_(read ? std::move(read) : Reader([](const std::string& p) { return doc::read_file(p, kMaxTokenBytes); })) {}

void FileTokenSource::expire() {
  const std::lock_guard lock(mutex_);
  read_at_.reset();
}

Expected<std::string> FileTokenSource::token() {
  const std::lock_guard lock(mutex_);
  const auto now = clock_();
  if (cached_ && read_at_ && now - *read_at_ < min_reread_) return *cached_;
  auto text = read_(path_);
  std::optional<std::string> problem;
  if (!text) {
    problem = text.error();
  } else if (auto bad = check_bearer_token(*text)) {
    problem = "token file " + path_ + ": " + *bad;
  }
  if (problem) {
    // Keep the last good token, and try again on the next call rather than a minute later:
    // a rotation in progress is over in moments.
    if (cached_) return *cached_;
    return Unexpected{*problem};
  }
  cached_ = std::string(trim_whitespace(*text));
  read_at_ = now;
  return *cached_;
}

}  // namespace gpubank::k8s
