#include "twin/live/serving_comparison.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "twin/live/platform.hpp"

namespace gpubank::twin::live {

namespace {

using Json = nlohmann::ordered_json;
using Control = DayOptions::ServingControl;

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string percent(double share) { return fixed(100.0 * share, 1) + " %"; }

// One run of the day to make: a control at a seed, with static counts per service.
struct Task {
  Control control = Control::Autoscaler;
  std::uint64_t seed = 1;
  std::map<std::string, int> static_counts;
  std::string label;  // what the progress line adds (the floors probed)
  Expected<std::vector<ServingOutcome>> result = std::vector<ServingOutcome>{};
  std::vector<run::Event> events;
};

Task task(Control control, std::uint64_t seed, const std::map<std::string, int>& counts) {
  Task t;
  t.control = control;
  t.seed = seed;
  t.static_counts = counts;
  return t;
}

// Runs the tasks, `jobs` at a time; the first error (in task order) is returned.
Expected<bool> run_tasks(std::vector<Task>& tasks, const policy::PolicySet& policies, const ComparisonOptions& options,
                         const std::shared_ptr<const cluster::Inventory>& inventory,
                         const std::map<std::string, PeakWindow>& peaks,
                         const std::function<void(const std::string&)>& progress) {
  std::atomic<std::size_t> next{0};
  std::mutex progress_mutex;
  const auto worker = [&] {
    for (std::size_t i = next++; i < tasks.size(); i = next++) {
      Task& t = tasks[i];
      if (progress) {
        std::string line = std::string(to_string(t.control)) + ", seed " + std::to_string(t.seed);
        if (t.control == Control::Static) {
          for (const auto& [policy, n] : t.static_counts) line += ", " + policy + " x" + std::to_string(n);
        }
        line += t.label;
        const std::lock_guard lock(progress_mutex);
        progress(line);
      }
      DayOptions day = options.day;
      day.seed = t.seed;
      day.same_load_for_every_control = true;
      day.serving_control = t.control;
      day.static_replicas_by_policy = t.static_counts;
      t.result = run_serving_day(policies, day, inventory, {}, options.keep_events ? &t.events : nullptr, nullptr,
                                 &peaks);
    }
  };
  const int jobs = std::clamp(options.jobs, 1, static_cast<int>(std::max<std::size_t>(tasks.size(), 1)));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  for (const Task& t : tasks) {
    if (!t.result) {
      return Unexpected{std::string(to_string(t.control)) + ", seed " + std::to_string(t.seed) + ": " + t.result.error()};
    }
  }
  return true;
}

// The outcomes of tasks that ran, in task order.
std::vector<ServingOutcome> outcomes_of(std::vector<Task>& tasks) {
  std::vector<ServingOutcome> out;
  for (Task& t : tasks) {
    for (auto& o : *t.result) out.push_back(std::move(o));
  }
  return out;
}

std::vector<const policy::InferenceScalingPolicySpec*> specs_of(const policy::PolicySet& policies,
                                                                std::vector<std::string>& names) {
  std::vector<const policy::InferenceScalingPolicySpec*> out;
  for (const auto& p : policies.policies()) {
    if (p.kind != policy::Kind::InferenceScalingPolicy) continue;
    names.push_back(p.name());
    out.push_back(&p.as<policy::InferenceScalingPolicySpec>());
  }
  return out;
}

// Where a service's floor is set: the largest-floor window of the TidalPolicies that target
// it (the window peak_windows takes for its peak; the first wins a tie).
struct FloorSite {
  std::string tidal, window;
  int floor = 0;
};

std::optional<FloorSite> floor_site(const policy::PolicySet& policies, const std::string& name) {
  std::optional<FloorSite> best;
  for (const auto& p : policies.policies()) {
    if (p.kind != policy::Kind::TidalPolicy) continue;
    const auto window = p.as<policy::TidalPolicySpec>().largest_floor_window(name);
    if (window && (!best || window->second > best->floor)) best = FloorSite{p.name(), window->first->name, window->second};
  }
  return best;
}

// The policies with each searched service's window floor set to floors[service]. A floor
// given for every target (`all`) becomes one per target, so that only this service's moves.
policy::PolicySet with_floors(const policy::PolicySet& policies, const std::vector<FloorSearch>& sites,
                              const std::map<std::string, int>& floors) {
  policy::PolicySet out = policies;
  for (const FloorSearch& site : sites) {
    const auto n = floors.find(site.policy);
    if (n == floors.end()) continue;
    const policy::PolicyObject* found = out.find(policy::Kind::TidalPolicy, site.tidal_policy);
    if (found == nullptr) continue;
    policy::PolicyObject copy = *found;
    auto& spec = std::get<policy::TidalPolicySpec>(copy.spec);
    for (auto& w : spec.windows) {
      if (w.name != site.window || !w.inference_replica_floor) continue;
      auto& f = *w.inference_replica_floor;
      if (f.all) {
        for (const auto& target : spec.targets.inference_policies) f.per_policy.emplace(target, *f.all);
        f.all.reset();
      }
      f.per_policy[site.policy] = n->second;
    }
    out.upsert(std::move(copy));
  }
  return out;
}

std::string floors_label(const std::map<std::string, int>& floors) {
  std::string out;
  for (const auto& [policy, n] : floors) out += ", " + policy + " floor " + std::to_string(n);
  return out;
}

ControlSummary summarize(const std::string& policy, const std::string& control,
                         const std::vector<const ServingOutcome*>& runs) {
  ControlSummary s;
  s.policy = policy;
  s.control = control;
  s.seeds = static_cast<int>(runs.size());
  s.worst_peak_attainment = s.worst_attainment = runs.empty() ? 0.0 : 1.0;
  for (const ServingOutcome* o : runs) {
    s.mean_peak_attainment += o->peak_attainment();
    s.mean_attainment += o->attainment();
    s.worst_peak_attainment = std::min(s.worst_peak_attainment, o->peak_attainment());
    s.worst_attainment = std::min(s.worst_attainment, o->attainment());
    s.mean_inference_gpu_hours += o->inference_gpu_hours;
    s.mean_training_gpu_hours += o->training_gpu_hours;
    s.cut += o->cut;
  }
  if (!runs.empty()) {
    const auto n = static_cast<double>(runs.size());
    s.mean_peak_attainment /= n;
    s.mean_attainment /= n;
    s.mean_inference_gpu_hours /= n;
    s.mean_training_gpu_hours /= n;
  }
  return s;
}

// Rounds of runs, each run once per seed with one count per service (the outcomes of
// every service, in task order).
using Round = std::pair<std::map<std::string, int>, std::vector<ServingOutcome>>;

struct Bisection {
  std::map<std::string, int> found;  // the smallest count that meets the target (the range's top when none does)
  std::map<std::string, bool> met;
  std::vector<StaticProbe> probes;   // in the order probed
  std::vector<Round> rounds;
};

// Per service, the smallest n in its [lo, hi] whose worst peak attainment over the seeds is
// at least `target`, by bisection; all services are probed together, each at its own count
// (a settled service runs at its count), one round of `run_round` per step. With
// `lowest_first`, the first round probes every range's lower end (the policy's own value:
// when it meets the target, one round settles the search). Assumes a larger n never
// serves worse.
Expected<Bisection> bisect(std::map<std::string, std::pair<int, int>> range, bool lowest_first, std::size_t seeds,
                           double target,
                           const std::function<Expected<std::vector<ServingOutcome>>(const std::map<std::string, int>&)>& run_round) {
  Bisection out;
  std::map<std::string, std::map<int, std::vector<ServingOutcome>>> runs;  // service -> n -> per seed
  const auto worst_of = [&](const std::string& service, int n) {
    double worst = 1;
    for (const auto& o : runs[service][n]) worst = std::min(worst, o.peak_attainment());
    return worst;
  };
  for (bool first = true;; first = false) {
    std::map<std::string, int> probe;
    for (const auto& [service, r] : range) {
      if (first && lowest_first) {
        probe[service] = r.first;
      } else if (r.first < r.second || !runs[service].contains(r.first)) {
        probe[service] = r.first < r.second ? r.first + (r.second - r.first) / 2 : r.first;
      }
    }
    if (probe.empty()) break;
    std::map<std::string, int> counts = probe;
    for (const auto& [service, r] : range) counts.emplace(service, r.first);
    auto outcomes = run_round(counts);
    if (!outcomes) return Unexpected{outcomes.error()};
    for (const auto& o : *outcomes) {
      const auto n = counts.find(o.policy);
      if (n == counts.end()) continue;
      auto& per_seed = runs[o.policy][n->second];
      if (per_seed.size() < seeds) per_seed.push_back(o);
    }
    out.rounds.emplace_back(counts, std::move(*outcomes));
    for (const auto& [service, n] : probe) {
      auto& r = range[service];
      const double worst = worst_of(service, n);
      double mean = 0;
      for (const auto& o : runs[service][n]) mean += o.peak_attainment();
      mean /= static_cast<double>(std::max<std::size_t>(runs[service][n].size(), 1));
      out.probes.push_back({service, n, worst, mean});
      if (r.first == r.second) continue;  // the last candidate, run to report it
      if (worst >= target) {
        r.second = n;
      } else {
        r.first = n + 1;
      }
    }
  }
  for (const auto& [service, r] : range) {
    out.found[service] = r.first;
    out.met[service] = worst_of(service, r.first) >= target;
  }
  return out;
}

}  // namespace

Expected<std::vector<std::uint64_t>> parse_seeds(const std::string& text) {
  const auto number = [](std::string_view part) -> std::optional<std::uint64_t> {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc{} || end != part.data() + part.size()) return std::nullopt;
    return v;
  };
  constexpr std::uint64_t kMaxSeeds = 100;
  std::vector<std::uint64_t> out;
  std::set<std::uint64_t> seen;
  std::string_view rest(text);
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const auto dots = part.find("..");
    const auto lo = number(part.substr(0, dots));
    const auto hi = dots == std::string_view::npos ? lo : number(part.substr(dots + 2));
    if (!lo || !hi) {
      return Unexpected{"--seeds: \"" + std::string(part) + "\" is not a seed or a range FIRST..LAST of seeds"};
    }
    if (*hi < *lo) return Unexpected{"--seeds: the range " + std::string(part) + " ends before it starts"};
    if (*hi - *lo >= kMaxSeeds || out.size() + (*hi - *lo + 1) > kMaxSeeds) {
      return Unexpected{"--seeds: at most " + std::to_string(kMaxSeeds) + " seeds"};
    }
    for (std::uint64_t s = *lo;; ++s) {
      if (!seen.insert(s).second) return Unexpected{"--seeds: seed " + std::to_string(s) + " is given twice"};
      out.push_back(s);
      if (s == *hi) break;
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

Expected<ServingComparison> compare_serving(const policy::PolicySet& policies, const ComparisonOptions& options,
                                            std::shared_ptr<const cluster::Inventory> inventory,
                                            const std::function<void(const std::string&)>& progress) {
  if (options.seeds.empty()) return Unexpected{"--seeds: at least one seed"};
  if (options.controls.empty()) return Unexpected{"--control: at least one control"};
  if (!(options.slo_target > 0 && options.slo_target <= 1)) {
    return Unexpected{"--slo-target: must be in (0, 1], got " + fixed(options.slo_target, 3)};
  }
  ServingComparison out;
  out.options = options;
  auto peaks = peak_windows(policies, options.day.start, options.day.hours, options.peak);
  if (!peaks) return Unexpected{peaks.error()};
  out.peaks = std::move(*peaks);
  std::vector<std::string> names;
  const auto specs = specs_of(policies, names);
  const bool has_static = std::find(options.controls.begin(), options.controls.end(), Control::Static) !=
                          options.controls.end();
  if (options.static_replicas) {
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const int n = *options.static_replicas;
      if (n < 1 || n > specs[i]->max_replicas) {
        return Unexpected{"--static-replicas: " + std::to_string(n) + " is outside [1, maxReplicas] of " + names[i] +
                          " ([1, " + std::to_string(specs[i]->max_replicas) + "])"};
      }
      out.static_baseline[names[i]] = n;
    }
  }

  // The consistency check: what each service's GPUs can do at best, before any run.
  {
    DayOptions day = options.day;
    day.seed = options.seeds.front();
    run::RunOptions run_options;
    run_options.inventory = inventory;
    auto platform = Platform::create(policies, day, run_options);
    if (!platform) return Unexpected{platform.error()};
    out.feasibility = (*platform)->serving().feasibility();
    for (const auto& f : out.feasibility) {
      if (!f.reachable && progress) progress("warning: " + f.policy + ": " + f.why);
      if (!f.rate_warning.empty() && progress) progress("warning: " + f.policy + ": " + f.rate_warning);
    }
  }

  // The floor search: per service its peak window's floor, bisection from the policy's own
  // floor up, all services and seeds of a round together (autoscaler runs).
  std::vector<Round> floor_rounds;
  policy::PolicySet searched_policies;
  const policy::PolicySet* compared = &policies;
  if (options.search_floor) {
    std::map<std::string, std::pair<int, int>> range;  // [the policy's floor, maxReplicas]
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const auto site = floor_site(policies, names[i]);
      if (!site) continue;
      FloorSearch f;
      f.policy = names[i];
      f.tidal_policy = site->tidal;
      f.window = site->window;
      f.policy_floor = site->floor;
      out.floors.push_back(std::move(f));
      const int hi = std::max(1, specs[i]->max_replicas);
      range[names[i]] = {std::clamp(site->floor, 0, hi), hi};
    }
    auto searched = bisect(std::move(range), true, options.seeds.size(), options.slo_target,
                           [&](const std::map<std::string, int>& floors) -> Expected<std::vector<ServingOutcome>> {
                             std::vector<Task> tasks;
                             for (const std::uint64_t seed : options.seeds) {
                               tasks.push_back(task(Control::Autoscaler, seed, out.static_baseline));
                               tasks.back().label = floors_label(floors);
                             }
                             const policy::PolicySet probed = with_floors(policies, out.floors, floors);
                             if (auto ran = run_tasks(tasks, probed, options, inventory, out.peaks, progress); !ran) {
                               return Unexpected{ran.error()};
                             }
                             return outcomes_of(tasks);
                           });
    if (!searched) return Unexpected{searched.error()};
    for (auto& f : out.floors) {
      f.floor = searched->found.at(f.policy);
      f.met = searched->met.at(f.policy);
      for (const auto& p : searched->probes) {
        if (p.policy == f.policy) f.probes.push_back(p);
      }
    }
    if (!searched->found.empty()) {
      searched_policies = with_floors(policies, out.floors, searched->found);
      compared = &searched_policies;
    }
    // The autoscaler's reported runs are the round that ran every service at its floor.
    floor_rounds = std::move(searched->rounds);
    std::erase_if(floor_rounds, [&](const Round& r) { return r.first != searched->found; });
  }

  // The static search: bisection per service, all services and seeds of a round together.
  std::vector<Round> rounds;
  if (has_static && !options.static_replicas) {
    out.static_searched = true;
    std::map<std::string, std::pair<int, int>> range;  // [minReplicas, maxReplicas]
    for (std::size_t i = 0; i < specs.size(); ++i) {
      range[names[i]] = {std::max(1, specs[i]->min_replicas), std::max(1, specs[i]->max_replicas)};
    }
    auto searched = bisect(std::move(range), false, options.seeds.size(), options.slo_target,
                           [&](const std::map<std::string, int>& counts) -> Expected<std::vector<ServingOutcome>> {
                             std::vector<Task> tasks;
                             for (const std::uint64_t seed : options.seeds) tasks.push_back(task(Control::Static, seed, counts));
                             if (auto ran = run_tasks(tasks, *compared, options, inventory, out.peaks, progress); !ran) {
                               return Unexpected{ran.error()};
                             }
                             return outcomes_of(tasks);
                           });
    if (!searched) return Unexpected{searched.error()};
    out.static_baseline = std::move(searched->found);
    out.static_met = std::move(searched->met);
    out.probes = std::move(searched->probes);
    rounds = std::move(searched->rounds);
  }

  // The controls, each over every seed (static at the baseline: from the search's runs).
  for (const Control control : options.controls) {
    if (control == Control::Autoscaler && !floor_rounds.empty() && !options.keep_events) {
      out.runs.insert(out.runs.end(), floor_rounds.front().second.begin(), floor_rounds.front().second.end());
      continue;
    }
    if (control == Control::Static && out.static_searched && !options.keep_events) {
      // A round that ran every service at its baseline is that run; else (the services
      // settled in different rounds) the baseline runs once more, all services together.
      const auto round = std::find_if(rounds.begin(), rounds.end(),
                                      [&](const auto& r) { return r.first == out.static_baseline; });
      if (round != rounds.end()) {
        out.runs.insert(out.runs.end(), round->second.begin(), round->second.end());
        continue;
      }
    }
    std::vector<Task> tasks;
    for (const std::uint64_t seed : options.seeds) tasks.push_back(task(control, seed, out.static_baseline));
    if (auto ran = run_tasks(tasks, *compared, options, inventory, out.peaks, progress); !ran) {
      return Unexpected{ran.error()};
    }
    for (Task& t : tasks) {
      for (auto& o : *t.result) out.runs.push_back(std::move(o));
      if (options.keep_events) out.events[std::string(to_string(control)) + "." + std::to_string(t.seed)] = std::move(t.events);
    }
    if (control == Control::Static) {
      for (const auto& name : names) {
        double worst = 1;
        for (const auto& o : out.runs) {
          if (o.policy == name && o.control == "static") worst = std::min(worst, o.peak_attainment());
        }
        out.static_met[name] = worst >= options.slo_target;
      }
    }
  }

  // Summaries per service and control, against static provisioning when it ran.
  for (const auto& name : names) {
    std::optional<double> static_hours;
    for (const Control control : options.controls) {
      const std::string c(to_string(control));
      std::vector<const ServingOutcome*> runs;
      for (const auto& o : out.runs) {
        if (o.policy == name && o.control == c) runs.push_back(&o);
      }
      if (runs.empty()) continue;
      out.summaries.push_back(summarize(name, c, runs));
      if (control == Control::Static) static_hours = out.summaries.back().mean_inference_gpu_hours;
    }
    if (!static_hours || *static_hours <= 0) continue;
    for (auto& s : out.summaries) {
      if (s.policy != name || s.control == "static") continue;
      s.gpu_hours_saved_share = (*static_hours - s.mean_inference_gpu_hours) / *static_hours;
      s.meets_goal = s.worst_peak_attainment >= options.slo_target && *s.gpu_hours_saved_share >= options.saving_goal;
    }
  }
  return out;
}

Json comparison_json(const ServingComparison& c) {
  Json runs = serving_json(c.runs)["runs"];
  Json peaks = Json::object();
  for (const auto& [policy, w] : c.peaks) {
    Json j = Json::object();
    j["source"] = w.source;
    std::int64_t minutes = 0;
    Json intervals = Json::array();
    for (const auto& [from, to] : w.intervals_ms) {
      intervals.push_back({{"fromSeconds", from / 1000}, {"toSeconds", to / 1000}});
      minutes += (to - from) / 60'000;
    }
    j["intervals"] = std::move(intervals);
    j["minutes"] = minutes;
    peaks[policy] = std::move(j);
  }
  Json baseline = Json::array();
  for (const auto& [policy, n] : c.static_baseline) {
    Json b = Json::object();
    b["policy"] = policy;
    b["replicas"] = n;
    b["searched"] = c.static_searched;
    if (const auto met = c.static_met.find(policy); met != c.static_met.end()) b["meetsSloTarget"] = met->second;
    Json probes = Json::array();
    for (const auto& p : c.probes) {
      if (p.policy != policy) continue;
      probes.push_back({{"replicas", p.replicas},
                        {"worstPeakSloAttainment", p.worst_peak_attainment},
                        {"meanPeakSloAttainment", p.mean_peak_attainment}});
    }
    if (c.static_searched) b["probes"] = std::move(probes);
    baseline.push_back(std::move(b));
  }
  Json summaries = Json::array();
  for (const auto& s : c.summaries) {
    Json j = Json::object();
    j["policy"] = s.policy;
    j["control"] = s.control;
    j["seeds"] = s.seeds;
    j["peakSloAttainment"] = {{"mean", s.mean_peak_attainment}, {"worst", s.worst_peak_attainment}};
    j["sloAttainment"] = {{"mean", s.mean_attainment}, {"worst", s.worst_attainment}};
    j["meanInferenceGpuHours"] = s.mean_inference_gpu_hours;
    j["meanTrainingGpuHoursOnPool"] = s.mean_training_gpu_hours;
    j["cut"] = s.cut;
    if (s.gpu_hours_saved_share) j["gpuHoursSavedAgainstStatic"] = *s.gpu_hours_saved_share;
    if (s.meets_goal) j["meetsGoal"] = *s.meets_goal;
    summaries.push_back(std::move(j));
  }
  Json out = Json::object();
  Json seeds = Json::array();
  for (const auto s : c.options.seeds) seeds.push_back(s);
  out["seeds"] = std::move(seeds);
  out["sloTarget"] = c.options.slo_target;
  out["savingGoal"] = c.options.saving_goal;
  out["peakWindows"] = std::move(peaks);
  out["staticBaseline"] = std::move(baseline);
  if (c.options.search_floor) {
    Json floors = Json::array();
    for (const auto& f : c.floors) {
      Json probes = Json::array();
      for (const auto& p : f.probes) {
        probes.push_back({{"floor", p.replicas},
                          {"worstPeakSloAttainment", p.worst_peak_attainment},
                          {"meanPeakSloAttainment", p.mean_peak_attainment}});
      }
      floors.push_back({{"policy", f.policy},
                        {"tidalPolicy", f.tidal_policy},
                        {"window", f.window},
                        {"policyFloor", f.policy_floor},
                        {"floor", f.floor},
                        {"meetsSloTarget", f.met},
                        {"probes", std::move(probes)}});
    }
    out["tidalFloors"] = std::move(floors);
  }
  Json feasibility = Json::array();
  for (const auto& f : c.feasibility) feasibility.push_back(feasibility_json(f));
  out["feasibility"] = std::move(feasibility);
  out["summary"] = std::move(summaries);
  out["runs"] = std::move(runs);
  return out;
}

std::string comparison_text(const ServingComparison& c) {
  std::ostringstream out;
  out << serving_text(c.runs);
  out << '\n';
  for (const auto& [policy, w] : c.peaks) {
    std::int64_t minutes = 0;
    for (const auto& [from, to] : w.intervals_ms) minutes += (to - from) / 60'000;
    out << policy << ": peak window " << w.source << ", " << minutes << " minutes of the run\n";
  }
  for (const auto& [policy, n] : c.static_baseline) {
    out << policy << ": static baseline " << n << " replica" << (n == 1 ? "" : "s");
    if (c.static_searched) {
      const auto met = c.static_met.find(policy);
      out << (met != c.static_met.end() && met->second
                  ? " (the smallest count whose worst peak SLO attainment is at least " + percent(c.options.slo_target) + "; probed"
                  : " (no count up to maxReplicas reaches " + percent(c.options.slo_target) + " in every seed; probed");
      for (const auto& p : c.probes) {
        if (p.policy == policy) out << ' ' << p.replicas << ": " << percent(p.worst_peak_attainment);
      }
      out << ')';
    }
    out << '\n';
  }
  if (c.options.search_floor && c.floors.empty()) {
    out << "tidal floors: no TidalPolicy window sets an inferenceReplicaFloor for any service; nothing searched\n";
  }
  for (const auto& f : c.floors) {
    out << f.policy << ": inferenceReplicaFloor of TidalPolicy " << f.tidal_policy << " window " << f.window << " searched: "
        << f.floor << " (the policy sets " << f.policy_floor << "; "
        << (f.met ? "the smallest floor whose worst peak SLO attainment under the autoscaler is at least "
                  : "no floor up to maxReplicas reaches ")
        << percent(c.options.slo_target) << (f.met ? "" : " in every seed") << "; probed";
    for (const auto& p : f.probes) out << ' ' << p.replicas << ": " << percent(p.worst_peak_attainment);
    out << "); every control runs with it\n";
  }
  for (const auto& f : c.feasibility) {
    out << f.policy << ": " << f.task << " on " << f.gpu_model;
    if (f.tensor_parallel_size > 1) out << " x" << f.tensor_parallel_size;
    out << " (" << f.model << "): the p95 prompt (" << f.p95_prompt_tokens << " tokens) alone "
        << fixed(f.lone_p95_s * 1000, 1) << " ms";
    if (f.target_s) out << " against the " << fixed(*f.target_s * 1000, 0) << " ms target";
    out << "; at best " << fixed(f.max_replica_rps, 1) << " requests/s per replica, x" << f.max_replicas << " = "
        << fixed(f.max_replica_rps * f.max_replicas, 1) << " against a peak of " << fixed(f.peak_rps, 1);
    if (f.rate_target) out << "; rate target " << fixed(*f.rate_target, 1) << " requests/s per replica";
    out << '\n';
    if (!f.reachable) out << "  UNREACHABLE: " << f.why << '\n';
    if (!f.rate_warning.empty()) out << "  WARNING: " << f.rate_warning << '\n';
  }
  std::size_t width = 43;
  for (const auto& s : c.summaries) width = std::max(width, s.policy.size() + s.control.size() + 4);
  std::string header = "SERVICE / CONTROL";
  header.resize(width, ' ');
  out << '\n' << header << "SEEDS  PEAK SLO mean/worst  ALL-DAY SLO mean/worst  INFERENCE GPU-h  vs STATIC  GOAL\n";
  for (const auto& s : c.summaries) {
    std::string name = s.policy + " / " + s.control;
    name.resize(width, ' ');
    std::string seeds = std::to_string(s.seeds);
    seeds.resize(7, ' ');
    std::string peak = percent(s.mean_peak_attainment) + " / " + percent(s.worst_peak_attainment);
    peak.resize(std::max<std::size_t>(peak.size() + 1, 21), ' ');
    std::string all = percent(s.mean_attainment) + " / " + percent(s.worst_attainment);
    all.resize(std::max<std::size_t>(all.size() + 1, 24), ' ');
    std::string hours = fixed(s.mean_inference_gpu_hours, 1);
    hours.resize(17, ' ');
    // GPU-hours against the static baseline: -30.8 % is fewer, +13.6 % more.
    std::string saved = "-";
    if (s.gpu_hours_saved_share) {
      const double change = -100.0 * *s.gpu_hours_saved_share;
      saved = (change > 0 ? "+" : "") + fixed(change, 1) + " %";
    }
    saved.resize(11, ' ');
    const std::string goal = s.meets_goal ? (*s.meets_goal ? "met" : "not met") : "-";
    out << name << seeds << peak << all << hours << saved << goal << '\n';
  }
  out << "GOAL: worst-seed peak SLO attainment >= " << percent(c.options.slo_target) << " with at least "
      << percent(c.options.saving_goal) << " fewer inference GPU-hours than the static baseline.\n";
  return out.str();
}

}  // namespace gpubank::twin::live
