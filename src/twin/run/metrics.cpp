#include "twin/run/metrics.hpp"

#include "metrics/bank_series.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpubank::twin::run {
Expected<bool> export_metrics(const RunResult& r, metrics::Registry& registry) {
  return export_metrics(r, r.positions, r.end, registry);
}

Expected<bool> export_metrics(const RunResult& r, std::span<const Position> positions, VirtualTime now,
                              metrics::Registry& registry) {
  namespace series = metrics::bank_series;
  auto quota = registry.gauge(series::kQuotaGpus.name, series::kQuotaGpus.help, series::kQuotaGpus.labels());
  auto borrowed =
      registry.counter(series::kBorrowedGpuHours.name, series::kBorrowedGpuHours.help, series::kBorrowedGpuHours.labels());
  auto reclaims = registry.counter("gpubank_reclaims_total", "Graceful reclaims that ended, by result.", {"result"});
  auto duration = registry.histogram("gpubank_reclaim_duration_seconds",
                                     "Time from lender demand to the end of a graceful reclaim.", {},
                                     {1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600});
  auto checkpoints = registry.counter(series::kCheckpoints.name, series::kCheckpoints.help, series::kCheckpoints.labels());
  auto loss = registry.counter(series::kRecomputeLossGpuHours.name, series::kRecomputeLossGpuHours.help,
                               series::kRecomputeLossGpuHours.labels());
  auto loans = registry.gauge(series::kLoanGpus.name, series::kLoanGpus.help, series::kLoanGpus.labels());
  if (!loans) return Unexpected{loans.error()};
  auto events = registry.counter("gpubank_events_total", "Decisions of the event log, by kind.", {"kind"});
  if (!quota) return Unexpected{quota.error()};
  if (!borrowed) return Unexpected{borrowed.error()};
  if (!reclaims) return Unexpected{reclaims.error()};
  if (!duration) return Unexpected{duration.error()};
  if (!checkpoints) return Unexpected{checkpoints.error()};
  if (!loss) return Unexpected{loss.error()};
  if (!events) return Unexpected{events.error()};

  std::vector<std::pair<metrics::LabelValues, double>> snapshot;
  for (const auto& p : positions) {
    for (const auto& [kind, value] : std::initializer_list<std::pair<const char*, std::int64_t>>{
             {"guaranteed", p.guaranteed}, {"used", p.used}, {"borrowed", p.borrowed}, {"lent", p.lent},
             {"borrowable", p.borrowable}, {"lending_floor", p.lending_floor}}) {
      snapshot.push_back({{p.business_group, p.pool, kind}, static_cast<double>(value)});
    }
  }
  if (auto s = (*quota)->set_all(snapshot); !s) return Unexpected{s.error()};

  // GPU-ms per pair from the ledger: closed records, and open ones up to the end.
  std::map<std::string, std::tuple<std::string, std::string, std::string, std::int64_t, std::int64_t>> open;
  std::map<std::tuple<std::string, std::string, std::string>, std::int64_t> gpu_ms;
  for (const auto& e : r.ledger) {
    if (e.kind == bank::LedgerKind::BorrowOpened) {
      open[e.record] = {e.lender, e.business_group, e.pool, e.time_ms, e.gpus};
    } else if (e.kind == bank::LedgerKind::BorrowClosed) {
      auto it = open.find(e.record);
      if (it == open.end()) continue;
      const auto& [lender, borrower, pool, start, gpus] = it->second;
      gpu_ms[{lender, borrower, pool}] += (e.time_ms - start) * gpus;
      open.erase(it);
    }
  }
  std::map<std::tuple<std::string, std::string, std::string>, std::int64_t> lent_now;
  for (const auto& [id, rec] : open) {
    const auto& [lender, borrower, pool, start, gpus] = rec;
    gpu_ms[{lender, borrower, pool}] += (std::max(now, start) - start) * gpus;
    lent_now[{pool, lender, borrower}] += gpus;
  }
  std::vector<std::pair<metrics::LabelValues, double>> loan_snapshot;
  for (const auto& [key, gpus] : lent_now) {
    const auto& [pool, lender, borrower] = key;
    loan_snapshot.push_back({{pool, lender, borrower}, static_cast<double>(gpus)});
  }
  if (auto s = (*loans)->set_all(loan_snapshot); !s) return Unexpected{s.error()};
  for (const auto& [key, ms] : gpu_ms) {
    const auto& [lender, borrower, pool] = key;
    if (auto s = (*borrowed)->inc({lender, borrower, pool}, static_cast<double>(ms) / 3.6e6); !s) return Unexpected{s.error()};
  }

  for (const char* result : {"completed", "cancelled"}) {
    if (auto s = (*reclaims)->inc({result}, 0); !s) return Unexpected{s.error()};
  }
  for (const auto& rc : r.reclaims) {
    if (!rc.ended) continue;
    if (auto s = (*reclaims)->inc({rc.result == "Completed" ? "completed" : "cancelled"}); !s) return Unexpected{s.error()};
    if (auto s = (*duration)->observe({}, static_cast<double>(*rc.ended - rc.started) / 1000.0); !s) {
      return Unexpected{s.error()};
    }
  }
  if (auto s = (*checkpoints)->inc({"completed"}, static_cast<double>(r.checkpoints_ok)); !s) return Unexpected{s.error()};
  if (auto s = (*checkpoints)->inc({"failed"}, static_cast<double>(r.checkpoints_failed)); !s) return Unexpected{s.error()};
  // Per group and pool (every GPUQuotaPolicy's, from the start, so increase() sees the first
  // loss); what no group's workloads lost (none today) would be "unknown".
  std::int64_t attributed = 0;
  for (const GroupStats& g : r.groups) {
    attributed += g.loss_gpu_ms;
    if (auto s = (*loss)->inc({g.business_group, g.pool}, static_cast<double>(g.loss_gpu_ms) / 3.6e6); !s) {
      return Unexpected{s.error()};
    }
  }
  if (r.recompute_loss_gpu_ms > attributed) {
    if (auto s = (*loss)->inc({"unknown", ""}, static_cast<double>(r.recompute_loss_gpu_ms - attributed) / 3.6e6); !s) {
      return Unexpected{s.error()};
    }
  }
  for (const auto& e : r.events) {
    if (auto s = (*events)->inc({e.kind}); !s) return Unexpected{s.error()};
  }
  return true;
}

}  // namespace gpubank::twin::run
