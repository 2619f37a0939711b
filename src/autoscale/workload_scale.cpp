#include "autoscale/workload_scale.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <utility>

#include "core/timestamp.hpp"
#include "kueue/objects.hpp"
#include "render/scaling.hpp"

namespace gpubank::autoscale {
namespace {

using Json = nlohmann::json;

std::string group_path(const std::string& api_version) {
  return api_version.find('/') == std::string::npos ? "/api/" + api_version : "/apis/" + api_version;
}

// A metav1.LabelSelector from its JSON; an error for anything the API server would refuse,
// since a selector this code misreads could select another workload's pods.
Expected<kueue::LabelSelector> decode_selector(const Json& j) {
  kueue::LabelSelector out;
  if (!j.is_object()) return Unexpected{std::string("spec.selector: must be an object")};
  if (j.contains("matchLabels")) {
    if (!j["matchLabels"].is_object()) return Unexpected{std::string("spec.selector.matchLabels: must be an object")};
    for (const auto& [k, v] : j["matchLabels"].items()) {
      if (!v.is_string()) return Unexpected{"spec.selector.matchLabels." + k + ": must be a string"};
      out.match_labels[k] = v.get<std::string>();
    }
  }
  if (j.contains("matchExpressions")) {
    if (!j["matchExpressions"].is_array()) return Unexpected{std::string("spec.selector.matchExpressions: must be a list")};
    for (const auto& e : j["matchExpressions"]) {
      kueue::LabelSelectorRequirement r;
      r.key = e.is_object() ? e.value("key", "") : "";
      const std::string op = e.is_object() ? e.value("operator", "") : "";
      using Op = kueue::LabelSelectorRequirement::Operator;
      if (op == "In") r.op = Op::In;
      else if (op == "NotIn") r.op = Op::NotIn;
      else if (op == "Exists") r.op = Op::Exists;
      else if (op == "DoesNotExist") r.op = Op::DoesNotExist;
      else return Unexpected{"spec.selector.matchExpressions: operator \"" + op + "\" is not In, NotIn, Exists or DoesNotExist"};
      if (r.key.empty()) return Unexpected{std::string("spec.selector.matchExpressions: key is required")};
      for (const auto& v : e.value("values", Json::array())) {
        if (!v.is_string()) return Unexpected{"spec.selector.matchExpressions." + r.key + ".values: must be strings"};
        r.values.push_back(v.get<std::string>());
      }
      out.match_expressions.push_back(std::move(r));
    }
  }
  // An empty selector would select every pod of the namespace; the apps/v1 API refuses it
  // for a Deployment, so one here is not a workload's.
  if (out.match_labels.empty() && out.match_expressions.empty()) {
    return Unexpected{std::string("spec.selector: empty (it would select every pod in the namespace)")};
  }
  return out;
}

std::map<std::string, std::string> labels_of(const Json& pod) {
  std::map<std::string, std::string> out;
  const Json meta = pod.value("metadata", Json::object());
  const Json labels = meta.value("labels", Json::object());
  for (const auto& [k, v] : labels.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

std::optional<int> int_field(const Json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_number_integer()) return std::nullopt;
  const auto v = o[key].get<std::int64_t>();
  if (v < 0 || v > INT32_MAX) return std::nullopt;
  return static_cast<int>(v);
}

Expected<Json> parse_object(const k8s::ApiResult<k8s::Response>& r, const std::string& what) {
  if (!r) return Unexpected{what + ": " + r.error().describe()};
  Json j = Json::parse(r->body, nullptr, false);
  if (!j.is_object()) return Unexpected{what + ": the answer is not a JSON object"};
  return j;
}

}  // namespace

Expected<nlohmann::json> selector_from_text(const std::string& text) {
  Json out = {{"matchLabels", Json::object()}, {"matchExpressions", Json::array()}};
  const auto trim = [](std::string v) {
    const auto b = v.find_first_not_of(' ');
    const auto e = v.find_last_not_of(' ');
    return b == std::string::npos ? std::string() : v.substr(b, e - b + 1);
  };
  // Split on commas outside parentheses.
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(trim(current));
  for (const auto& part : parts) {
    if (part.empty()) return Unexpected{"status.selector \"" + text + "\": an empty requirement"};
    const auto set_op = [&](const std::string& word) -> std::optional<std::size_t> {
      const auto at = part.find(" " + word + " ");
      return at == std::string::npos ? std::nullopt : std::optional<std::size_t>(at);
    };
    if (auto at = set_op("notin") ? set_op("notin") : set_op("in")) {
      const bool notin = set_op("notin").has_value();
      const std::string key = trim(part.substr(0, *at));
      const auto open = part.find('(', *at);
      const auto close = part.rfind(')');
      if (key.empty() || open == std::string::npos || close == std::string::npos || close < open) {
        return Unexpected{"status.selector \"" + text + "\": \"" + part + "\" is not key in (values)"};
      }
      Json values = Json::array();
      std::string list = part.substr(open + 1, close - open - 1);
      std::size_t start = 0;
      while (start <= list.size()) {
        const auto comma = std::min(list.find(',', start), list.size());
        if (auto v = trim(list.substr(start, comma - start)); !v.empty()) values.push_back(v);
        start = comma + 1;
      }
      out["matchExpressions"].push_back({{"key", key}, {"operator", notin ? "NotIn" : "In"}, {"values", values}});
    } else if (const auto ne = part.find("!="); ne != std::string::npos) {
      const std::string key = trim(part.substr(0, ne));
      if (key.empty()) return Unexpected{"status.selector \"" + text + "\": \"" + part + "\" has no key"};
      out["matchExpressions"].push_back({{"key", key}, {"operator", "NotIn"}, {"values", {trim(part.substr(ne + 2))}}});
    } else if (const auto eq = part.find('='); eq != std::string::npos) {
      const std::size_t value_at = part.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      const std::string key = trim(part.substr(0, eq));
      if (key.empty()) return Unexpected{"status.selector \"" + text + "\": \"" + part + "\" has no key"};
      out["matchLabels"][key] = trim(part.substr(value_at));
    } else if (part[0] == '!') {
      const std::string key = trim(part.substr(1));
      if (key.empty()) return Unexpected{"status.selector \"" + text + "\": \"" + part + "\" has no key"};
      out["matchExpressions"].push_back({{"key", key}, {"operator", "DoesNotExist"}});
    } else {
      out["matchExpressions"].push_back({{"key", part}, {"operator", "Exists"}});
    }
  }
  return out;
}

std::string WorkloadTarget::path() const {
  return group_path(api_version) + "/namespaces/" + namespace_name + "/" + plural + "/" + name;
}

std::string WorkloadTarget::describe() const { return kind + " " + namespace_name + "/" + name; }

Expected<WorkloadTarget> workload_target(const policy::InferenceScalingPolicySpec& spec) {
  const auto target = render::scale_target_of(spec);
  if (!target) {
    return Unexpected{"workloadRef " + spec.workload_ref.name +
                      " is a RayService: Ray Serve's autoscaler owns its replicas (no scale subresource)"};
  }
  std::string plural = target->kind;
  std::transform(plural.begin(), plural.end(), plural.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  plural += "s";  // deployments, leaderworkersets
  return WorkloadTarget{target->api_version, target->kind, std::move(plural), spec.workload_ref.namespace_, target->name};
}

// ---- tidal floors ----

Expected<TidalFloors> TidalFloors::create(const policy::PolicySet& set, const std::string& policy) {
  std::map<std::string, policy::InferenceScalingPolicySpec> specs;
  for (const auto& p : set.policies()) {
    if (p.kind == policy::Kind::InferenceScalingPolicy) specs.emplace(p.name(), p.as<policy::InferenceScalingPolicySpec>());
  }
  TidalFloors out;
  out.policy_ = policy;
  std::set<std::string> others;
  for (const auto& p : set.policies()) {
    if (p.kind != policy::Kind::TidalPolicy) continue;
    const auto& spec = p.as<policy::TidalPolicySpec>();
    const auto& names = spec.targets.inference_policies;
    if (std::find(names.begin(), names.end(), policy) == names.end()) continue;
    std::map<std::string, policy::InferenceScalingPolicySpec> targeted;
    for (const auto& n : names) {
      const auto it = specs.find(n);
      if (it == specs.end()) return Unexpected{"TidalPolicy " + p.name() + " targets " + n + ", which is not in the policies"};
      targeted.emplace(n, it->second);
      if (n != policy) others.insert(n);
    }
    auto controller = tidal::TidalController::create(p.name(), spec, std::move(targeted));
    if (!controller) return Unexpected{"TidalPolicy " + p.name() + ": " + controller.error()};
    out.controllers_.push_back(std::move(*controller));
  }
  out.others_.assign(others.begin(), others.end());
  return out;
}

Expected<TidalFloor> TidalFloors::step(std::chrono::sys_seconds now, int ready, int desired) {
  TidalFloor out;
  out.floor_in_force = desired;
  for (auto& c : controllers_) {
    tidal::Observed observed;
    observed[policy_] = {ready, desired, false};
    // This process scales one policy: the others a TidalPolicy targets are someone else's
    // (their own autoscaler's); their decisions and records are not read.
    for (const auto& o : others_) observed[o] = {0, 0, false};
    auto step = c.step(now, observed);
    if (!step) return Unexpected{c.object() + ": " + step.error()};
    for (const auto& d : step->decisions) {
      if (d.policy != policy_) continue;
      out.floor_in_force = std::max(out.floor_in_force, d.floor_in_force);
      out.scale_down_allowed = out.scale_down_allowed && d.scale_down_allowed;
      out.reasons.push_back(c.object() + ": tidal floor " + std::to_string(d.tidal_floor) +
                            (d.pinned ? " (frozen at " + std::to_string(*d.pinned) + ")" : "") +
                            (d.scale_down_allowed ? "" : ", scale-down held (prewarm failed)"));
    }
    for (auto& r : step->records) {
      if (r.object == c.object() || r.object == "InferenceScalingPolicy/" + policy_) out.records.push_back(std::move(r));
    }
  }
  return out;
}

// ---- the actuator ----

ScaleActuator::ScaleActuator(k8s::Transport& transport, WorkloadTarget target, const policy::InferenceScalingPolicySpec& spec,
                             TidalFloors tidal, ActuatorOptions options)
    : transport_(transport),
      target_(std::move(target)),
      spec_(spec),
      autoscaler_(spec),
      tidal_(std::move(tidal)),
      options_(std::move(options)),
      events_(options_.reporting_instance, [] { return std::chrono::system_clock::now(); }) {}

Expected<WorkloadState> ScaleActuator::read_workload() {
  const std::string path = target_.path();
  auto scale = parse_object(transport_.get(path + "/scale"), "GET " + target_.describe() + " scale");
  if (!scale) return Unexpected{scale.error()};
  auto workload = parse_object(transport_.get(path), "GET " + target_.describe());
  if (!workload) return Unexpected{workload.error()};
  WorkloadState out;
  const auto replicas = int_field((*scale).value("spec", Json::object()), "replicas");
  if (!replicas) return Unexpected{target_.describe() + ": its Scale has no spec.replicas within 0..2147483647"};
  out.replicas = *replicas;
  const Json scale_meta = (*scale).value("metadata", Json::object());
  out.resource_version = scale_meta.value("resourceVersion", "");
  if (out.resource_version.empty()) return Unexpected{target_.describe() + ": its Scale has no metadata.resourceVersion"};
  out.selector_text = (*scale).value("status", Json::object()).value("selector", "");
  const Json meta = (*workload).value("metadata", Json::object());
  out.uid = meta.value("uid", "");
  out.selector = (*workload).value("spec", Json::object()).value("selector", Json());
  if (out.selector.is_null()) {  // no LabelSelector in the spec: the Scale's
    auto parsed = selector_from_text(out.selector_text);
    if (!parsed) return Unexpected{target_.describe() + ": " + parsed.error()};
    out.selector = std::move(*parsed);
  }
  if (const auto s = decode_selector(out.selector); !s) return Unexpected{target_.describe() + ": " + s.error()};
  if ((*workload).contains("status")) out.ready = int_field((*workload)["status"], "readyReplicas").value_or(0);

  // Another autoscaler on the same workload (KEDA's HPA, a hand-made one).
  const std::string hpas = "/apis/autoscaling/v2/namespaces/" + target_.namespace_name + "/horizontalpodautoscalers";
  auto listed = transport_.get(hpas);
  if (!listed && listed.error().http_status != 404) return Unexpected{"GET " + hpas + ": " + listed.error().describe()};
  if (listed) {
    const Json list = Json::parse(listed->body, nullptr, false);
    for (const auto& h : list.is_object() ? list.value("items", Json::array()) : Json::array()) {
      const Json ref = h.value("spec", Json::object()).value("scaleTargetRef", Json::object());
      const std::string api = ref.value("apiVersion", "");
      const std::string group = api.substr(0, api.find('/'));
      const std::string our_group = target_.api_version.substr(0, target_.api_version.find('/'));
      if (ref.value("kind", "") == target_.kind && ref.value("name", "") == target_.name && (api.empty() || group == our_group)) {
        out.competing_autoscaler = "HorizontalPodAutoscaler " + target_.namespace_name + "/" +
                                   h.value("metadata", Json::object()).value("name", "");
        break;
      }
    }
  }
  return out;
}

std::vector<CostWrite> ScaleActuator::write_deletion_costs(const WorkloadState& state, const std::vector<DeletionCost>& costs) {
  std::vector<CostWrite> out;
  if (costs.empty()) return out;
  const auto selector = decode_selector(state.selector);
  const auto fail_all = [&](const std::string& why) {
    for (const auto& c : costs) out.push_back({c.replica, "", c.cost, why});
    return out;
  };
  if (!selector) return fail_all(selector.error());
  // The workload's pods: listed by its selector (the server filters; this side checks again).
  std::vector<Json> pods;
  std::string next;
  const std::string base = "/api/v1/namespaces/" + target_.namespace_name + "/pods?limit=500" +
                           (state.selector_text.empty() ? "" : "&labelSelector=" + k8s::query_escape(state.selector_text));
  for (int page = 0; page < 1000; ++page) {
    auto listed = parse_object(transport_.get(base + (next.empty() ? "" : "&continue=" + k8s::query_escape(next))), "list pods");
    if (!listed) return fail_all(listed.error());
    for (const auto& p : (*listed).value("items", Json::array())) {
      if (!p.is_object()) continue;
      const Json meta = p.value("metadata", Json::object());
      if (meta.contains("deletionTimestamp")) continue;  // already going
      if (selector->matches(labels_of(p))) pods.push_back(p);
    }
    next = (*listed).value("metadata", Json::object()).value("continue", "");
    if (next.empty()) break;
  }
  // A replica is a pod's name (Prometheus' pod label) or its address (a scraped page's
  // host:port). An address several pods share (hostNetwork) names none of them.
  std::string ambiguous;
  const auto resolve = [&](const std::string& replica) -> const Json* {
    const Json* by_address = nullptr;
    int addressed = 0;
    for (const auto& p : pods) {
      const std::string name = p["metadata"].value("name", "");
      if (replica == name) return &p;
      const std::string ip = p.value("status", Json::object()).value("podIP", "");
      if (!ip.empty() && (replica == ip || replica.starts_with(ip + ":"))) {
        by_address = &p;
        ++addressed;
      }
    }
    ambiguous = addressed > 1 ? std::to_string(addressed) + " pods of " + target_.describe() + " have that address" : "";
    return addressed == 1 ? by_address : nullptr;
  };
  for (const auto& c : costs) {
    CostWrite w{c.replica, "", c.cost, ""};
    const Json* pod = resolve(c.replica);
    if (pod == nullptr) {
      w.outcome = ambiguous.empty() ? "no pod of " + target_.describe() + " is named or addressed so" : ambiguous;
      out.push_back(std::move(w));
      continue;
    }
    w.pod = (*pod)["metadata"].value("name", "");
    const std::string value = std::to_string(c.cost);
    const Json annotations = (*pod)["metadata"].value("annotations", Json::object());
    const std::string key(kPodDeletionCostAnnotation);
    if (annotations.contains(key) && annotations[key] == value) {
      w.outcome = "unchanged";
    } else if (options_.dry_run) {
      w.outcome = "dry run";
    } else if (standby_) {
      w.outcome = "standby: not the leader";
    } else if (options_.may_write && !options_.may_write()) {
      w.outcome = "not written: no longer the leader";
    } else {
      Json patch;
      patch["metadata"]["annotations"][key] = value;
      // The resourceVersion makes the patch conditional: a pod replaced or changed since the
      // list is not annotated from stale figures.
      patch["metadata"]["resourceVersion"] = (*pod)["metadata"].value("resourceVersion", "");
      auto r = transport_.merge_patch("/api/v1/namespaces/" + target_.namespace_name + "/pods/" + w.pod, patch.dump());
      w.outcome = r ? "written" : r.error().describe();
    }
    out.push_back(std::move(w));
  }
  return out;
}

void ScaleActuator::add_capacity(ScaleSync& sync, const WorkloadState& state) const {
  if (!options_.cluster_objects || options_.policies == nullptr) return;
  auto objects = options_.cluster_objects();
  if (!objects) {
    sync.capacity_error = "the pool could not be read: " + objects.error();
    return;
  }
  auto pool = pool_view(*options_.policies, spec_, *objects);
  if (!pool) {
    sync.capacity_error = pool.error();
    return;
  }
  const auto selector = decode_selector(state.selector);
  if (!selector) {
    sync.capacity_error = selector.error();
    return;
  }
  std::vector<Json> own;
  for (const auto& p : objects->pods) {
    const Json meta = p.is_object() ? p.value("metadata", Json::object()) : Json::object();
    if (meta.value("namespace", "") == target_.namespace_name && selector->matches(labels_of(p))) own.push_back(p);
  }
  LiveCapacityInputs in;
  in.policy = options_.policy_name;
  in.spec = &spec_;
  in.phases = replica_phases(own);
  if (sync.step.reading) in.observation = sync.step.reading->observation;
  in.pool = std::move(*pool);
  in.serving_floor_replicas = sync.tidal ? sync.tidal->floor_in_force : spec_.min_replicas;
  sync.capacity = live_capacity(*options_.policies, in);
}

ScaleSync ScaleActuator::sync(const std::function<Expected<SignalReading>(std::int64_t)>& read_signals, std::int64_t now_ms) {
  // The objects come from the API server: a field of an unexpected type (a hostile or
  // broken server, an object another controller mangled) ends this sync with its error;
  // what was written before it stays written and the next sync reads again.
  try {
    return sync_once(read_signals, now_ms);
  } catch (const nlohmann::json::exception& e) {
    ScaleSync out;
    out.error = "a malformed object from the API server: " + std::string(e.what());
    out.decision = "stopped: " + out.error;
    return out;
  }
}

ScaleSync ScaleActuator::sync_once(const std::function<Expected<SignalReading>(std::int64_t)>& read_signals,
                                   std::int64_t now_ms) {
  auto state = read_workload();
  if (!state) {
    ScaleSync out;
    out.error = state.error();
    out.decision = "nothing written: the workload could not be read";
    return out;
  }
  ScaleSync out = decide_and_write(*state, read_signals, now_ms);
  add_capacity(out, *state);
  return out;
}

ScaleSync ScaleActuator::decide_and_write(const WorkloadState& state,
                                          const std::function<Expected<SignalReading>(std::int64_t)>& read_signals,
                                          std::int64_t now_ms) {
  ScaleSync out;
  // A standby (not the leader) decides on a copy of the autoscaler and writes nothing: its
  // count is what the leader would set now, and its own history holds only decisions that
  // were applied (the HPA's rate limits count the changes it made), so a takeover starts
  // as a restarted HPA controller does, with empty windows.
  out.standby = standby_ = options_.may_write && !options_.may_write();
  std::optional<LiveAutoscaler> scratch;
  if (out.standby) scratch.emplace(autoscaler_);
  LiveAutoscaler& autoscaler = scratch ? *scratch : autoscaler_;
  out.step = autoscaler.step(read_signals(now_ms), now_ms, state.replicas, state.ready);
  const int current = state.replicas;
  const int desired = out.step.recommendation.desired;
  out.target = desired;
  out.decision = out.step.recommendation.reason;
  if (!tidal_.empty()) {
    const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(now_ms)));
    auto floor = tidal_.step(now, state.ready.value_or(current), desired);
    if (!floor) {
      out.error = floor.error();
      out.target = current;
      out.decision = "nothing written: the tidal floor could not be computed";
      return out;
    }
    if (floor->floor_in_force > out.target) {
      out.target = floor->floor_in_force;
      out.decision = "the tidal floor in force (" + floor->reasons.front() + ") is above the real-time " +
                     std::to_string(desired);
      for (std::size_t i = 1; i < floor->reasons.size(); ++i) out.decision += "; " + floor->reasons[i];
    }
    if (out.target < current && !floor->scale_down_allowed) {
      out.target = current;
      out.decision = "scale-down held: a tidal prewarm failure is open";
    }
    out.tidal = std::move(*floor);
  }
  if (!state.competing_autoscaler.empty()) {
    out.error = target_.describe() + " is scaled by " + state.competing_autoscaler +
                " (KEDA's ScaledObject creates one); two autoscalers would undo each other's counts: nothing written";
    return out;
  }
  if (out.target == current) return out;
  const k8s::ObjectReference regarding{target_.api_version, target_.kind, target_.namespace_name, target_.name, state.uid};
  if (out.target < current && out.step.reading) {
    out.costs = write_deletion_costs(state, deletion_costs(out.step.reading->loads));
  }
  if (options_.dry_run || out.standby) return out;
  if (options_.may_write && !options_.may_write()) {  // it stopped leading during this sync
    out.error = "not written: this replica is no longer the leader";
    return out;
  }
  Json scale;
  scale["apiVersion"] = "autoscaling/v1";
  scale["kind"] = "Scale";
  scale["metadata"] = {{"name", target_.name}, {"namespace", target_.namespace_name}, {"resourceVersion", state.resource_version}};
  scale["spec"]["replicas"] = out.target;
  auto written = transport_.replace(target_.path() + "/scale", scale.dump());
  if (!written) {
    out.error = "PUT " + target_.describe() + " scale: " + written.error().describe();
    (void)events_.emit(transport_, {regarding, "Warning", "FailedRescale", "Scale",
                                    "New size: " + std::to_string(out.target) + "; error: " + out.error});
    return out;
  }
  out.written = true;
  (void)events_.emit(transport_, {regarding, "Normal", "SuccessfulRescale", "Scale",
                                  "New size: " + std::to_string(out.target) + "; reason: " + out.decision});  // cut to 1 KiB by the recorder
  return out;
}

nlohmann::ordered_json to_json(const ScaleSync& sync) {
  nlohmann::ordered_json j = to_json(sync.step);
  j["target"] = sync.target;
  j["decision"] = sync.decision;
  j["written"] = sync.written;
  j["standby"] = sync.standby;
  j["error"] = sync.error;
  if (sync.tidal) {
    nlohmann::ordered_json t;
    t["floorInForce"] = sync.tidal->floor_in_force;
    t["scaleDownAllowed"] = sync.tidal->scale_down_allowed;
    t["reasons"] = sync.tidal->reasons;
    t["records"] = nlohmann::ordered_json::array();
    for (const auto& r : sync.tidal->records) {
      t["records"].push_back({{"time", format_rfc3339(Timestamp(r.at))},
                              {"kind", r.kind},
                              {"object", r.object},
                              {"reason", r.reason},
                              {"message", r.message},
                              {"alert", r.alert}});
    }
    j["tidal"] = std::move(t);
  }
  j["costWrites"] = nlohmann::ordered_json::array();
  for (const auto& c : sync.costs) {
    j["costWrites"].push_back({{"replica", c.replica}, {"pod", c.pod}, {"cost", c.cost}, {"outcome", c.outcome}});
  }
  if (sync.capacity) j["capacity"] = serving::to_json(*sync.capacity);
  if (!sync.capacity_error.empty()) j["capacityError"] = sync.capacity_error;
  return j;
}

}  // namespace gpubank::autoscale
