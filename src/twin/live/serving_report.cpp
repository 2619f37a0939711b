#include "twin/live/serving_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include <date/tz.h>

#include "policy/tidal_windows.hpp"
#include "twin/live/platform.hpp"

namespace gpubank::twin::live {

namespace {

using Json = nlohmann::ordered_json;
constexpr double kMsPerHour = 3'600'000.0;

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

// Nearest-rank percentile of a sorted list.
std::int64_t percentile(const std::vector<std::int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

using std::chrono::sys_seconds;

// [begin, end) of wall time as virtual milliseconds within [0, horizon_ms).
void add_interval(PeakWindow& w, Timestamp start, std::int64_t horizon_ms, sys_seconds begin, sys_seconds end) {
  const auto ms = [&](sys_seconds t) {
    return std::clamp<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(t - start).count(), 0,
                                    horizon_ms);
  };
  const std::int64_t from = ms(begin), to = ms(end);
  if (from < to) w.intervals_ms.emplace_back(from, to);
}

// The occurrences of a TidalPolicy window over the run.
void add_window(PeakWindow& w, const policy::TidalPolicySpec& tidal, const policy::TidalWindow& window,
                Timestamp start, std::int64_t horizon_ms) {
  if (tidal.timezone.zone == nullptr) return;
  const auto from = std::chrono::floor<std::chrono::seconds>(start);
  const auto to = from + std::chrono::seconds(horizon_ms / 1000 + 1);
  for (const auto& i : policy::active_intervals({&window.start, &window.end}, *tidal.timezone.zone, from, to)) {
    add_interval(w, start, horizon_ms, i.begin, i.end);
  }
}

// "HH:MM" -> minutes after midnight.
std::optional<int> clock_minutes(std::string_view text) {
  if (text.size() != 5 || text[2] != ':') return std::nullopt;
  for (std::size_t i : {0U, 1U, 3U, 4U}) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  }
  const int h = (text[0] - '0') * 10 + (text[1] - '0');
  const int m = (text[3] - '0') * 10 + (text[4] - '0');
  if (h > 24 || m > 59 || (h == 24 && m != 0)) return std::nullopt;
  return h * 60 + m;
}

}  // namespace

Expected<std::map<std::string, PeakWindow>> peak_windows(const policy::PolicySet& policies, Timestamp start,
                                                         std::int64_t hours, const std::optional<std::string>& peak) {
  const std::int64_t horizon_ms = hours * 3'600'000;
  std::vector<std::string> services;
  const date::time_zone* zone = nullptr;
  std::string zone_name = "UTC";
  for (const auto& p : policies.policies()) {
    if (p.kind == policy::Kind::InferenceScalingPolicy) services.push_back(p.name());
    if (p.kind == policy::Kind::TidalPolicy && zone == nullptr) {
      zone = p.as<policy::TidalPolicySpec>().timezone.zone;
      if (zone != nullptr) zone_name = p.as<policy::TidalPolicySpec>().timezone.name;
    }
  }
  std::map<std::string, PeakWindow> out;
  if (peak) {
    const auto dash = peak->find('-');
    const auto from = dash == std::string::npos ? std::nullopt : clock_minutes(std::string_view(*peak).substr(0, dash));
    const auto to = dash == std::string::npos ? std::nullopt : clock_minutes(std::string_view(*peak).substr(dash + 1));
    if (!from || !to) return Unexpected{"--peak: must be HH:MM-HH:MM (local time), got \"" + *peak + "\""};
    if (*from == *to) return Unexpected{"--peak: the range " + *peak + " is empty"};
    if (zone == nullptr) zone = date::locate_zone("Etc/UTC");
    PeakWindow w;
    w.source = "--peak " + *peak + " (" + zone_name + ")";
    // Every local day the run touches, from the day before its start (a range over midnight).
    const auto first_local = std::chrono::floor<date::days>(zone->to_local(std::chrono::floor<std::chrono::seconds>(start)));
    for (auto day = first_local - date::days(1); ; day += date::days(1)) {
      const auto at = [&](int minutes) {
        return zone->to_sys(date::local_seconds(day) + std::chrono::minutes(minutes), date::choose::earliest);
      };
      const sys_seconds begin = at(*from);
      const sys_seconds end = *to > *from ? at(*to) : zone->to_sys(date::local_seconds(day + date::days(1)) +
                                                                     std::chrono::minutes(*to), date::choose::earliest);
      if (std::chrono::duration_cast<std::chrono::milliseconds>(begin - start).count() >= horizon_ms) break;
      add_interval(w, start, horizon_ms, begin, end);
    }
    for (const auto& name : services) out[name] = w;
    return out;
  }
  // The largest-floor window per service among the TidalPolicies that target it, and the
  // platform's (every TidalPolicy's largest-floor window) for the others.
  PeakWindow platform;
  std::map<std::string, std::pair<int, PeakWindow>> targeted;
  for (const auto& p : policies.policies()) {
    if (p.kind != policy::Kind::TidalPolicy) continue;
    const auto& tidal = p.as<policy::TidalPolicySpec>();
    const policy::TidalWindow* largest = nullptr;
    int largest_floor = -1;
    for (const auto& w : tidal.windows) {
      if (!w.inference_replica_floor) continue;
      int floor = w.inference_replica_floor->all.value_or(0);
      for (const auto& [_, f] : w.inference_replica_floor->per_policy) floor = std::max(floor, f);
      if (floor > largest_floor) largest = &w, largest_floor = floor;
    }
    if (largest != nullptr) {
      platform.source += (platform.source.empty() ? "" : ", ") + ("TidalPolicy " + p.name() + " window " + largest->name);
      add_window(platform, tidal, *largest, start, horizon_ms);
    }
    for (const auto& name : tidal.targets.inference_policies) {
      const auto window = tidal.largest_floor_window(name);
      if (!window) continue;
      auto& best = targeted[name];
      if (window->second <= best.first && !best.second.source.empty()) continue;
      best.first = window->second;
      best.second = PeakWindow{"TidalPolicy " + p.name() + " window " + window->first->name, {}};
      add_window(best.second, tidal, *window->first, start, horizon_ms);
    }
  }
  for (const auto& name : services) {
    if (const auto it = targeted.find(name); it != targeted.end()) {
      out[name] = it->second.second;
    } else if (!platform.source.empty()) {
      out[name] = platform;
    } else {
      out[name] = PeakWindow{"the whole run (no TidalPolicy window)", {{0, horizon_ms}}};
    }
  }
  for (auto& [_, w] : out) {  // several policies' windows may overlap: merge
    std::sort(w.intervals_ms.begin(), w.intervals_ms.end());
    std::vector<std::pair<std::int64_t, std::int64_t>> merged;
    for (const auto& i : w.intervals_ms) {
      if (!merged.empty() && i.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, i.second);
      } else {
        merged.push_back(i);
      }
    }
    w.intervals_ms = std::move(merged);
  }
  return out;
}

Expected<std::vector<ServingOutcome>> run_serving_day(const policy::PolicySet& policies, const DayOptions& day,
                                                      std::shared_ptr<const cluster::Inventory> inventory,
                                                      const std::function<void(std::int64_t)>& progress,
                                                      std::vector<run::Event>* events, run::RunResult* stats_out,
                                                      const std::map<std::string, PeakWindow>* peaks) {
  run::RunOptions options;
  options.inventory = std::move(inventory);
  auto platform = Platform::create(policies, day, options);
  if (!platform) return Unexpected{platform.error()};
  Platform& p = **platform;
  constexpr std::int64_t kHour = 3'600'000;
  for (VirtualTime t = kHour; t <= p.end(); t += kHour) {
    if (!p.advance_to(t)) return Unexpected{p.error()};
    if (progress) progress(t / kHour);
  }
  if (!p.advance_to(p.end())) return Unexpected{p.error()};
  const run::RunResult stats = p.stats();
  if (events != nullptr) *events = p.result().events;
  if (stats_out != nullptr) *stats_out = stats;
  std::vector<ServingOutcome> out;
  const auto reports = p.control().report();
  const auto services = p.serving().stats();
  for (const auto& r : reports) {
    const policy::PolicyObject* object = policies.find(policy::Kind::InferenceScalingPolicy, r.policy);
    if (object == nullptr) continue;
    const auto& spec = object->as<policy::InferenceScalingPolicySpec>();
    ServingOutcome o;
    o.control = r.control;
    o.seed = day.seed;
    if (day.serving_control == DayOptions::ServingControl::Static) o.static_replicas = r.static_replicas;
    o.policy = r.policy;
    o.pool = spec.resource_pool;
    o.business_group = spec.business_group;
    o.ttft_target_ms = spec.scale_up.ttft_p95 ? spec.scale_up.ttft_p95->milliseconds() : 0;
    if (o.ttft_target_ms > 0) {
      const auto slo = p.serving().slo(r.policy, o.ttft_target_ms, 0, p.end());
      o.minutes = slo.minutes;
      o.minutes_within = slo.within;
      o.requests = slo.requests;
      o.unanswered = slo.unanswered;
      const PeakWindow* peak = nullptr;
      if (peaks != nullptr) {
        if (const auto it = peaks->find(r.policy); it != peaks->end()) peak = &it->second;
      }
      if (peak == nullptr) {
        o.peak_minutes = o.minutes;
        o.peak_minutes_within = o.minutes_within;
      } else {
        for (const auto& [from, to] : peak->intervals_ms) {
          const auto in = p.serving().slo(r.policy, o.ttft_target_ms, from, to, p.end());
          o.peak_minutes += in.minutes;
          o.peak_minutes_within += in.within;
        }
      }
    }
    for (const auto& s : services) {
      if (s.policy == r.policy) o.cut = s.snapshot.aborted;
    }
    o.inference_gpu_hours = static_cast<double>(r.replica_gpu_ms) / kMsPerHour;
    for (const auto& g : stats.groups) {
      if (g.pool == o.pool && g.business_group != o.business_group) o.training_gpu_hours += static_cast<double>(g.used_gpu_ms) / kMsPerHour;
    }
    o.peak_replicas = r.peak_replicas;
    o.scale_ups = r.scale_ups;
    o.scale_downs = r.scale_downs;
    o.blocked = r.blocked;
    o.reaction_ms = r.reaction_ms;
    std::sort(o.reaction_ms.begin(), o.reaction_ms.end());
    out.push_back(std::move(o));
  }
  return out;
}

Json serving_json(const std::vector<ServingOutcome>& outcomes) {
  Json runs = Json::array();
  for (const auto& o : outcomes) {
    Json j = Json::object();
    j["control"] = o.control;
    j["seed"] = o.seed;
    if (o.static_replicas > 0) j["staticReplicas"] = o.static_replicas;
    j["policy"] = o.policy;
    j["pool"] = o.pool;
    j["businessGroup"] = o.business_group;
    j["ttftTargetSeconds"] = static_cast<double>(o.ttft_target_ms) / 1000.0;
    j["sloAttainment"] = o.attainment();
    j["minutes"] = o.minutes;
    j["minutesWithinTarget"] = o.minutes_within;
    j["peakSloAttainment"] = o.peak_attainment();
    j["peakMinutes"] = o.peak_minutes;
    j["peakMinutesWithinTarget"] = o.peak_minutes_within;
    j["requests"] = o.requests;
    j["unanswered"] = o.unanswered;
    j["cut"] = o.cut;
    j["inferenceGpuHours"] = o.inference_gpu_hours;
    j["trainingGpuHoursOnPool"] = o.training_gpu_hours;
    j["peakReplicas"] = o.peak_replicas;
    j["scaleUps"] = o.scale_ups;
    j["scaleDowns"] = o.scale_downs;
    j["scaleUpBlocked"] = o.blocked;
    Json reaction = Json::object();
    reaction["episodes"] = static_cast<std::int64_t>(o.reaction_ms.size());
    if (!o.reaction_ms.empty()) {
      reaction["p50Seconds"] = static_cast<double>(percentile(o.reaction_ms, 0.5)) / 1000.0;
      reaction["maxSeconds"] = static_cast<double>(o.reaction_ms.back()) / 1000.0;
    }
    j["scaleOutReaction"] = std::move(reaction);
    runs.push_back(std::move(j));
  }
  // Each service's runs against its first of the same seed (the autoscaler when all are
  // compared).
  Json comparison = Json::array();
  std::map<std::pair<std::string, std::uint64_t>, const ServingOutcome*> first;
  for (const auto& o : outcomes) {
    const auto [at, fresh] = first.emplace(std::pair{o.policy, o.seed}, &o);
    if (fresh) continue;
    const ServingOutcome& base = *at->second;
    Json c = Json::object();
    c["policy"] = o.policy;
    c["seed"] = o.seed;
    c["control"] = base.control;
    c["against"] = o.control;
    c["inferenceGpuHoursSaved"] = o.inference_gpu_hours - base.inference_gpu_hours;
    c["inferenceGpuHoursSavedShare"] =
        o.inference_gpu_hours > 0 ? (o.inference_gpu_hours - base.inference_gpu_hours) / o.inference_gpu_hours : 0.0;
    c["trainingGpuHoursGained"] = base.training_gpu_hours - o.training_gpu_hours;
    c["sloAttainment"] = base.attainment();
    c["againstSloAttainment"] = o.attainment();
    comparison.push_back(std::move(c));
  }
  Json out = Json::object();
  out["runs"] = std::move(runs);
  out["comparison"] = std::move(comparison);
  return out;
}

std::string serving_text(const std::vector<ServingOutcome>& outcomes) {
  std::ostringstream out;
  const auto name_of = [](const ServingOutcome& o) {
    return o.policy + " / " + o.control + (o.static_replicas > 0 ? " x" + std::to_string(o.static_replicas) : "");
  };
  std::size_t width = 43;  // the column fits the longest name
  for (const auto& o : outcomes) width = std::max(width, name_of(o).size() + 1);
  std::string header = "SERVICE / CONTROL";
  header.resize(width, ' ');
  out << header << "SEED  PEAK SLO  SLO(TTFT p95)  MINUTES     INFERENCE GPU-h  "
                   "TRAINING GPU-h  PEAK  UP/DOWN  REACTION p50/max  CUT\n";
  for (const auto& o : outcomes) {
    std::string name = name_of(o);
    std::string seed = std::to_string(o.seed);
    seed.resize(std::max<std::size_t>(seed.size() + 1, 6), ' ');
    std::string peak_slo = fixed(100.0 * o.peak_attainment(), 1) + " %";
    peak_slo.resize(10, ' ');
    name.resize(width, ' ');
    std::string minutes = std::to_string(o.minutes_within) + "/" + std::to_string(o.minutes);
    minutes.resize(std::max<std::size_t>(minutes.size() + 1, 12), ' ');
    std::string slo = fixed(100.0 * o.attainment(), 1) + " %";
    slo.resize(15, ' ');
    std::string inf = fixed(o.inference_gpu_hours, 1);
    inf.resize(17, ' ');
    std::string train = fixed(o.training_gpu_hours, 1);
    train.resize(16, ' ');
    std::string peak = std::to_string(o.peak_replicas);
    peak.resize(6, ' ');
    std::string updown = std::to_string(o.scale_ups) + "/" + std::to_string(o.scale_downs);
    updown.resize(9, ' ');
    std::string reaction = o.reaction_ms.empty() ? "-" : fixed(static_cast<double>(percentile(o.reaction_ms, 0.5)) / 1000.0, 0) +
                                                             "/" + fixed(static_cast<double>(o.reaction_ms.back()) / 1000.0, 0) + " s";
    reaction.resize(18, ' ');
    out << name << seed << peak_slo << slo << minutes << inf << train << peak << updown << reaction << o.cut << '\n';
  }
  return out.str();
}

}  // namespace gpubank::twin::live
