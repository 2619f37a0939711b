#include "api/audit_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpubank::api {
namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// Cuts the file back to its last newline: whatever follows was never acknowledged.
bool repair_tail(int fd, std::string& error) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return error = errno_text("stat"), false;
  off_t end = st.st_size;
  if (end == 0) return true;
  char buf[4096];
  off_t keep = 0;
  for (off_t pos = end; pos > 0;) {
    const off_t chunk = std::min<off_t>(pos, sizeof buf);
    pos -= chunk;
    if (pread(fd, buf, static_cast<size_t>(chunk), pos) != chunk) return error = errno_text("read"), false;
    for (off_t i = chunk; i > 0; --i) {
      if (buf[i - 1] == '\n') {
        keep = pos + i;
        pos = 0;
        break;
      }
    }
  }
  if (keep == end) return true;
  if (ftruncate(fd, keep) != 0 || fsync(fd) != 0) return error = errno_text("truncate torn tail"), false;
  return true;
}

bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

Expected<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) return Unexpected{errno_text("cannot open audit log " + path)};
  std::string error;
  if (!repair_tail(fd, error)) {
    ::close(fd);
    return Unexpected{"audit log " + path + ": " + error};
  }
  return std::unique_ptr<AuditLog>(new AuditLog(path, fd));
}

AuditLog::~AuditLog() { ::close(fd_); }

Expected<bool> AuditLog::append(const nlohmann::ordered_json& entry) {
  // dump() escapes control characters, so an entry is always exactly one line.
  std::string line = entry.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  line += '\n';
  std::unique_lock lock(mu_);
  if (!broken_.empty()) return Unexpected{broken_};
  const std::uint64_t mine = ++appended_;
  pending_ += line;
  while (durable_ < mine) {
    if (!broken_.empty()) return Unexpected{broken_};
    if (flushing_) {
      flushed_.wait(lock);
      continue;
    }
    // Lead this batch: everything pending so far goes to disk with one sync.
    flushing_ = true;
    std::string batch;
    batch.swap(pending_);
    const std::uint64_t batch_end = appended_;
    lock.unlock();
    const bool ok = write_all(fd_, batch) && fdatasync(fd_) == 0;
    const std::string error = ok ? std::string() : errno_text("audit log " + path_ + " write failed");
    lock.lock();
    flushing_ = false;
    if (ok) {
      durable_ = batch_end;
    } else {
      broken_ = error;
    }
    flushed_.notify_all();
  }
  return true;
}

}  // namespace gpubank::api
