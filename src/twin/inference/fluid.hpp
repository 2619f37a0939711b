// A quasi-static model of one inference service, for runs that need days of serving in
// seconds (the impact preview, twin/preview). Where InferenceService moves every request
// through a vLLM-like engine, FluidService keeps counts:
//
// - Calibration (calibrate): InferenceService itself, with one and with four replicas
//   behind its router, at a ladder of offered loads per replica (Poisson, the caller's
//   token distributions), six virtual minutes each after one of warm-up. Each steady level
//   records the TTFT quantiles, the mean running, waiting, KV cache usage and busy share per
//   replica, the mean end-to-end and inter-token latency; the first overloaded level gives
//   the saturation throughput (requests per second a replica finishes when it cannot keep
//   up). Between one and four replicas the ladders are mixed by log2 of the count; above
//   four the four-replica ladder stands (pessimistic: more replicas pool more).
// - Run: time moves in slices of at most kFluidSliceMs (cut at replicas becoming ready and at
//   drain ends). The arrivals of a slice are split evenly over the ready replicas of
//   weight > 0 (the router's least-outstanding rule at equal load); the replicas behave as
//   the calibration level of the per-replica arrival rate smoothed over about a minute
//   (interpolated; the levels hold Poisson burstiness already); what exceeds their
//   saturation throughput waits in a shared backlog, and a request arriving behind a
//   backlog waits for it to clear before the saturated level's TTFT. With no replica,
//   arrivals wait for the first one loading (or are never answered).
// - Record: the same vLLM counters and gauges as InferenceService (fractional counts carried
//   until whole), so the autoscaler, the attribution and the metrics read it unchanged;
//   instead of completions, each arrival minute's TTFT p95 (nearest rank over the minute's
//   arrivals, each slice's arrivals spread as its level's quantiles).
// What it leaves out: KV-cache preemption storms beyond what the calibration saw, the
// router's imbalance between replicas, and per-request variety within a slice.
// docs/twin-inference.md compares it with InferenceService on the example day.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "twin/inference/service.hpp"
#include "twin/inference/service_model.hpp"

namespace gpubank::twin::inference {

inline constexpr std::size_t kFluidQuantiles = 200;  // TTFT quantiles per level, at (i + 0.5) / 200
inline constexpr std::int64_t kFluidSliceMs = 5'000;

// One rung: `replicas` replicas behind the router, each offered offered_rps.
struct LoadLevel {
  double offered_rps = 0, served_rps = 0;  // per replica
  double running = 0, waiting = 0, kv_usage = 0, busy = 0;  // per replica, means over the measured window
  double e2e_mean_us = 0, itl_mean_us = 0;
  std::array<std::int64_t, kFluidQuantiles> ttft_us{};
};

// The ladder of one replica count: the router's least-outstanding choice pools the
// replicas' queues, so four replicas at a load each queue less than one alone.
struct Ladder {
  int replicas = 1;
  double saturation_rps = 0;      // per replica, overloaded
  std::vector<LoadLevel> levels;  // ascending offered_rps, each served in steady state
};

struct Calibration {
  std::vector<Ladder> ladders;  // ascending replicas
};

// The replica counts calibrate() climbs a ladder for by default.
inline constexpr std::array<int, 2> kCalibrationReplicas{1, 4};

// Requests at `rps` (Poisson) over [0, horizon_ms), sorted, ids from 0.
using LoadMaker = std::function<std::vector<Request>(double rps, std::int64_t horizon_ms)>;

// How long each rung runs, in virtual time: warm-up, the measured window, a tail in which
// arrivals go on while the window's last requests finish, and the sampling period of the
// queue gauges. The defaults suit an LLM (seconds per request); a service whose requests
// take milliseconds (an embed service: thousands per second) reaches its steady state in
// seconds, and a shorter window keeps the calibration's request count, and its cost, alike.
struct CalibrationWindows {
  std::int64_t warmup_ms = 60'000;
  std::int64_t measure_ms = 360'000;
  std::int64_t tail_ms = 60'000;
  std::int64_t sample_ms = 1'000;
};

// `reference_rps`: a guess of one replica's capacity; each ladder runs from 10 % of it in
// steps of 10 % until a level is overloaded (at most 6 times it). Errors: a service that
// cannot be served, replicas that cannot hold even the lowest level, windows that are not
// whole numbers of samples.
[[nodiscard]] Expected<Calibration> calibrate(const Service& service, double reference_rps, const LoadMaker& load,
                                              std::span<const int> replica_counts = kCalibrationReplicas,
                                              const CalibrationWindows& windows = {});

class FluidService final : public ServiceModel {
 public:
  // Nothing (and findings) when check_service finds errors.
  [[nodiscard]] static std::optional<FluidService> create(Service service, std::shared_ptr<const Calibration> calibration,
                                                          Diagnostics& findings);

  [[nodiscard]] const Service& service() const override { return service_; }
  [[nodiscard]] const ReplicaCosts& costs() const override { return costs_; }
  [[nodiscard]] std::int64_t now_ms() const override { return now_ms_; }
  bool add_requests(std::span<const Request> requests, Diagnostics& findings) override;
  ReplicaId add_replica(ReplicaSpec spec, std::int64_t ready_at_ms) override;
  Expected<std::monostate> start_drain(ReplicaId replica) override;
  Expected<std::int64_t> abort_replica(ReplicaId replica) override;
  bool advance_to(std::int64_t t_ms) override;
  [[nodiscard]] ServiceSnapshot snapshot() const override;
  [[nodiscard]] std::size_t replica_count() const override { return replicas_.size(); }
  [[nodiscard]] ReplicaState replica_state(ReplicaId replica) const override { return replicas_.at(replica).state; }
  [[nodiscard]] std::int64_t router_waiting() const override;
  [[nodiscard]] ReplicaSnapshot replica_snapshot(ReplicaId replica) const override;
  [[nodiscard]] const VllmCounters& counters(ReplicaId replica) const override;

  [[nodiscard]] const std::vector<Completion>& completions() const override { return no_completions_; }
  [[nodiscard]] const std::vector<MinuteTtft>* minute_ttft() const override { return &minutes_; }
  [[nodiscard]] bool takes_batches() const override { return true; }
  // Counted load (what the platform hands it): a batch that a slice cuts is split in
  // proportion to time. add_requests is for tests and small loads.
  bool add_batches(std::span<const ArrivalBatch> batches) override;

 private:
  // A level between two calibrated ones (or the saturated top one), with a wait in front.
  struct Level {
    double running = 0, waiting = 0, kv_usage = 0, busy = 0, e2e_mean_us = 0, itl_mean_us = 0;
    std::array<std::int64_t, kFluidQuantiles> ttft_us{};
    // Share of its arrivals per vLLM TTFT bucket with no wait in front (the last is +Inf).
    std::array<double, kTtftBucketsSeconds.size() + 1> bucket_share{};
    bool never = false;  // no replica will answer
  };
  struct Replica {
    ReplicaId id = 0;
    std::string name;
    ReplicaState state = ReplicaState::loading;
    std::uint32_t weight = 1;
    std::int64_t ready_at_ms = 0;
    std::int64_t drain_start_ms = 0, drain_end_ms = -1;
    double drain_in_flight = 0;
    double running = 0, waiting = 0, kv_usage = 0, busy = 0;  // now
    VllmCounters counters;
    std::array<double, kTtftBucketsSeconds.size() + 1> ttft_carry{};
    double e2e_carry = 0, itl_carry = 0, prompt_carry = 0, generation_carry = 0, finished_carry = 0;
    std::int64_t finished = 0;
    double busy_us = 0;
  };
  struct Arrivals {
    double count = 0, prompt_tokens = 0, output_tokens = 0;
  };
  struct MinuteEntry {
    double arrivals = 0;
    std::int64_t wait_us = 0;
    const Level* level = nullptr;  // into levels_cache_
  };

  FluidService(Service service, ReplicaCosts costs, std::shared_ptr<const Calibration> calibration);

  void slice(std::int64_t a_ms, std::int64_t b_ms);
  Arrivals take_arrivals(std::int64_t through_ms);
  const Level& level_for(double rps_per_replica, bool saturated, std::size_t replicas);
  // What one replica finishes per second when overloaded, with `replicas` serving.
  [[nodiscard]] double saturation_rps(std::size_t replicas) const;
  // The two ladders around a replica count and the weight of the upper one.
  struct Between {
    const Ladder* lo = nullptr;
    const Ladder* hi = nullptr;
    double w = 0;
  };
  [[nodiscard]] Between ladders_for(std::size_t replicas) const;
  void record_minute(std::int64_t arrival_ms, double arrivals, std::int64_t wait_us, const Level& level);
  void close_minutes(std::int64_t before_ms);
  static void observe(Replica& r, const Level& level, double arrivals, std::int64_t wait_us, double served,
                      double prompt_tokens, double output_tokens);
  [[nodiscard]] std::int64_t in_flight(const Replica& r) const;

  Service service_;
  ReplicaCosts costs_;
  std::shared_ptr<const Calibration> calibration_;
  std::int64_t now_ms_ = 0;
  std::vector<Request> arrivals_;
  std::size_t next_arrival_ = 0;
  std::deque<ArrivalBatch> batches_;
  std::vector<Replica> replicas_;
  double backlog_ = 0;
  double rate_smoothed_ = 0;  // arrivals per second, exponentially smoothed (time constant 60 s)
  bool rate_seeded_ = false;  // arrived, beyond what the ready replicas hold in steady state
  double arrived_total_ = 0, prompt_total_ = 0, output_total_ = 0;
  std::int64_t arrived_ = 0, rejected_ = 0, aborted_ = 0;
  std::vector<MinuteTtft> minutes_;
  std::vector<MinuteEntry> open_minute_;
  std::int64_t open_minute_index_ = 0;
  // Levels by replica count (capped at the largest ladder's) and per-replica load in
  // hundredths of saturation (negative: saturated), computed once each; the map keeps
  // their addresses stable.
  std::map<std::int64_t, std::unique_ptr<Level>> levels_cache_;

  std::vector<Completion> no_completions_;
};

}  // namespace gpubank::twin::inference
