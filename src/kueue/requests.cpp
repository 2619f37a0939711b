#include "kueue/requests.hpp"

#include <algorithm>

#include "kueue/amounts.hpp"

namespace gpubank::kueue {
namespace {

// resource.MergeResourceListKeepFirst(first, second).
void keep_first(ResourceList& first, const ResourceList& second) {
  for (const auto& [name, q] : second) first.emplace(name, q);
}

void add(ResourceList& to, const ResourceList& from) {
  for (const auto& [name, q] : from) {
    auto [it, inserted] = to.emplace(name, q);
    if (!inserted) it->second += q;
  }
}

// maxResourceList: per resource the larger.
void take_max(ResourceList& to, const ResourceList& from) {
  for (const auto& [name, q] : from) {
    auto [it, inserted] = to.emplace(name, q);
    if (!inserted && q > it->second) it->second = q;
  }
}

bool is_pod_level_resource(const std::string& name) {
  return name == "cpu" || name == "memory" || name.starts_with("hugepages-");
}

// Names where requests > limits, compared as Kueue's Requests (ResourceValue), sorted.
std::vector<std::string> greater_keys(const ResourceRequirements& r) {
  std::vector<std::string> out;
  for (const auto& [name, request] : r.requests) {
    const auto limit = r.limits.find(name);
    if (limit != r.limits.end() && resource_value(name, request) > resource_value(name, limit->second)) {
      out.push_back(name);
    }
  }
  return out;
}

std::string go_names(const std::vector<std::string>& names) {
  std::string out = "[]v1.ResourceName{";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += "\"" + names[i] + "\"";
  }
  return out + "}";
}

}  // namespace

PodSpec with_limits_as_requests(PodSpec spec) {
  for (auto* containers : {&spec.init_containers, &spec.containers}) {
    for (auto& c : *containers) keep_first(c.resources.requests, c.resources.limits);
  }
  if (spec.resources) keep_first(spec.resources->requests, spec.resources->limits);
  return spec;
}

ResourceList pod_requests(const PodSpec& spec) {
  ResourceList result;
  for (const auto& c : spec.containers) add(result, c.resources.requests);
  ResourceList sidecars, init;
  for (const auto& c : spec.init_containers) {
    ResourceList use;
    if (c.restart_policy == "Always") {
      add(result, c.resources.requests);
      add(sidecars, c.resources.requests);
      use = sidecars;
    } else {
      use = c.resources.requests;
      add(use, sidecars);
    }
    take_max(init, use);
  }
  take_max(result, init);
  if (spec.resources) {
    const bool pod_level_set = std::any_of(spec.resources->requests.begin(), spec.resources->requests.end(),
                                           [](const auto& e) { return is_pod_level_resource(e.first); });
    if (pod_level_set) {
      for (const auto& [name, q] : spec.resources->requests) {
        if (is_pod_level_resource(name)) result[name] = q;
      }
    }
  }
  add(result, spec.overhead);
  return result;
}

ResourceList counted_requests(ResourceList requests, const ManagerConfiguration& config) {
  std::erase_if(requests, [&](const auto& entry) {
    return std::any_of(config.exclude_resource_prefixes.begin(), config.exclude_resource_prefixes.end(),
                       [&](const std::string& prefix) { return entry.first.starts_with(prefix); });
  });
  auto mapping_of = [&](const std::string& name) -> const ResourceTransformation* {
    for (const auto& t : config.transformations) {
      if (t.input == name) return &t;
    }
    return nullptr;
  };
  if (std::none_of(requests.begin(), requests.end(), [&](const auto& e) { return mapping_of(e.first) != nullptr; })) {
    return requests;
  }
  // What the transformations generate stays apart until the end, so that a negative factor
  // (an allowance) cancels other outputs but never the pod's own requests.
  ResourceList retained, generated;
  for (const auto& [name, quantity] : requests) {
    const ResourceTransformation* t = mapping_of(name);
    if (t == nullptr) {
      retained.emplace(name, quantity);
      continue;
    }
    Quantity base = quantity;
    if (!t->multiply_by.empty()) {
      if (const auto by = requests.find(t->multiply_by); by != requests.end()) base = quantity.multiplied_by(by->second);
    }
    for (const auto& [output, factor] : t->outputs) {
      const Quantity amount = base.multiplied_by(factor);
      auto [it, inserted] = generated.emplace(output, amount);
      if (!inserted) it->second += amount;
    }
    if (!t->replace) retained.emplace(name, quantity);
  }
  for (auto& [name, quantity] : generated) {
    if (quantity.negative()) quantity = Quantity{};
  }
  add(retained, generated);
  return retained;
}

std::vector<std::pair<std::string, twin::Amount>> pod_amounts(const PodSpec& spec, const ManagerConfiguration* config) {
  std::vector<std::pair<std::string, twin::Amount>> out;
  ResourceList requests = pod_requests(with_limits_as_requests(spec));
  if (config != nullptr) requests = counted_requests(std::move(requests), *config);
  for (const auto& [name, q] : requests) {
    out.emplace_back(name, std::max<twin::Amount>(0, resource_value(name, q)));
  }
  return out;  // ResourceList is a sorted map
}

std::int32_t count_after_reclaim(const Workload& wl, const PodSet& ps) {
  for (const auto& rp : wl.reclaimable_pods) {
    if (rp.name == ps.name) return ps.count - std::min(rp.count, ps.count);
  }
  return ps.count;
}

std::optional<std::string> resources_validation_error(const Workload& wl) {
  std::vector<std::string> errors;
  const auto add_error = [&](const std::string& path, const std::vector<std::string>& names) {
    if (names.empty()) return;
    std::string e = path + ": Invalid value: " + go_names(names) + ": requests must not exceed its limits";
    if (std::find(errors.begin(), errors.end(), e) == errors.end()) errors.push_back(std::move(e));
  };
  for (std::size_t i = 0; i < wl.pod_sets.size(); ++i) {
    const PodSpec spec = with_limits_as_requests(wl.pod_sets[i].spec);
    const std::string base = "spec.podSets[" + std::to_string(i) + "].template.spec";
    for (std::size_t c = 0; c < spec.init_containers.size(); ++c) {
      add_error(base + ".initContainers[" + std::to_string(c) + "]", greater_keys(spec.init_containers[c].resources));
    }
    for (std::size_t c = 0; c < spec.containers.size(); ++c) {
      add_error(base + ".containers[" + std::to_string(c) + "]", greater_keys(spec.containers[c].resources));
    }
    if (spec.resources) add_error(base + ".resources", greater_keys(*spec.resources));
  }
  if (errors.empty()) return std::nullopt;
  std::string aggregate;
  if (errors.size() == 1) {
    aggregate = errors.front();
  } else {
    aggregate = "[";
    for (std::size_t i = 0; i < errors.size(); ++i) aggregate += (i > 0 ? ", " : "") + errors[i];
    aggregate += "]";
  }
  return "resources validation failed: " + aggregate;
}

}  // namespace gpubank::kueue
