#include "k8s/leader_election.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <mutex>

#include "k8s/apply.hpp"  // micro_time

namespace gpubank::k8s {

using namespace std::chrono;

namespace {

bool digits(std::string_view s, std::size_t at, std::size_t n, int& out) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

Expected<bool> read_int(const Json& spec, const char* field, int& out) {
  const auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return true;
  if (!it->is_number_integer()) return Unexpected{std::string("spec.") + field + ": not an integer"};
  const auto v = it->get<std::int64_t>();
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    return Unexpected{std::string("spec.") + field + ": out of range: " + std::to_string(v)};
  }
  out = static_cast<int>(v);
  return true;
}

Expected<bool> read_time(const Json& spec, const char* field, std::optional<system_clock::time_point>& out) {
  const auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return true;
  if (!it->is_string()) return Unexpected{std::string("spec.") + field + ": not a string"};
  out = parse_rfc3339(it->get<std::string>());
  if (!out) return Unexpected{std::string("spec.") + field + ": not an RFC 3339 time: \"" + it->get<std::string>() + "\""};
  return true;
}

}  // namespace

std::optional<system_clock::time_point> parse_rfc3339(std::string_view s) {
  // 2006-01-02T15:04:05[.fraction](Z|+07:00)
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!(digits(s, 0, 4, y) && s.size() > 19 && s[4] == '-' && digits(s, 5, 2, mo) && s[7] == '-' &&
        digits(s, 8, 2, d) && s[10] == 'T' && digits(s, 11, 2, h) && s[13] == ':' && digits(s, 14, 2, mi) &&
        s[16] == ':' && digits(s, 17, 2, sec))) {
    return std::nullopt;
  }
  if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
  const year_month_day date{year(y), month(static_cast<unsigned>(mo)), day(static_cast<unsigned>(d))};
  if (!date.ok()) return std::nullopt;
  std::size_t i = 19;
  nanoseconds fraction{0};
  if (s[i] == '.') {
    ++i;
    std::int64_t value = 0;
    std::size_t n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (n == 9) return std::nullopt;
      value = value * 10 + (s[i] - '0');
      ++n;
      ++i;
    }
    if (n == 0) return std::nullopt;
    for (std::size_t k = n; k < 9; ++k) value *= 10;
    fraction = nanoseconds(value);
  }
  minutes offset{0};
  if (i < s.size() && s[i] == 'Z') {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh = 0, om = 0;
    if (!(digits(s, i + 1, 2, oh) && i + 3 < s.size() && s[i + 3] == ':' && digits(s, i + 4, 2, om)) || oh > 23 ||
        om > 59) {
      return std::nullopt;
    }
    offset = hours(oh) + minutes(om);
    if (s[i] == '-') offset = -offset;
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  // In whole seconds first: system_clock counts nanoseconds, which reach only the years
  // 1678 to 2261; a time outside them is refused rather than overflowed.
  const sys_seconds utc = sys_days(date) + hours(h) + minutes(mi) + seconds(sec) - offset;
  constexpr auto kMin = ceil<seconds>(system_clock::duration::min()) + seconds(1);
  constexpr auto kMax = floor<seconds>(system_clock::duration::max()) - seconds(1);
  if (utc.time_since_epoch() < kMin || utc.time_since_epoch() > kMax) return std::nullopt;
  return time_point_cast<system_clock::duration>(utc) + duration_cast<system_clock::duration>(fraction);
}

Expected<LeaseRecord> lease_record(const Json& lease) {
  LeaseRecord r;
  if (!lease.is_object()) return Unexpected{"Lease: not a JSON object"};
  const auto it = lease.find("spec");
  if (it == lease.end() || it->is_null()) return r;
  const Json& spec = *it;
  if (!spec.is_object()) return Unexpected{"spec: not an object"};
  const auto holder = spec.find("holderIdentity");
  if (holder != spec.end() && !holder->is_null()) {
    if (!holder->is_string()) return Unexpected{"spec.holderIdentity: not a string"};
    r.holder_identity = holder->get<std::string>();
  }
  for (auto res : {read_int(spec, "leaseDurationSeconds", r.lease_duration_seconds),
                   read_int(spec, "leaseTransitions", r.lease_transitions),
                   read_time(spec, "acquireTime", r.acquire_time), read_time(spec, "renewTime", r.renew_time)}) {
    if (!res.ok()) return Unexpected{res.error()};
  }
  return r;
}

Json lease_spec(const LeaseRecord& r) {
  Json spec{{"holderIdentity", r.holder_identity},
            {"leaseDurationSeconds", r.lease_duration_seconds},
            {"leaseTransitions", r.lease_transitions}};
  if (r.acquire_time) spec["acquireTime"] = micro_time(*r.acquire_time);
  if (r.renew_time) spec["renewTime"] = micro_time(*r.renew_time);
  return spec;
}

Expected<bool> validate(const LeaderElectionOptions& o) {
  if (o.name.empty()) return Unexpected{"leader election: the Lease name is empty"};
  if (o.namespace_name.empty()) return Unexpected{"leader election: the Lease namespace is empty"};
  if (o.identity.empty()) return Unexpected{"leader election: the identity is empty"};
  if (o.retry_period <= seconds(0)) return Unexpected{"leader election: retry_period must be positive"};
  if (!(o.jitter >= 0.0)) return Unexpected{"leader election: jitter must not be negative"};
  if (o.lease_duration <= o.renew_deadline) {
    return Unexpected{"leader election: lease_duration (" + std::to_string(o.lease_duration.count()) +
                      " s) must be greater than renew_deadline (" + std::to_string(o.renew_deadline.count()) + " s)"};
  }
  const double floor_s = static_cast<double>(o.retry_period.count()) * std::max(1.0, o.jitter);
  if (static_cast<double>(o.renew_deadline.count()) <= floor_s) {
    return Unexpected{"leader election: renew_deadline (" + std::to_string(o.renew_deadline.count()) +
                      " s) must be greater than retry_period * max(1, jitter) (" + std::to_string(floor_s) + " s)"};
  }
  return true;
}

LeaseObservation observe(const LeaseObservation& previous, bool exists, LeaseRecord record,
                         std::string resource_version, Json object, steady_clock::time_point now) {
  LeaseObservation next;
  const bool same = previous.exists == exists && previous.record == record;
  next.exists = exists;
  next.record = std::move(record);
  next.resource_version = std::move(resource_version);
  next.object = std::move(object);
  next.observed_at = same ? previous.observed_at : now;
  return next;
}

LeaseDecision decide_lease(const LeaseObservation& observed, steady_clock::time_point now,
                           system_clock::time_point wall_now, const LeaderElectionOptions& options) {
  const auto wall = time_point_cast<system_clock::duration>(floor<microseconds>(wall_now));
  LeaseDecision d;
  d.record.holder_identity = options.identity;
  d.record.lease_duration_seconds = static_cast<int>(options.lease_duration.count());
  d.record.acquire_time = wall;
  d.record.renew_time = wall;
  if (!observed.exists) {
    d.action = LeaseAction::kCreate;
    return d;
  }
  const LeaseRecord& old = observed.record;
  const bool ours = old.holder_identity == options.identity;
  if (!old.holder_identity.empty() && !ours) {
    // Valid while our own clock says the record changed less than its duration ago.
    const auto expiry = observed.observed_at + seconds(old.lease_duration_seconds);
    if (expiry > now) {
      d.action = LeaseAction::kWait;
      d.record = {};
      d.expires_in = expiry - now;
      return d;
    }
  }
  d.action = LeaseAction::kUpdate;
  if (ours) {
    d.renewal = true;
    if (old.acquire_time) d.record.acquire_time = old.acquire_time;
    d.record.lease_transitions = old.lease_transitions;
  } else {
    // Saturating: a Lease may carry any int32 (a hand-edited one), and overflow is UB.
    d.record.lease_transitions =
        old.lease_transitions == std::numeric_limits<int>::max() ? old.lease_transitions : old.lease_transitions + 1;
  }
  return d;
}

LeaseRecord released_record(const LeaseRecord& held, system_clock::time_point wall_now) {
  const auto wall = time_point_cast<system_clock::duration>(floor<microseconds>(wall_now));
  LeaseRecord r;
  r.lease_duration_seconds = 1;
  r.acquire_time = wall;
  r.renew_time = wall;
  r.lease_transitions = held.lease_transitions;
  return r;
}

std::string lease_collection_path(std::string_view namespace_name) {
  return "/apis/coordination.k8s.io/v1/namespaces/" + std::string(namespace_name) + "/leases";
}

std::string lease_path(std::string_view namespace_name, std::string_view name) {
  return lease_collection_path(namespace_name) + "/" + std::string(name);
}

// ---- LeaderElector ----

Expected<std::unique_ptr<LeaderElector>> LeaderElector::create(ClientConfig config, LeaderElectionOptions options,
                                                               LeaderCallbacks callbacks, ElectionClock clock,
                                                               TransportOptions transport) {
  auto valid = validate(options);
  if (!valid.ok()) return Unexpected{valid.error()};
  // The loop is the retry: a request retried inside the transport for half a minute would
  // outlive the renew deadline. And no request may outlast the deadline either.
  transport.retry.max_attempts = 1;
  const auto deadline = duration_cast<milliseconds>(options.renew_deadline);
  transport.read_timeout = std::min(transport.read_timeout, deadline);
  transport.connect_timeout = std::min(transport.connect_timeout, deadline);
  auto t = Transport::create(std::move(config), std::move(transport));
  if (!t.ok()) return Unexpected{"leader election: " + t.error()};
  return std::unique_ptr<LeaderElector>(
      new LeaderElector(std::move(t.value()), std::move(options), std::move(callbacks), std::move(clock)));
}

LeaderElector::LeaderElector(std::unique_ptr<Transport> transport, LeaderElectionOptions options,
                             LeaderCallbacks callbacks, ElectionClock clock)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      clock_(std::move(clock)),
      random_(options_.seed) {}

LeaderElector::~LeaderElector() = default;

steady_clock::time_point LeaderElector::now() const { return clock_.now ? clock_.now() : steady_clock::now(); }
system_clock::time_point LeaderElector::wall_now() const { return clock_.wall ? clock_.wall() : system_clock::now(); }

void LeaderElector::sleep(milliseconds d, const std::stop_token& stop) {
  if (clock_.sleep) {
    clock_.sleep(d, stop);
    return;
  }
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, d, [] { return false; });  // wakes on stop
}

void LeaderElector::set_observation(LeaseObservation next) {
  std::string holder;
  bool changed = false;
  {
    std::lock_guard lock(m_);
    changed = next.record.holder_identity != observed_.record.holder_identity || next.exists != observed_.exists;
    holder = next.record.holder_identity;
    observed_ = std::move(next);
  }
  if (changed && holder != options_.identity && callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
}

void LeaderElector::step_down() {
  {
    std::lock_guard lock(m_);
    if (!leading_) return;
    leading_ = false;
  }
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

namespace {

ApiError malformed_lease(const std::string& what, const std::string& request) {
  return client_error("MalformedResponse", what, request);
}

}  // namespace

ApiResult<bool> LeaderElector::try_acquire_or_renew() {
  const std::string path = lease_path(options_.namespace_name, options_.name);
  const auto fail = [this](ApiError e) -> ApiResult<bool> {
    std::lock_guard lock(m_);
    ++failures_;
    return e;
  };
  // Reads a Lease answer into an observation.
  const auto read = [&](const Response& res, const LeaseObservation& previous,
                        steady_clock::time_point at) -> Expected<LeaseObservation> {
    Json object = Json::parse(res.body, nullptr, false);
    auto record = lease_record(object);
    if (!record.ok()) return Unexpected{record.error()};
    std::string rv;
    if (object.contains("metadata") && object["metadata"].is_object()) rv = object["metadata"].value("resourceVersion", "");
    return observe(previous, true, std::move(record.value()), std::move(rv), std::move(object), at);
  };

  LeaseObservation current = observation();
  auto got = transport_->get(path);
  const auto read_at = now();
  if (got.ok()) {
    auto next = read(*got, current, read_at);
    if (!next.ok()) return fail(malformed_lease(next.error(), "GET " + path));
    current = std::move(next.value());
  } else if (got.error().http_status == 404) {
    current = observe(current, false, {}, "", Json(), read_at);
  } else {
    return fail(got.error());
  }
  set_observation(current);

  const auto decision = decide_lease(current, read_at, wall_now(), options_);
  if (decision.action == LeaseAction::kWait) {
    step_down();  // someone else holds a valid lease: we are not the leader, whatever we thought
    return false;
  }
  ApiResult<Response> written = ApiError{};
  if (decision.action == LeaseAction::kCreate) {
    const Json lease{{"apiVersion", "coordination.k8s.io/v1"},
                     {"kind", "Lease"},
                     {"metadata", {{"name", options_.name}, {"namespace", options_.namespace_name}}},
                     {"spec", lease_spec(decision.record)}};
    written = transport_->create(lease_collection_path(options_.namespace_name), lease.dump());
  } else {
    Json lease = current.object;
    lease["spec"] = lease_spec(decision.record);
    lease["metadata"]["resourceVersion"] = current.resource_version;  // optimistic concurrency
    written = transport_->replace(path, lease.dump());
  }
  if (!written.ok()) return fail(written.error());  // 409: lost a race; the next try reads again
  const auto written_at = now();
  auto next = read(*written, current, written_at);
  if (!next.ok()) return fail(malformed_lease(next.error(), "write " + path));
  set_observation(std::move(next.value()));
  bool started = false;
  {
    std::lock_guard lock(m_);
    last_renewal_ = read_at;  // the lease runs from before the write, to be safe
    started = !std::exchange(leading_, true);
  }
  if (started && callbacks_.on_started_leading) callbacks_.on_started_leading();
  return true;
}

ApiResult<bool> LeaderElector::release() {
  const LeaseObservation current = observation();
  if (!current.exists || current.record.holder_identity != options_.identity) return false;
  const std::string path = lease_path(options_.namespace_name, options_.name);
  Json lease = current.object;
  lease["spec"] = lease_spec(released_record(current.record, wall_now()));
  lease["metadata"]["resourceVersion"] = current.resource_version;
  step_down();
  auto written = transport_->replace(path, lease.dump());
  if (!written.ok()) {
    std::lock_guard lock(m_);
    ++failures_;
    return written.error();
  }
  Json object = Json::parse(written->body, nullptr, false);
  auto record = lease_record(object);
  if (record.ok()) {
    set_observation(observe(current, true, std::move(record.value()),
                            object.is_object() && object.contains("metadata") ? object["metadata"].value("resourceVersion", "") : "",
                            std::move(object), now()));
  }
  return true;
}

void LeaderElector::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    auto attempt = try_acquire_or_renew();
    bool leading = false;
    {
      std::lock_guard lock(m_);
      leading = leading_;
      // A leader that could not renew for renew_deadline steps down, whatever the error.
      if (leading && (!attempt.ok() || !*attempt) && now() - last_renewal_ >= options_.renew_deadline) leading = false;
    }
    if (!leading) step_down();
    if (stop.stop_requested()) break;
    auto wait = duration_cast<milliseconds>(options_.retry_period);
    if (!leading && options_.jitter > 0.0) {
      // Candidates retry at jittered times, so that replicas started together do not
      // contend in step (client-go's JitterUntil).
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      wait += milliseconds(static_cast<std::int64_t>(static_cast<double>(wait.count()) * options_.jitter * unit(random_)));
    }
    sleep(wait, stop);
  }
  step_down();
  if (options_.release_on_stop) (void)release();
}

bool LeaderElector::is_leader() const {
  const auto t = now();
  std::lock_guard lock(m_);
  return leading_ && t - last_renewal_ < options_.renew_deadline;
}

std::string LeaderElector::leader() const {
  std::lock_guard lock(m_);
  return observed_.exists ? observed_.record.holder_identity : std::string();
}

LeaseObservation LeaderElector::observation() const {
  std::lock_guard lock(m_);
  return observed_;
}

std::size_t LeaderElector::failures() const {
  std::lock_guard lock(m_);
  return failures_;
}

}  // namespace gpubank::k8s
