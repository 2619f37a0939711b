#include "api/desk_reconcile.hpp"

#include <algorithm>
#include <set>
#include <variant>

namespace gpubank::api {

std::vector<ReconciledProposal> reconcile_desk(twin::live::Platform& platform,
                                               const std::vector<proposals::Proposal>& proposals,
                                               const std::vector<twin::live::Intervention>& journalled,
                                               const std::string& actor) {
  std::set<std::string> taken(platform.applied_proposals().begin(), platform.applied_proposals().end());
  for (const twin::live::Intervention& i : journalled) {
    if (const auto* change = std::get_if<twin::live::PolicyChange>(&i.action)) taken.insert(change->proposal_id);
  }
  std::vector<const proposals::Proposal*> missing;
  for (const proposals::Proposal& p : proposals) {
    if (p.state == proposals::State::Applied && !taken.contains(p.id)) missing.push_back(&p);
  }
  // The desk's own order: when each took effect (at once on submission, or when approved).
  std::stable_sort(missing.begin(), missing.end(), [](const proposals::Proposal* a, const proposals::Proposal* b) {
    return std::max(a->submitted_ms, a->decided_ms) < std::max(b->submitted_ms, b->decided_ms);
  });
  std::vector<ReconciledProposal> out;
  for (const proposals::Proposal* p : missing) {
    auto done = platform.apply_policy_change(p->id, p->document, actor);
    out.push_back({p->id, p->object, static_cast<bool>(done), done ? std::string() : done.error()});
  }
  return out;
}

}  // namespace gpubank::api
