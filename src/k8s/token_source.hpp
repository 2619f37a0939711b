// Where a request's bearer token comes from. Service-account tokens are bound and rotate
// (the kubelet rewrites the file well before expiry), so a token read once at start-up
// stops working after an hour or so; a file-backed source re-reads it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "core/expected.hpp"

namespace gpubank::k8s {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // The token to send now. An error only when no usable token has ever been read.
  [[nodiscard]] virtual Expected<std::string> token() = 0;
  // Forget the cached token so the next token() reads afresh (a transport calls this on
  // 401 Unauthorized). A fixed token has nothing to forget.
  virtual void expire() {}
};

// A token written in the kubeconfig itself.
class StaticTokenSource final : public TokenSource {
 public:
  explicit StaticTokenSource(std::string token) : token_(std::move(token)) {}
  [[nodiscard]] Expected<std::string> token() override { return token_; }

 private:
  std::string token_;
};

// A token file (the service account's, or a kubeconfig's tokenFile), read on first use and
// again once `min_reread` has passed since the last read, as client-go's cached file token
// source does (a minute there, and here by default). Surrounding whitespace is trimmed. A
// failed re-read (the file is being replaced, or is briefly empty) keeps the last good
// token; without one, the error names the file and the reason. Thread-safe.
class FileTokenSource final : public TokenSource {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using Reader = std::function<Expected<std::string>(const std::string& path)>;

  static constexpr std::chrono::seconds kDefaultReread{60};
  static constexpr std::size_t kMaxTokenBytes = 64 * 1024;

  // `clock` and `read` default to the steady clock and the file system; tests pass their own.
  explicit FileTokenSource(std::string path, std::chrono::steady_clock::duration min_reread = kDefaultReread,
                           Clock clock = {}, Reader read = {});

  [[nodiscard]] Expected<std::string> token() override;
  void expire() override;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  const std::string path_;
  const std::chrono::steady_clock::duration min_reread_;
  const Clock clock_;
  const Reader read_;
  std::mutex mutex_;
  std::optional<std::string> cached_;
  std::optional<std::chrono::steady_clock::time_point> read_at_;
};

}  // namespace gpubank::k8s
