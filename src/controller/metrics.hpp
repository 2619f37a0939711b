// The controller's Prometheus metrics, served on GET /metrics of its health port.
//
// The bank's families carry the twin's names and labels (docs/metrics-contract.md), so the
// rendered PrometheusRules and dashboards read a cluster exactly as they read `gpubank up`:
//   gpubank_quota_gpus{business_group,pool,kind}           gauge, from the cluster ledger
//   gpubank_bank_loan_gpus{pool,lender,borrower}           gauge: open borrow records
//   gpubank_borrowed_gpu_hours_total{lender,borrower,pool} counter: the records' integral up
//                                                          to the ledger's last entry
//   gpubank_checkpoint_total{result}                       counter: completed (the job reported it
//                                                          before its victim stopped), failed (grace ran out)
//   gpubank_last_checkpoint_timestamp_seconds{namespace,workload_kind,workload}  gauge: per job
//                                                          holding GPUs, its last checkpoint notice
//                                                          or completion (the reports' checkpoint window)
//   gpubank_recompute_loss_gpu_hours_total{business_group,pool}  counter: per stopped victim,
//                                                          its GPUs x the time since its last
//                                                          checkpoint (else its admission)
// The twin's reclaim episodes (gpubank_reclaims_total, _duration_seconds) and event log
// have no cluster counterpart here: the controller counts steps instead.
// and the controller's own:
//   gpubank_controller_leader                              gauge: 1 while this replica acts
//   gpubank_controller_informers_synced                    gauge
//   gpubank_controller_passes_total{result}                counter: rendered|invalid|skipped
//   gpubank_controller_pass_duration_seconds               histogram (wall clock, for operators)
//   gpubank_controller_last_pass_timestamp_seconds         gauge: Unix time of the last pass
//   gpubank_controller_objects_total{action}               counter: created|configured|pruned|released|failed
//   gpubank_controller_reclaim_steps_total{step,reason}    counter: Notice|Stop|Resume|Cancel, with their
//                                                          reasons; reason Failed when the write failed
//   gpubank_controller_ledger_entries_total{kind}          counter: entries this replica appended
//   gpubank_controller_ledger_append_failures_total        counter
// Bank gauges appear only on the replica that keeps the ledger (the leader with --store):
// a standby exports none, so sums over replicas stay right.
//
// Thread-safe: the loop records, the health listener's threads scrape.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bank/ledger.hpp"
#include "core/expected.hpp"
#include "metrics/registry.hpp"

namespace gpubank::controller {

class ControllerMetrics {
 public:
  [[nodiscard]] static Expected<std::unique_ptr<ControllerMetrics>> create();

  void set_leader(bool leading);
  void set_synced(bool synced);
  // result: rendered, invalid or skipped. unix_seconds: when it ended.
  void pass_done(std::string_view result, double seconds, double unix_seconds);
  void object(std::string_view action);  // created, configured, pruned, released, failed
  void reclaim_step(std::string_view step, std::string_view reason);
  // Per job holding GPUs ({namespace, workload_kind, workload}), the Unix seconds of its last
  // checkpoint notice or completion: replaces the family (jobs that left drop out).
  void last_checkpoints(const std::vector<std::pair<std::vector<std::string>, double>>& jobs);
  // Work a stopped victim of `group` lost on `pool`.
  void recompute_loss(std::string_view group, std::string_view pool, std::int64_t gpu_ms);
  // Every (group, pool) of the policy set's GPUQuotaPolicies, at 0 from the start: an
  // increase() over a period then sees the first loss too.
  void declare_quotas(const std::vector<std::pair<std::string, std::string>>& group_pools);
  void ledger_appended(std::span<const bank::LedgerEntry> entries, const bank::LedgerBook& book);
  void ledger_append_failed();
  // The replica stopped keeping the ledger (lost the lead, or the store failed).
  void ledger_dropped();

  [[nodiscard]] std::string text() const;

 private:
  ControllerMetrics() = default;
  mutable std::mutex m_;
  metrics::Registry registry_;
  metrics::GaugeFamily* leader_ = nullptr;
  metrics::GaugeFamily* synced_ = nullptr;
  metrics::CounterFamily* passes_ = nullptr;
  metrics::HistogramFamily* pass_seconds_ = nullptr;
  metrics::GaugeFamily* last_pass_ = nullptr;
  metrics::CounterFamily* objects_ = nullptr;
  metrics::CounterFamily* reclaim_steps_ = nullptr;
  metrics::CounterFamily* ledger_entries_ = nullptr;
  metrics::CounterFamily* ledger_failures_ = nullptr;
  metrics::GaugeFamily* quota_ = nullptr;
  metrics::GaugeFamily* loans_ = nullptr;
  metrics::GaugeFamily* last_checkpoint_ = nullptr;
  metrics::CounterFamily* borrowed_ = nullptr;
  metrics::CounterFamily* checkpoints_ = nullptr;
  metrics::CounterFamily* recompute_loss_ = nullptr;
};

}  // namespace gpubank::controller
