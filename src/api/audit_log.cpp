#include "api/audit_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <spdlog/spdlog.h>

#include "core/quote.hpp"
#include "core/sha256.hpp"

namespace gpubank::api {
namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// The offset just after the last newline before `end` (0 when there is none).
bool last_newline_end(int fd, off_t end, off_t& out, std::string& error) {
  char buf[4096];
  out = 0;
  for (off_t pos = end; pos > 0;) {
    const off_t chunk = std::min<off_t>(pos, sizeof buf);
    pos -= chunk;
    if (pread(fd, buf, static_cast<size_t>(chunk), pos) != chunk) return error = errno_text("read"), false;
    for (off_t i = chunk; i > 0; --i) {
      if (buf[i - 1] == '\n') {
        out = pos + i;
        return true;
      }
    }
  }
  return true;
}

// The last complete line (without its newline) and the size of a torn tail after it.
struct Tail {
  std::string last_line;  // empty when the file has no complete line
  off_t lines_end = 0;    // where the complete lines end
  off_t size = 0;
};

bool read_tail(int fd, Tail& tail, std::string& error) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return error = errno_text("stat"), false;
  tail.size = st.st_size;
  if (!last_newline_end(fd, tail.size, tail.lines_end, error)) return false;
  if (tail.lines_end == 0) return true;
  off_t start = 0;
  if (!last_newline_end(fd, tail.lines_end - 1, start, error)) return false;
  tail.last_line.resize(static_cast<std::size_t>(tail.lines_end - 1 - start));
  if (!tail.last_line.empty() &&
      pread(fd, tail.last_line.data(), tail.last_line.size(), start) != static_cast<ssize_t>(tail.last_line.size())) {
    return error = errno_text("read"), false;
  }
  return true;
}

bool is_hex_hash(std::string_view s) { return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos; }

// One line taken apart by its layout; the problem in words when it does not fit.
struct ParsedLine {
  std::int64_t seq = 0;
  std::string prev_hash;
  std::string entry;  // the entry's JSON text, in braces
  std::string hash;
};

Expected<ParsedLine> parse_line(std::string_view line) {
  constexpr std::string_view kSeq = "{\"seq\":";
  constexpr std::string_view kPrev = ",\"prevHash\":\"";
  constexpr std::string_view kHash = ",\"hash\":\"";
  const auto layout = [](const std::string& what) -> Expected<ParsedLine> {
    return Unexpected{"not a chained audit line (" + what +
                      "; expected {\"seq\":N,\"prevHash\":\"...\",<entry fields>,\"hash\":\"...\"})"};
  };
  if (!nlohmann::json::accept(line)) return layout("not valid JSON");
  if (!line.starts_with(kSeq)) return layout("no leading seq field");
  ParsedLine p;
  std::size_t pos = kSeq.size();
  const std::size_t digits = line.find_first_not_of("0123456789", pos);
  if (digits == pos || digits == std::string_view::npos || digits - pos > 18) return layout("seq is not a number");
  p.seq = std::stoll(std::string(line.substr(pos, digits - pos)));
  pos = digits;
  if (line.substr(pos, kPrev.size()) != kPrev) return layout("no prevHash field after seq");
  pos += kPrev.size();
  const std::size_t prev_end = line.find('"', pos);
  if (prev_end == std::string_view::npos) return layout("prevHash unterminated");
  p.prev_hash = std::string(line.substr(pos, prev_end - pos));
  pos = prev_end + 1;
  const std::size_t hash_at = line.rfind(kHash);
  if (hash_at == std::string_view::npos || hash_at < pos || line.size() != hash_at + kHash.size() + 64 + 2 ||
      !line.ends_with("\"}")) {
    return layout("no trailing hash field");
  }
  p.hash = std::string(line.substr(hash_at + kHash.size(), 64));
  const std::string_view between = line.substr(pos, hash_at - pos);
  if (between.empty()) {
    p.entry = "{}";
  } else if (between.front() == ',') {
    p.entry = "{" + std::string(between.substr(1)) + "}";
  } else {
    return layout("no comma after prevHash");
  }
  return p;
}

}  // namespace

std::string audit_line_hash(std::int64_t seq, const std::string& prev_hash, std::string_view entry) {
  std::string text = "gpubank-audit-jsonl-v1\n";
  const auto add = [&text](std::string_view name, std::string_view value) {
    text += name;
    text += ':';
    text += std::to_string(value.size());
    text += ':';
    text += value;
    text += '\n';
  };
  add("seq", std::to_string(seq));
  add("prevHash", prev_hash);
  add("entry", entry);
  return sha256_hex(text);
}

namespace {

// Checks a parsed line against its own hash; the problem in words.
std::string line_problem(const ParsedLine& p) {
  if (!p.prev_hash.empty() && !is_hex_hash(p.prev_hash)) return "prevHash " + quote(p.prev_hash) + " is not a sha256 hex";
  if (const std::string actual = audit_line_hash(p.seq, p.prev_hash, p.entry); actual != p.hash) {
    return "hash mismatch: stored " + quote(p.hash) + ", computed " + quote(actual) + " (the line was changed)";
  }
  return {};
}

}  // namespace

Expected<AuditLogReport> verify_audit_log(const std::string& path, const std::optional<bank::Anchor>& anchor) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unexpected{"audit log " + path + ": cannot open: " + std::strerror(errno)};
  AuditLogReport out;
  bank::ChainReport& r = out.chain;
  std::optional<std::string> at_anchor;
  std::int64_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (in.eof()) {  // no newline after it: torn by a crash mid-write
      out.torn_tail = "line " + std::to_string(line_number) + " is torn (" + std::to_string(line.size()) +
                      " bytes without a newline: a crash during a write; never acknowledged, the webhook cuts it "
                      "off when it starts)";
      break;
    }
    const std::int64_t expected = r.last_seq + 1;
    auto parsed = parse_line(line);
    std::string problem;
    if (!parsed) {
      problem = parsed.error();
    } else if (parsed->seq != expected) {
      problem = parsed->seq > expected ? "gap in seq: expected " + std::to_string(expected) + ", found " +
                                             std::to_string(parsed->seq) + " (a line was removed or moved)"
                                       : "seq out of order: expected " + std::to_string(expected) + ", found " +
                                             std::to_string(parsed->seq);
    } else if (parsed->prev_hash != r.head) {
      problem = "prevHash " + quote(parsed->prev_hash) + " does not match the hash of " +
                (expected == 1 ? std::string("nothing (the first line's prevHash is empty)")
                               : "seq " + std::to_string(r.last_seq) + " (" + quote(r.head) + ")");
    } else {
      problem = line_problem(*parsed);
    }
    if (!problem.empty()) {
      r.ok = false;
      r.broken_seq = expected;
      r.problem = "line " + std::to_string(line_number) + ": " + problem;
      break;
    }
    if (anchor && parsed->seq == anchor->seq) at_anchor = parsed->hash;
    ++r.entries;
    r.last_seq = parsed->seq;
    r.head = parsed->hash;
  }
  if (in.bad()) return Unexpected{"audit log " + path + ": read error"};
  if (anchor) {
    const std::string name = "anchor " + std::to_string(anchor->seq) + ":" + anchor->hash;
    if (!at_anchor) {
      out.anchor_problem = out.chain.ok ? name + ": the log has no seq " + std::to_string(anchor->seq) + " (it ends at seq " +
                                              std::to_string(out.chain.last_seq) + "): lines were removed from its tail"
                                        : name + ": not reached (the chain breaks before it)";
    } else if (*at_anchor != anchor->hash) {
      out.anchor_problem = name + ": seq " + std::to_string(anchor->seq) + " has hash " + *at_anchor +
                           " instead: the log was rewritten";
    }
  }
  return out;
}

namespace {

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

// The chain's head from the file's last complete line, checked against its own hash.
Expected<bank::Anchor> head_of(const std::string& path, const Tail& tail) {
  if (tail.last_line.empty() && tail.lines_end == 0) return bank::Anchor{};
  auto parsed = parse_line(tail.last_line);
  std::string problem = parsed ? line_problem(*parsed) : parsed.error();
  if (!problem.empty()) {
    return Unexpected{"audit log " + path + ": its last line does not verify: " + problem +
                      ": it is tampered, corrupted or written before the log was hash-chained; move the file aside "
                      "(keep it) and start a new log"};
  }
  return bank::Anchor{parsed->seq, parsed->hash};
}

}  // namespace

Expected<bank::Anchor> audit_log_head(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Unexpected{errno_text("cannot open audit log " + path)};
  Tail tail;
  std::string error;
  const bool ok = read_tail(fd, tail, error);
  ::close(fd);
  if (!ok) return Unexpected{"audit log " + path + ": " + error};
  return head_of(path, tail);
}

Expected<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) return Unexpected{errno_text("cannot open audit log " + path)};
  const auto fail = [&](const std::string& message) -> Expected<std::unique_ptr<AuditLog>> {
    ::close(fd);
    return Unexpected{message};
  };
  Tail tail;
  std::string error;
  if (!read_tail(fd, tail, error)) return fail("audit log " + path + ": " + error);
  auto head = head_of(path, tail);
  if (!head) return fail(head.error());
  // Whatever follows the last newline was never acknowledged: cut it off.
  if (tail.lines_end != tail.size && (ftruncate(fd, tail.lines_end) != 0 || fsync(fd) != 0)) {
    return fail("audit log " + path + ": " + errno_text("truncate torn tail"));
  }
  if (tail.lines_end != tail.size) {
    spdlog::warn("audit log {}: cut off a torn last line ({} bytes without a newline, never acknowledged: a crash "
                 "during a write); the chain continues after seq {}",
                 path, tail.size - tail.lines_end, head->seq);
  }
  std::unique_ptr<AuditLog> log(new AuditLog(path, fd));
  log->appended_ = log->durable_ = static_cast<std::uint64_t>(head->seq);
  log->last_hash_ = head->hash;
  log->torn_bytes_cut_ = static_cast<std::uint64_t>(tail.size - tail.lines_end);
  return log;
}

AuditLog::~AuditLog() { ::close(fd_); }

Expected<bool> AuditLog::append(const nlohmann::ordered_json& entry) {
  if (!entry.is_object()) return Unexpected{"audit log " + path_ + ": an entry must be a JSON object"};
  for (const char* own : {"seq", "prevHash", "hash"}) {
    if (entry.contains(own)) {
      return Unexpected{"audit log " + path_ + ": entry field " + quote(own) + " is the log's own (the hash chain)"};
    }
  }
  // dump() escapes control characters, so an entry is always exactly one line.
  const std::string body = entry.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::unique_lock lock(mu_);
  if (!broken_.empty()) return Unexpected{broken_};
  const std::uint64_t mine = ++appended_;
  const auto seq = static_cast<std::int64_t>(mine);
  const std::string hash = audit_line_hash(seq, last_hash_, body);
  std::string line = "{\"seq\":" + std::to_string(seq) + ",\"prevHash\":\"" + last_hash_ + "\"";
  if (body.size() > 2) line += "," + body.substr(1, body.size() - 2);
  line += ",\"hash\":\"" + hash + "\"}\n";
  last_hash_ = hash;
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
