#include "controller/policy_reconciler.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "controller/diff.hpp"
#include "controller/policy_source.hpp"
#include "controller/policy_watch.hpp"
#include "controller/reclaim.hpp"
#include "controller/time_controls.hpp"
#include "k8s/watch_event.hpp"
#include "policy/types.hpp"

namespace gpubank::controller {
namespace {

using Action = ObjectResult::Action;

k8s::ApiResult<std::vector<nlohmann::json>> list_all(k8s::Transport& transport, const k8s::ResourceMapping& mapping,
                                                     std::string_view selector) {
  std::vector<nlohmann::json> items;
  std::string continue_token;
  do {
    std::string target = mapping.collection_path("") + "?limit=500";  // "": all namespaces
    if (!selector.empty()) target += "&labelSelector=" + k8s::query_escape(selector);
    if (!continue_token.empty()) target += "&continue=" + k8s::query_escape(continue_token);
    auto response = transport.get(target);
    if (!response) return response.error();
    auto page = k8s::parse_list_page(response->body);
    if (!page) {
      return k8s::client_error("MalformedList", page.error(), "GET " + target);
    }
    for (nlohmann::json& item : page->items) {
      // A typed list's items carry no apiVersion and kind; the mapping knows them.
      if (!item.contains("apiVersion")) item["apiVersion"] = mapping.api_version();
      if (!item.contains("kind")) item["kind"] = mapping.kind;
      items.push_back(std::move(item));
    }
    continue_token = page->continue_token;
  } while (!continue_token.empty());
  return items;
}

k8s::ApiError not_mapped(std::string message) { return k8s::client_error("NotMapped", std::move(message)); }

std::string resource_version(const nlohmann::json& object) {
  const auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return {};
  return m->value("resourceVersion", "");
}

std::string first_error(const Diagnostics& diagnostics, const PolicyResource* about, std::size_t* count) {
  std::string first;
  std::size_t n = 0;
  for (const Diagnostic& d : diagnostics) {
    if (d.severity != Severity::Error || (about != nullptr && !is_about(d, *about))) continue;
    if (n++ == 0) first = (d.path.empty() ? "" : d.path + ": ") + d.message + " [" + d.rule + "]";
  }
  if (count != nullptr) *count = n;
  return first;
}

}  // namespace

std::string_view action_name(Action action, bool dry_run) {
  switch (action) {
    case Action::Created: return dry_run ? "would-create" : "created";
    case Action::Configured: return dry_run ? "would-configure" : "configured";
    case Action::Unchanged: return "unchanged";
    case Action::Pruned: return dry_run ? "would-prune" : "pruned";
    case Action::Released: return dry_run ? "would-release" : "released";
    case Action::Skipped: return "skipped";
    case Action::Failed: return "failed";
  }
  return "unknown";
}

std::size_t ReconcileReport::count(Action action) const {
  return static_cast<std::size_t>(
      std::count_if(objects.begin(), objects.end(), [&](const ObjectResult& r) { return r.action == action; }));
}

std::size_t ReconcileReport::failures() const {
  return count(Action::Failed) + static_cast<std::size_t>(std::count_if(policies.begin(), policies.end(),
                                                                        [](const PolicyResult& p) { return !p.error.empty(); }));
}

k8s::ApiResult<std::vector<nlohmann::json>> list_managed(k8s::Transport& transport, const k8s::RestMapper& mapper) {
  std::vector<nlohmann::json> all;
  const std::string selector = std::string(render::kLabelManagedBy) + "=" + std::string(render::kManagedBy);
  for (const ManagedKind& kind : managed_kinds()) {
    auto mapping = mapper.find(kind.api_version, kind.kind);
    if (!mapping) continue;  // not installed: nothing of it to prune
    auto items = list_all(transport, *mapping, selector);
    if (!items) return items.error();
    for (nlohmann::json& item : items.value()) all.push_back(std::move(item));
  }
  return all;
}

k8s::ApiResult<std::vector<nlohmann::json>> list_policies(k8s::Transport& transport, const k8s::RestMapper& mapper) {
  std::vector<nlohmann::json> all;
  for (const k8s::InformedKind& kind : policy_kinds()) {
    auto mapping = mapper.find(kind.api_version, kind.kind);
    if (!mapping) continue;
    auto items = list_all(transport, *mapping, "");
    if (!items) return items.error();
    for (nlohmann::json& item : items.value()) all.push_back(std::move(item));
  }
  return all;
}

ReconcileReport reconcile_policies(k8s::Transport& transport, const k8s::RestMapper& mapper,
                                   const std::vector<nlohmann::json>& policies, const std::vector<nlohmann::json>& live,
                                   const ReconcileOptions& options, std::string_view now) {
  return reconcile_policies(transport, mapper, read_cluster_policies(policies), live, options, now);
}

ReconcileReport reconcile_policies(k8s::Transport& transport, const k8s::RestMapper& mapper, const ClusterPolicies& cluster,
                                   const std::vector<nlohmann::json>& live, const ReconcileOptions& options,
                                   std::string_view now) {
  ReconcileReport report;
  render::RenderResult rendered = render::render(cluster.set, render::RenderOptions{.backend = options.backend});
  report.diagnostics = cluster.set.diagnostics();
  report.diagnostics.insert(report.diagnostics.end(), rendered.diagnostics.begin(), rendered.diagnostics.end());
  report.rendered = rendered.ok() && !has_errors(cluster.set.diagnostics());

  // Per source resource: the first object that failed.
  std::map<std::string, std::string> failed_for;
  std::map<std::string, std::size_t> applied_for;
  std::map<std::string, std::size_t> rendered_for;

  if (report.rendered && options.at) {
    TimeControls controls = adjust_for_time(rendered.objects, cluster.set, *options.at, options.ledger);
    report.next_change = controls.next_change;
    report.active_leases = std::move(controls.active_leases);
    report.adjustments = std::move(controls.adjustments);
  }
  if (report.rendered && !options.reclaiming.empty()) {
    for (std::string& line : hold_borrowing_during_reclaims(rendered.objects, options.reclaiming)) {
      report.adjustments.push_back(std::move(line));
    }
  }
  if (report.rendered) {
    std::map<ObjectKey, const nlohmann::json*> live_by_key;
    for (const nlohmann::json& o : live) live_by_key.emplace(key_of(o), &o);
    const Plan plan = make_plan(rendered.objects, live, options.plan);

    for (const Skipped& s : plan.skipped) {
      report.objects.push_back({Action::Skipped, s.path, s.path, {}, s.why, {}});
    }
    for (const PlannedApply& a : plan.apply) {
      ObjectResult r;
      r.object = key_of(a.object).to_string();
      r.path = a.path;
      r.sources = a.sources;
      auto target = k8s::apply_request(mapper, a.object, options.default_namespace);
      const ObjectKey key = key_of(a.object);
      bool absent_annotated = false;
      if (target && is_annotated_only(key.group, key.kind) && !live_by_key.contains(key)) {
        // gpubank annotates its users' objects and never creates them: an apply would
        // make an object without a spec.
        auto got = transport.get(target->path);
        absent_annotated = !got && got.error().http_status == 404;
      }
      if (!target) {
        r.action = Action::Failed;
        r.message = target.error();
      } else if (absent_annotated) {
        r.action = Action::Skipped;
        r.message = "it does not exist (yet): gpubank only annotates it, and does so once it exists";
      } else if (options.dry_run) {
        // The live object: from the managed list, else fetched (an object gpubank has not
        // labelled yet, e.g. a user's InferenceService).
        nlohmann::json current;
        bool exists = false;
        if (const auto it = live_by_key.find(key_of(a.object)); it != live_by_key.end()) {
          current = *it->second;
          exists = true;
        } else if (auto got = transport.get(target->path)) {
          current = nlohmann::json::parse(got->body, nullptr, false);
          exists = !current.is_discarded();
        } else if (got.error().http_status != 404) {
          r.action = Action::Failed;
          r.message = got.error().describe();
        }
        if (r.message.empty()) {
          const nlohmann::json body = nlohmann::json::parse(target->body);
          const std::string after = to_yaml_text(body);
          const std::string before = exists ? to_yaml_text(project(current, body)) : std::string();
          r.diff = unified_diff(before, after, exists ? "live/" + r.object : "/dev/null", "desired/" + r.object);
          r.action = !exists ? Action::Created : r.diff.empty() ? Action::Unchanged : Action::Configured;
        }
      } else {
        auto applied = transport.apply(target->path, target->body, options.force_conflicts);
        if (!applied) {
          r.action = Action::Failed;
          r.message = applied.error().describe();
        } else if (applied->status == 201) {
          r.action = Action::Created;
        } else {
          const auto it = live_by_key.find(key_of(a.object));
          const nlohmann::json after = nlohmann::json::parse(applied->body, nullptr, false);
          r.action = it != live_by_key.end() && !after.is_discarded() &&
                             resource_version(*it->second) == resource_version(after)
                         ? Action::Unchanged
                         : Action::Configured;
        }
      }
      for (const std::string& source : r.sources) {
        ++rendered_for[source];
        if (r.action == Action::Skipped) continue;
        if (r.action == Action::Failed) {
          failed_for.emplace(source, r.object + ": " + r.message);
        } else {
          ++applied_for[source];
        }
      }
      report.objects.push_back(std::move(r));
    }
    for (const nlohmann::json& object : plan.prune) {
      ObjectResult r;
      const ObjectKey key = key_of(object);
      r.object = key.to_string();
      r.action = Action::Pruned;
      if (!options.dry_run) {
        auto mapping = mapper.find(object.value("apiVersion", ""), key.kind);
        auto removed = mapping ? transport.remove(mapping->object_path(key.namespace_name, key.name))
                               : k8s::ApiResult<k8s::Response>(not_mapped(mapping.error()));
        if (!removed && removed.error().http_status != 404) {
          r.action = Action::Failed;
          r.message = removed.error().describe();
        }
      } else {
        r.diff = unified_diff(to_yaml_text(object), "", "live/" + r.object, "/dev/null");
      }
      report.objects.push_back(std::move(r));
    }
    for (const nlohmann::json& object : plan.release) {
      ObjectResult r;
      r.object = key_of(object).to_string();
      r.action = Action::Released;
      if (!options.dry_run) {
        auto target = k8s::apply_request(mapper, object, options.default_namespace);
        auto applied = target ? transport.apply(target->path, target->body, options.force_conflicts)
                              : k8s::ApiResult<k8s::Response>(not_mapped(target.error()));
        if (!applied && applied.error().http_status != 404) {
          r.action = Action::Failed;
          r.message = applied.error().describe();
        }
      }
      report.objects.push_back(std::move(r));
    }
  }

  // Status of every gpubank resource.
  std::size_t set_errors = 0;
  const std::string set_first = first_error(report.diagnostics, nullptr, &set_errors);
  for (const PolicyResource& resource : cluster.resources) {
    PolicyResult p;
    p.resource = resource.key();
    std::size_t own_errors = 0;
    const std::string own_first = first_error(report.diagnostics, &resource, &own_errors);
    p.conditions.push_back(own_errors == 0 ? Condition{"Accepted", true, "Valid", "the resource validates"}
                                           : Condition{"Accepted", false, "Invalid", own_first});
    if (!report.rendered) {
      const std::string why = std::to_string(set_errors) + " error(s) in the policy set, first: " + set_first;
      p.conditions.push_back({"Rendered", false, "PolicySetInvalid", why});
      p.conditions.push_back({"Applied", false, "NotRendered",
                              "nothing was applied for this generation; objects applied before stay as they were"});
    } else {
      const std::size_t objects = applied_for.contains(p.resource) ? applied_for[p.resource] : 0;
      const auto failed = failed_for.find(p.resource);
      const std::size_t total = rendered_for.contains(p.resource) ? rendered_for[p.resource] : 0;
      p.conditions.push_back({"Rendered", true, "Rendered",
                              std::to_string(total) + " object(s) rendered from this resource"});
      if (failed != failed_for.end()) {
        p.conditions.push_back({"Applied", false, "ApplyFailed", failed->second});
      } else if (objects == 0) {
        p.conditions.push_back({"Applied", true, "NothingToApply", "no engine object comes from this resource alone"});
      } else {
        p.conditions.push_back({"Applied", true, options.dry_run ? "DryRun" : "Applied",
                                std::to_string(objects) + " object(s) applied"});
      }
    }
    if (!options.dry_run) {
      if (auto patch = status_update(resource.object, p.conditions, resource.generation, now)) {
        auto target = k8s::status_patch(mapper, resource.object, *patch, options.default_namespace);
        if (!target) {
          p.error = target.error();
        } else if (auto written = transport.merge_patch(target->path, target->body); !written) {
          if (written.error().http_status != 404) p.error = written.error().describe();  // 404: deleted meanwhile
        } else {
          p.status_written = true;
        }
      }
    }
    report.policies.push_back(std::move(p));
  }
  return report;
}

}  // namespace gpubank::controller
