#include "twin/inference/service.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace gpubank::twin::inference {

namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

template <class T>
void check_range(Diagnostics& out, const Service& s, std::string_view path, T value, T low, T high) {
  // Written so that NaN fails too.
  if (value >= low && value <= high) return;
  Diagnostic d;
  d.rule = std::string(kRuleServiceField);
  d.kind = "Service";
  d.name = s.name;
  d.path = std::string(path);
  d.message = std::string(path) + " must be between " + std::to_string(low) + " and " + std::to_string(high) +
              ", not " + std::to_string(value);
  out.push_back(std::move(d));
}

void add_finding(Diagnostics& out, const Service& s, std::string_view rule, std::string_view path,
                 std::string message) {
  Diagnostic d;
  d.rule = std::string(rule);
  d.kind = "Service";
  d.name = s.name;
  d.path = std::string(path);
  d.message = std::move(message);
  out.push_back(std::move(d));
}

Unexpected no_replica(ReplicaId id) { return Unexpected{"no replica " + std::to_string(id)}; }

}  // namespace

std::string_view to_string(ReplicaState state) {
  switch (state) {
    case ReplicaState::loading: return "loading";
    case ReplicaState::ready: return "ready";
    case ReplicaState::draining: return "draining";
    case ReplicaState::removed: return "removed";
  }
  return "unknown";
}

Diagnostics check_service(const Service& s) {
  Diagnostics out;
  if (s.name.empty()) add_finding(out, s, kRuleServiceField, "name", "name must not be empty");
  if (s.model_name.empty()) add_finding(out, s, kRuleServiceField, "modelName", "modelName must not be empty");
  check_range(out, s, "tensorParallelSize", s.tensor_parallel_size, 1, 64);
  check_range<std::int64_t>(out, s, "model.parameters", s.model.parameters, 1, 100'000'000'000'000);
  check_range(out, s, "model.bytesPerParameter", s.model.bytes_per_parameter, 1, 8);
  check_range(out, s, "model.numLayers", s.model.num_layers, 1, 1024);
  check_range(out, s, "model.numKvHeads", s.model.num_kv_heads, 1, 1024);
  check_range(out, s, "model.headDim", s.model.head_dim, 1, 4096);
  check_range(out, s, "model.kvDtypeBytes", s.model.kv_dtype_bytes, 1, 8);
  check_range(out, s, "model.maxModelLen", s.model.max_model_len, 1, 16'777'216);
  check_range(out, s, "engine.gpuMemoryUtilization", s.engine.gpu_memory_utilization, 0.01, 1.0);
  check_range(out, s, "engine.blockSize", s.engine.block_size, 1, 1024);
  check_range(out, s, "engine.maxNumSeqs", s.engine.max_num_seqs, 1, 65'536);
  check_range(out, s, "engine.maxNumBatchedTokens", s.engine.max_num_batched_tokens, 1, 16'777'216);
  check_range(out, s, "engine.memoryEfficiency", s.engine.memory_efficiency, 0.01, 1.0);
  check_range(out, s, "engine.computeEfficiency", s.engine.compute_efficiency, 0.01, 1.0);
  check_range<std::int64_t>(out, s, "engine.stepOverheadUs", s.engine.step_overhead_us, 0, 10'000'000);
  if (!find_gpu(s.gpu_model)) {
    std::string known;
    for (const auto& g : known_gpus()) known += (known.empty() ? "" : ", ") + std::string(g.model);
    add_finding(out, s, kRuleGpuModel, "gpuModel",
                "gpuModel \"" + s.gpu_model + "\" has no entry in the twin's GPU table (" + known + ")");
  }
  if (has_errors(out)) return out;
  if (!replica_costs(s.model, s.engine, s.gpu_model, s.tensor_parallel_size)) {
    add_finding(out, s, kRuleKvCapacity, "tensorParallelSize",
                "the weights (" + std::to_string(s.model.parameters * s.model.bytes_per_parameter) +
                    " bytes) leave no room for one KV cache block on " + std::to_string(s.tensor_parallel_size) +
                    " x " + s.gpu_model + " at gpuMemoryUtilization " +
                    std::to_string(s.engine.gpu_memory_utilization));
  }
  return out;
}

std::optional<InferenceService> InferenceService::create(Service service, Diagnostics& findings,
                                                         ServiceOptions options) {
  auto problems = check_service(service);
  if (has_errors(problems)) {
    findings.insert(findings.end(), problems.begin(), problems.end());
    return std::nullopt;
  }
  auto costs = replica_costs(service.model, service.engine, service.gpu_model, service.tensor_parallel_size);
  options.max_steps_per_run = std::max<std::int64_t>(options.max_steps_per_run, 1);
  return InferenceService(std::move(service), *costs, options);
}

InferenceService::InferenceService(Service service, ReplicaCosts costs, ServiceOptions options)
    : service_(std::move(service)), costs_(costs), options_(options) {}

std::string_view to_string(Task task) { return task == Task::Embed ? "embed" : "generate"; }

bool check_requests(std::span<const Request> requests, std::int64_t not_before_ms, Diagnostics& findings, Task task) {
  const std::size_t before = findings.size();
  std::int64_t last = not_before_ms;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& q = requests[i];
    std::string problem;
    if (q.arrival_ms < last) {
      problem = "arrival " + std::to_string(q.arrival_ms) + " ms is before " + std::to_string(last) +
                " ms (requests must be sorted and not in the past)";
    } else if (q.arrival_ms > std::numeric_limits<std::int64_t>::max() / (4 * InferenceService::kUsPerMs)) {
      problem = "arrival " + std::to_string(q.arrival_ms) + " ms is out of range";
    } else if (q.prompt_tokens < 1 || q.output_tokens < 1) {
      problem = "promptTokens and outputTokens must be at least 1, not " + std::to_string(q.prompt_tokens) +
                " and " + std::to_string(q.output_tokens);
    } else if (task == Task::Embed && q.output_tokens != 1) {
      problem = "outputTokens must be 1 for an embed service (its output is one vector), not " +
                std::to_string(q.output_tokens);
    }
    if (!problem.empty()) {
      Diagnostic d;
      d.rule = std::string(kRuleRequest);
      d.kind = "Request";
      d.name = std::to_string(q.id);
      d.path = "requests[" + std::to_string(i) + "]";
      d.message = std::move(problem);
      findings.push_back(std::move(d));
      continue;
    }
    last = q.arrival_ms;
  }
  return findings.size() == before;
}

metrics::Family router_waiting_family(const std::string& model_name, std::int64_t waiting) {
  metrics::Family router{"gpubank_inference_router_waiting_requests", metrics::MetricType::gauge,
                         "Requests of an inference service waiting at the twin's router for a ready replica.",
                         {}};
  router.samples.push_back({router.name, {{"model_name", model_name}}, static_cast<double>(waiting), {}});
  return router;
}

bool InferenceService::add_requests(std::span<const Request> requests, Diagnostics& findings) {
  std::int64_t last = arrivals_.empty() ? now_us_ / kUsPerMs : arrivals_.back().arrival_ms;
  if (arrivals_.empty() && now_us_ % kUsPerMs != 0) ++last;  // not before now
  if (!check_requests(requests, last, findings, service_.task)) return false;
  if (next_arrival_ > 0 && next_arrival_ * 2 >= arrivals_.size()) {
    arrivals_.erase(arrivals_.begin(), arrivals_.begin() + static_cast<std::ptrdiff_t>(next_arrival_));
    next_arrival_ = 0;
  }
  arrivals_.insert(arrivals_.end(), requests.begin(), requests.end());
  return true;
}

ReplicaId InferenceService::add_replica(ReplicaSpec spec, std::int64_t ready_at_ms) {
  Replica r;
  r.id = static_cast<ReplicaId>(replicas_.size());
  r.name = spec.name.empty() ? "replica-" + std::to_string(r.id) : std::move(spec.name);
  r.weight = spec.weight;
  r.ready_at_us = std::max(ready_at_ms * kUsPerMs, now_us_);
  r.clock_us = r.ready_at_us;
  r.free_blocks = costs_.kv_blocks;
  replicas_.push_back(std::move(r));
  return replicas_.back().id;
}

Expected<InferenceService::Replica*> InferenceService::find(ReplicaId id) {
  if (id >= replicas_.size() || replicas_[id].state == ReplicaState::removed) return no_replica(id);
  return &replicas_[id];
}

Expected<std::monostate> InferenceService::start_drain(ReplicaId id) {
  auto r = find(id);
  if (!r) return Unexpected{r.error()};
  (*r)->state = ReplicaState::draining;
  (*r)->weight = 0;
  return std::monostate{};
}

Expected<std::monostate> InferenceService::set_weight(ReplicaId id, std::uint32_t weight) {
  auto r = find(id);
  if (!r) return Unexpected{r.error()};
  if ((*r)->state == ReplicaState::draining) {
    return Unexpected{"replica " + std::to_string(id) + " is draining: its weight stays 0"};
  }
  (*r)->weight = weight;
  while (!router_queue_.empty()) {
    Replica* to = choose_replica();
    if (to == nullptr) break;
    Seq seq = std::move(router_queue_.front());
    router_queue_.pop_front();
    enqueue(*to, std::move(seq), now_us_);
  }
  return std::monostate{};
}

bool InferenceService::is_drained(ReplicaId id) const {
  if (id >= replicas_.size()) return false;
  const Replica& r = replicas_[id];
  return r.state == ReplicaState::draining && r.running.empty() && r.waiting.empty() && !r.in_flight && !r.run;
}

Expected<std::monostate> InferenceService::remove_replica(ReplicaId id) {
  auto r = find(id);
  if (!r) return Unexpected{r.error()};
  Replica& replica = **r;
  const bool idle = replica.running.empty() && replica.waiting.empty() && !replica.in_flight && !replica.run;
  if (!(replica.state == ReplicaState::loading || (replica.state == ReplicaState::draining && idle))) {
    return Unexpected{"replica " + std::to_string(id) + " is " + std::string(to_string(replica.state)) + " with " +
                      std::to_string(replica.running.size() + replica.waiting.size()) +
                      " requests in flight: drain it first"};
  }
  replica.state = ReplicaState::removed;
  replica.weight = 0;
  return std::monostate{};
}

Expected<std::int64_t> InferenceService::abort_replica(ReplicaId id) {
  auto r = find(id);
  if (!r) return Unexpected{r.error()};
  Replica& replica = **r;
  const auto cut = static_cast<std::int64_t>(replica.running.size() + replica.waiting.size());
  replica.running.clear();
  replica.waiting.clear();
  replica.in_flight.reset();
  replica.run.reset();
  replica.free_blocks = costs_.kv_blocks;
  replica.load_factor = 0;
  replica.state = ReplicaState::removed;
  replica.weight = 0;
  aborted_ += cut;
  return cut;
}

InferenceService::Replica* InferenceService::choose_replica() {
  Replica* best = nullptr;
  std::int64_t best_out = 0;
  for (Replica& r : replicas_) {
    if (r.state != ReplicaState::ready || r.weight == 0) continue;
    const auto out = static_cast<std::int64_t>(r.running.size() + r.waiting.size());
    // out / weight < best_out / best->weight, without division; ties keep the lower id.
    if (best == nullptr || out * static_cast<std::int64_t>(best->weight) < best_out * static_cast<std::int64_t>(r.weight)) {
      best = &r;
      best_out = out;
    }
  }
  return best;
}

void InferenceService::enqueue(Replica& r, Seq seq, std::int64_t at_us) {
  seq.dispatched_us = at_us;
  if (r.run) cut_run(r, at_us);
  if (!r.in_flight && !r.run) r.clock_us = std::max(r.clock_us, at_us);
  r.waiting.push_back(std::move(seq));
}

void InferenceService::route(Seq seq, std::int64_t at_us) {
  if (seq.request.prompt_tokens + static_cast<std::int64_t>(seq.request.output_tokens) > costs_.max_request_tokens) {
    ++rejected_;
    return;
  }
  if (!router_queue_.empty()) {  // FIFO: nobody overtakes requests waiting at the router
    router_queue_.push_back(std::move(seq));
    return;
  }
  Replica* to = choose_replica();
  if (to == nullptr) {
    router_queue_.push_back(std::move(seq));
    return;
  }
  enqueue(*to, std::move(seq), at_us);
}

bool InferenceService::advance_to(std::int64_t t_ms) {
  if (t_ms > std::numeric_limits<std::int64_t>::max() / (4 * kUsPerMs)) return false;
  const std::int64_t until = t_ms * kUsPerMs;
  if (until < now_us_) return false;
  while (true) {
    std::int64_t next = kNever;
    if (next_arrival_ < arrivals_.size()) next = arrivals_[next_arrival_].arrival_ms * kUsPerMs;
    for (const Replica& r : replicas_) {
      if (r.state == ReplicaState::loading) next = std::min(next, r.ready_at_us);
    }
    if (next > until) break;
    for (Replica& r : replicas_) {
      if (r.state != ReplicaState::removed) advance_replica(r, next);
    }
    for (Replica& r : replicas_) {
      if (r.state == ReplicaState::loading && r.ready_at_us <= next) r.state = ReplicaState::ready;
    }
    while (!router_queue_.empty()) {
      Replica* to = choose_replica();
      if (to == nullptr) break;
      Seq seq = std::move(router_queue_.front());
      router_queue_.pop_front();
      enqueue(*to, std::move(seq), next);
    }
    while (next_arrival_ < arrivals_.size() && arrivals_[next_arrival_].arrival_ms * kUsPerMs == next) {
      Seq seq;
      seq.request = arrivals_[next_arrival_++];
      seq.arrival_us = next;
      ++arrived_;
      route(std::move(seq), next);
    }
  }
  for (Replica& r : replicas_) {
    if (r.state == ReplicaState::removed) continue;
    advance_replica(r, until);
    const std::int64_t busy = busy_us(r, until);
    r.load_factor = until > now_us_ ? static_cast<double>(busy - r.busy_at_last_advance_us) /
                                          static_cast<double>(until - now_us_)
                                    : 0.0;
    r.busy_at_last_advance_us = busy;
  }
  now_us_ = until;
  return true;
}

std::int64_t InferenceService::busy_us(const Replica& r, std::int64_t at_us) const {
  std::int64_t busy = r.busy_applied_us;
  if (r.in_flight) {
    busy += std::clamp(at_us - r.in_flight->start_us, std::int64_t{0}, r.in_flight->end_us - r.in_flight->start_us);
  }
  // advance_replica(at_us) applied every step of a run that ended by then.
  if (r.run) busy += std::max<std::int64_t>(at_us - r.run->start_us, 0);
  return busy;
}

void InferenceService::advance_replica(Replica& r, std::int64_t until_us) {
  while (true) {
    if (r.run) {
      if (!advance_run(r, until_us)) return;
      continue;
    }
    if (r.in_flight) {
      if (r.in_flight->end_us > until_us) return;
      Step step = std::move(*r.in_flight);
      r.in_flight.reset();
      apply(r, step);
      r.clock_us = step.end_us;
      r.busy_applied_us += step.end_us - step.start_us;
      continue;
    }
    if (r.running.empty() && r.waiting.empty()) return;
    // A step starting exactly at until_us waits for the arrivals of that instant.
    if (r.clock_us >= until_us) return;
    bool pure_decode = false;
    Step step = schedule(r, r.clock_us, pure_decode);
    if (step.scheduled.empty()) return;  // cannot happen: the oldest request always fits alone
    if (pure_decode && options_.max_steps_per_run > 1) {
      r.run = plan_run(r, step);
    } else {
      r.in_flight = std::move(step);
    }
  }
}

void InferenceService::preempt_newest(Replica& r) {
  Seq seq = std::move(r.running.back());
  r.running.pop_back();
  r.free_blocks += seq.blocks;
  seq.blocks = 0;
  seq.computed = 0;
  ++seq.preemptions;
  ++r.counters.preemptions;
  r.waiting.push_front(std::move(seq));
}

InferenceService::Step InferenceService::schedule(Replica& r, std::int64_t start_us, bool& pure_decode) {
  Step step;
  step.start_us = start_us;
  std::int64_t budget = service_.engine.max_num_batched_tokens;
  bool preempted = false;
  bool all_decode = true;
  std::size_t i = 0;
  while (i < r.running.size()) {
    Seq& seq = r.running[i];
    const std::int64_t want = seq.tokens() - seq.computed;
    const std::int64_t n = std::min(want, budget);
    if (n <= 0) {
      all_decode = false;
      ++i;
      continue;
    }
    const std::int64_t need = costs_.blocks_for(seq.computed + n) - seq.blocks;
    bool preempted_self = false;
    while (need > r.free_blocks) {
      preempted = true;
      if (r.running.size() - 1 == i) {
        preempted_self = true;
        preempt_newest(r);
        break;
      }
      preempt_newest(r);
    }
    if (preempted_self) break;
    Seq& kept = r.running[i];  // preemption popped other entries, never this one
    kept.blocks += need;
    r.free_blocks -= need;
    budget -= n;
    if (want != 1 || seq.generated == 0) all_decode = false;
    step.scheduled.push_back({i, n});
    ++i;
  }
  bool admitted = false;
  if (!preempted) {
    while (!r.waiting.empty() && r.running.size() < static_cast<std::size_t>(service_.engine.max_num_seqs) &&
           budget > 0) {
      Seq& seq = r.waiting.front();
      const std::int64_t n = std::min(seq.tokens() - seq.computed, budget);
      const std::int64_t need = costs_.blocks_for(seq.computed + n) - seq.blocks;
      if (need > r.free_blocks) break;
      seq.blocks += need;
      r.free_blocks -= need;
      budget -= n;
      r.running.push_back(std::move(seq));
      r.waiting.pop_front();
      step.scheduled.push_back({r.running.size() - 1, n});
      admitted = true;
    }
  }
  std::int64_t tokens = 0;
  std::int64_t context = 0;
  for (const Scheduled& s : step.scheduled) {
    tokens += s.tokens;
    context += r.running[s.position].computed + s.tokens;
  }
  step.end_us = start_us + costs_.step_us(tokens, context);
  pure_decode = all_decode && !preempted && !admitted && step.scheduled.size() == r.running.size() &&
                !r.running.empty();
  return step;
}

InferenceService::DecodeRun InferenceService::plan_run(const Replica& r, const Step& first) const {
  DecodeRun run;
  run.start_us = first.start_us;
  run.batch = static_cast<std::int64_t>(r.running.size());
  std::int64_t steps_to_finish = kNever;
  std::int64_t held = r.free_blocks;  // free blocks plus those of the batch (waiting requests hold none)
  for (const Seq& seq : r.running) {
    steps_to_finish = std::min<std::int64_t>(steps_to_finish, seq.request.output_tokens - seq.generated);
    held += seq.blocks;
    run.context0 += seq.computed;
  }
  // k steps fit in the KV cache when every request's computed + k tokens do (monotone in k).
  auto fits = [&](std::int64_t k) {
    std::int64_t blocks = 0;
    for (const Seq& seq : r.running) blocks += costs_.blocks_for(seq.computed + k);
    return blocks <= held;
  };
  std::int64_t low = 1;  // the first step's blocks are allocated already
  std::int64_t high = std::min(steps_to_finish, options_.max_steps_per_run);
  if (fits(high)) low = high;  // the common case: the cache is far from full
  while (low < high) {
    const std::int64_t mid = low + (high - low + 1) / 2;
    if (fits(mid)) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  run.steps = low;
  return run;
}

std::int64_t InferenceService::run_step_us(const DecodeRun& run, std::int64_t m) const {
  return costs_.step_us(run.batch, run.context0 + run.batch * (m + 1));
}

bool InferenceService::advance_run(Replica& r, std::int64_t until_us) {
  DecodeRun& run = *r.run;
  VllmCounters& c = r.counters;
  std::int64_t t = run.start_us;
  std::int64_t m = run.next;
  while (m < run.steps) {
    const std::int64_t d = run_step_us(run, m);
    if (t + d > until_us) break;
    t += d;
    if (m == 0) {
      for (const Seq& seq : r.running) c.inter_token_latency.observe(t - seq.last_token_us);
    } else {
      c.inter_token_latency.observe(d, run.batch);  // every request's previous token ended step m - 1
    }
    ++m;
  }
  const std::int64_t applied = m - run.next;
  const bool over = m == run.steps;
  // Step `m` has started when it exists and begins before until_us (as a single step would
  // have been planned); its KV blocks are then allocated.
  const bool started = !over && t < until_us;
  if (applied == 0 && (run.next_allocated || !started)) return false;
  if (applied > 0) {
    c.generation_tokens += run.batch * applied;
    r.busy_applied_us += t - run.start_us;
    run.start_us = t;
    run.next = m;
  }
  for (Seq& seq : r.running) {
    seq.computed += applied;
    seq.generated += applied;
    if (applied > 0) seq.last_token_us = t;
    const std::int64_t want = costs_.blocks_for(seq.computed + (started ? 1 : 0));
    r.free_blocks -= want - seq.blocks;
    seq.blocks = want;
  }
  run.next_allocated = started;
  if (!over) return false;
  r.clock_us = t;
  r.run.reset();
  finish_done(r, t);
  return true;
}

void InferenceService::cut_run(Replica& r, std::int64_t at_us) {
  DecodeRun& run = *r.run;
  // Keep the steps that start before at_us; later ones wait for the new request.
  std::int64_t t = run.start_us;
  std::int64_t m = run.next;
  while (m < run.steps && t < at_us) t += run_step_us(run, m++);
  run.steps = m;
  if (run.steps > run.next) return;
  // The run ends at the boundary at_us (advance_replica(at_us) applied everything before).
  r.clock_us = run.start_us;
  r.run.reset();
}

void InferenceService::apply(Replica& r, const Step& step) {
  const std::int64_t end = step.end_us;
  VllmCounters& c = r.counters;
  bool any_finished = false;
  for (const Scheduled& s : step.scheduled) {
    Seq& seq = r.running[s.position];
    seq.computed += s.tokens;
    if (seq.computed != seq.tokens()) continue;  // a prefill chunk that is not the last
    ++seq.generated;
    ++c.generation_tokens;
    if (seq.first_token_us < 0) {
      seq.first_token_us = end;
      c.time_to_first_token.observe(end - seq.dispatched_us);
      c.prompt_tokens += seq.request.prompt_tokens;
    } else {
      c.inter_token_latency.observe(end - seq.last_token_us);
    }
    seq.last_token_us = end;
    if (seq.generated >= seq.request.output_tokens) any_finished = true;
  }
  if (any_finished) finish_done(r, end);
}

void InferenceService::finish_done(Replica& r, std::int64_t end) {
  VllmCounters& c = r.counters;
  bool any_finished = false;
  for (Seq& seq : r.running) {
    if (seq.generated < seq.request.output_tokens) continue;
    any_finished = true;
    r.free_blocks += seq.blocks;
    seq.blocks = 0;
    ++c.request_success[0];  // "stop": the trace's generated tokens end where the model stopped
    c.e2e_request_latency.observe(end - seq.dispatched_us);
    ++r.finished;
    ++finished_;
    if (options_.keep_completions) {
      completions_.push_back({seq.request.id, r.id, seq.arrival_us, seq.dispatched_us, seq.first_token_us, end,
                              seq.preemptions});
    }
  }
  if (any_finished) {
    std::erase_if(r.running, [](const Seq& seq) { return seq.generated >= seq.request.output_tokens; });
  }
}

ReplicaSnapshot InferenceService::replica_snapshot(ReplicaId id) const {
  const Replica& r = replicas_.at(id);
  ReplicaSnapshot s;
  s.id = r.id;
  s.name = r.name;
  s.state = r.state;
  s.weight = r.weight;
  s.running = static_cast<std::int64_t>(r.running.size());
  s.waiting = static_cast<std::int64_t>(r.waiting.size());
  s.in_flight = s.running + s.waiting;
  s.kv_cache_usage = static_cast<double>(costs_.kv_blocks - r.free_blocks) / static_cast<double>(costs_.kv_blocks);
  s.prompt_tokens = r.counters.prompt_tokens;
  s.generation_tokens = r.counters.generation_tokens;
  s.finished = r.finished;
  s.preemptions = r.counters.preemptions;
  s.busy_us = busy_us(r, now_us_);
  s.load_factor = r.load_factor;
  return s;
}

ServiceSnapshot InferenceService::snapshot() const {
  ServiceSnapshot s;
  s.now_ms = now_us_ / kUsPerMs;
  s.router_waiting = static_cast<std::int64_t>(router_queue_.size());
  s.arrived = arrived_;
  s.rejected = rejected_;
  s.finished = finished_;
  s.aborted = aborted_;
  for (const Replica& r : replicas_) s.replicas.push_back(replica_snapshot(r.id));
  return s;
}

const VllmCounters& InferenceService::counters(ReplicaId id) const { return replicas_.at(id).counters; }

metrics::Exposition ServiceModel::exposition(const VllmExpositionOptions& options) const {
  std::vector<VllmReplicaSeries> series;
  std::vector<ReplicaSnapshot> snaps;
  for (ReplicaId id = 0; id < replica_count(); ++id) {
    const ReplicaState state = replica_state(id);
    if (state == ReplicaState::ready || state == ReplicaState::draining) snaps.push_back(replica_snapshot(id));
  }
  for (const ReplicaSnapshot& snap : snaps) {
    series.push_back({snap.name, snap.running, snap.waiting, snap.kv_cache_usage, &counters(snap.id)});
  }
  auto e = vllm_exposition(service().model_name, series, options);
  e.families.insert(e.families.begin(), router_waiting_family(service().model_name, router_waiting()));
  return e;
}

}  // namespace gpubank::twin::inference
