// The bank's Prometheus metrics for a run (names in docs/metrics-contract.md):
//   gpubank_quota_gpus{business_group,pool,kind}   gauge: guaranteed|used|borrowed|lent|borrowable|lending_floor
//   gpubank_bank_loan_gpus{pool,lender,borrower}   gauge: open borrow records now (the rendered rules read it)
//   gpubank_borrowed_gpu_hours_total{lender,borrower,pool}   counter, exact integral of the borrow records
//   gpubank_reclaims_total{result}                 counter: completed|cancelled
//   gpubank_reclaim_duration_seconds               histogram, from ReclaimStarted to its end
//   gpubank_checkpoint_total{result}               counter: completed|failed
//   gpubank_recompute_loss_gpu_hours_total{business_group,pool}   counter: of the group's workloads
//   gpubank_events_total{kind}                     counter: every decision of the event log
// Pure: a function of the run's result at its end. (The names keep the "gpu_hours":
// promtool's linter would prefer seconds as the base unit and says so, exit 3.)
#pragma once

#include <span>

#include "core/expected.hpp"
#include "metrics/registry.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::twin::run {

// Adds the families to `registry` (which must not hold them yet) and fills them.
Expected<bool> export_metrics(const RunResult& result, metrics::Registry& registry);
// The same for a run in progress: `result` so far, the positions and the clock now.
Expected<bool> export_metrics(const RunResult& result, std::span<const Position> positions, VirtualTime now,
                              metrics::Registry& registry);

}  // namespace gpubank::twin::run
