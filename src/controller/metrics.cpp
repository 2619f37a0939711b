#include "controller/metrics.hpp"

#include "metrics/bank_series.hpp"

#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace gpubank::controller {
namespace {

namespace bank_series = metrics::bank_series;

template <class T>
Expected<bool> take(Expected<T*> family, T*& into) {
  if (!family) return Unexpected{family.error()};
  into = *family;
  return true;
}

// The registry's checks fail only on a programming error here (names and label counts are
// fixed); a metric update never stops the controller.
void ignore(const metrics::Status&) {}

}  // namespace

Expected<std::unique_ptr<ControllerMetrics>> ControllerMetrics::create() {
  std::unique_ptr<ControllerMetrics> m(new ControllerMetrics());
  metrics::Registry& r = m->registry_;
  for (const Expected<bool>& made : {
           take(r.gauge("gpubank_controller_leader", "1 while this replica is the one that acts (the leader, or "
                                                      "the only replica without leader election)."),
                m->leader_),
           take(r.gauge("gpubank_controller_informers_synced", "1 once the controller's informers listed everything."),
                m->synced_),
           take(r.counter("gpubank_controller_passes_total",
                          "Reconcile passes, by result: rendered, invalid (the policy set does not validate; nothing "
                          "applied) or skipped (the cluster could not be read).",
                          {"result"}),
                m->passes_),
           take(r.histogram("gpubank_controller_pass_duration_seconds", "Wall-clock time of a reconcile pass.", {},
                            {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
                m->pass_seconds_),
           take(r.gauge("gpubank_controller_last_pass_timestamp_seconds", "Unix time at which the last pass ended."),
                m->last_pass_),
           take(r.counter("gpubank_controller_objects_total",
                          "Rendered objects changed by server-side apply, by action: created, configured, pruned, "
                          "released, failed.",
                          {"action"}),
                m->objects_),
           take(r.counter("gpubank_controller_reclaim_steps_total",
                          "Graceful reclaim steps carried out (Notice, Stop, Resume, Cancel), by reason; reason Failed "
                          "when the write to the cluster failed.",
                          {"step", "reason"}),
                m->reclaim_steps_),
           take(r.counter("gpubank_controller_ledger_entries_total",
                          "Ledger entries this replica appended to the store, by kind.", {"kind"}),
                m->ledger_entries_),
           take(r.counter("gpubank_controller_ledger_append_failures_total",
                          "Ledger appends the store refused or could not take (the pass's entries are computed again)."),
                m->ledger_failures_),
           take(r.gauge(bank_series::kQuotaGpus.name, bank_series::kQuotaGpus.help, bank_series::kQuotaGpus.labels()),
                m->quota_),
           take(r.gauge(bank_series::kLoanGpus.name, bank_series::kLoanGpus.help, bank_series::kLoanGpus.labels()),
                m->loans_),
           take(r.counter(bank_series::kCheckpoints.name, bank_series::kCheckpoints.help, bank_series::kCheckpoints.labels()),
                m->checkpoints_),
           take(r.gauge(bank_series::kLastCheckpoint.name, bank_series::kLastCheckpoint.help,
                        bank_series::kLastCheckpoint.labels()),
                m->last_checkpoint_),
           take(r.counter(bank_series::kRecomputeLossGpuHours.name, bank_series::kRecomputeLossGpuHours.help,
                          bank_series::kRecomputeLossGpuHours.labels()),
                m->recompute_loss_),
           take(r.counter(bank_series::kBorrowedGpuHours.name, bank_series::kBorrowedGpuHours.help,
                          bank_series::kBorrowedGpuHours.labels()),
                m->borrowed_),
       }) {
    if (!made) return Unexpected{"controller metrics: " + made.error()};
  }
  for (const char* result : {"rendered", "invalid", "skipped"}) ignore(m->passes_->inc({result}, 0));
  for (const char* action : {"created", "configured", "pruned", "released", "failed"}) ignore(m->objects_->inc({action}, 0));
  for (const char* result : {"completed", "failed"}) ignore(m->checkpoints_->inc({result}, 0));
  return m;
}

void ControllerMetrics::set_leader(bool leading) {
  std::lock_guard lock(m_);
  ignore(leader_->set({}, leading ? 1 : 0));
}

void ControllerMetrics::last_checkpoints(const std::vector<std::pair<std::vector<std::string>, double>>& jobs) {
  std::lock_guard lock(m_);
  std::vector<std::pair<metrics::LabelValues, double>> snapshot;
  snapshot.reserve(jobs.size());
  for (const auto& [labels, t] : jobs) snapshot.emplace_back(metrics::LabelValues(labels.begin(), labels.end()), t);
  ignore(last_checkpoint_->set_all(snapshot));
}

void ControllerMetrics::set_synced(bool synced) {
  std::lock_guard lock(m_);
  ignore(synced_->set({}, synced ? 1 : 0));
}

void ControllerMetrics::pass_done(std::string_view result, double seconds, double unix_seconds) {
  std::lock_guard lock(m_);
  ignore(passes_->inc({std::string(result)}));
  ignore(pass_seconds_->observe({}, seconds));
  ignore(last_pass_->set({}, unix_seconds));
}

void ControllerMetrics::object(std::string_view action) {
  std::lock_guard lock(m_);
  ignore(objects_->inc({std::string(action)}));
}

void ControllerMetrics::reclaim_step(std::string_view step, std::string_view reason) {
  std::lock_guard lock(m_);
  ignore(reclaim_steps_->inc({std::string(step), std::string(reason)}));
  // A stop ends the checkpoint its notice asked for: the job reported it, or the grace ran out.
  if (step == "Stop" && reason == "CheckpointCompleted") ignore(checkpoints_->inc({"completed"}));
  if (step == "Stop" && reason == "GraceExpired") ignore(checkpoints_->inc({"failed"}));
}

void ControllerMetrics::recompute_loss(std::string_view group, std::string_view pool, std::int64_t gpu_ms) {
  std::lock_guard lock(m_);
  ignore(recompute_loss_->inc({std::string(group), std::string(pool)}, static_cast<double>(std::max<std::int64_t>(0, gpu_ms)) / 3.6e6));
}

void ControllerMetrics::declare_quotas(const std::vector<std::pair<std::string, std::string>>& group_pools) {
  std::lock_guard lock(m_);
  for (const auto& [group, pool] : group_pools) ignore(recompute_loss_->inc({group, pool}, 0));
}

void ControllerMetrics::ledger_appended(std::span<const bank::LedgerEntry> entries, const bank::LedgerBook& book) {
  std::vector<std::pair<metrics::LabelValues, double>> quota;
  for (const bank::Position& p : book.positions()) {
    for (const auto& [kind, value] : std::initializer_list<std::pair<const char*, std::int64_t>>{
             {"guaranteed", p.guaranteed}, {"used", p.used}, {"borrowed", p.borrowed}, {"lent", p.lent},
             {"borrowable", p.borrowable}, {"lending_floor", p.lending_floor}}) {
      quota.push_back({{p.business_group, p.pool, kind}, static_cast<double>(value)});
    }
  }
  std::map<std::tuple<std::string, std::string, std::string>, std::int64_t> lent;
  for (const bank::BorrowRecord& r : book.open_records()) lent[{r.pool, r.lender, r.borrower}] += r.gpus;
  std::vector<std::pair<metrics::LabelValues, double>> loans;
  for (const auto& [key, gpus] : lent) {
    loans.push_back({{std::get<0>(key), std::get<1>(key), std::get<2>(key)}, static_cast<double>(gpus)});
  }
  const auto totals = book.pair_totals(0, bank::kMaxTimeMs);

  std::lock_guard lock(m_);
  for (const bank::LedgerEntry& e : entries) ignore(ledger_entries_->inc({std::string(bank::kind_name(e.kind))}));
  ignore(quota_->set_all(quota));
  ignore(loans_->set_all(loans));
  for (const bank::PairTotal& t : totals) ignore(borrowed_->set_total({t.lender, t.borrower, t.pool}, t.gpu_hours()));
}

void ControllerMetrics::ledger_append_failed() {
  std::lock_guard lock(m_);
  ignore(ledger_failures_->inc({}));
}

void ControllerMetrics::ledger_dropped() {
  std::lock_guard lock(m_);
  quota_->clear();
  loans_->clear();
  borrowed_->clear();
}

std::string ControllerMetrics::text() const {
  std::lock_guard lock(m_);
  return metrics::write_text(registry_);
}

}  // namespace gpubank::controller
