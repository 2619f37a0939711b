#include "twin/inference/service.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "metrics/exposition.hpp"
#include "twin/inference/load.hpp"

namespace gpubank::twin::inference {
namespace {

Service llama70b() {
  Service s;
  s.name = "chat";
  return s;  // Llama-3.1-70B on 4 x H100
}

InferenceService make(Service s, ServiceOptions options = {}) {
  Diagnostics findings;
  auto service = InferenceService::create(std::move(s), findings, options);
  EXPECT_TRUE(findings.empty()) << (findings.empty() ? "" : findings[0].to_string());
  return std::move(*service);
}

void add(InferenceService& s, const std::vector<Request>& requests) {
  Diagnostics findings;
  ASSERT_TRUE(s.add_requests(requests, findings)) << findings[0].to_string();
}

// A service whose KV cache holds exactly 4 blocks of 16 tokens: 1 x H100 at utilisation
// 0.03 is 2,565,624,299.52 bytes; weights of 1,271,000,000 x 2 bytes leave 23,624,299.52,
// and a block is 16 x 327,680 bytes, so 4.5 blocks: 4.
Service tiny_kv() {
  Service s;
  s.name = "tiny";
  s.tensor_parallel_size = 1;
  s.model.parameters = 1'271'000'000;
  s.engine.gpu_memory_utilization = 0.03;
  return s;
}

TEST(InferenceService, OneRequestGivesTheCostModelsTtftAndItl) {
  ServiceOptions options;
  options.keep_completions = true;
  auto s = make(llama70b(), options);
  const ReplicaId r = s.add_replica({"chat-0", 1}, 0);
  add(s, {{0, 1000, 3, 7}});
  ASSERT_TRUE(s.advance_to(1000));

  // Step 1 prefills the 1,000 prompt tokens and samples the first token: TTFT = 3 ms +
  // 1,000 x 141,107,412,992 FLOP / (4 x 989e12 x 0.35 FLOP/s) = 104.912 ms. Steps 2 and 3
  // decode one token each with 1,001 and 1,002 tokens of context: 3 ms + (35,276,853,248 +
  // 1,001 x 81,920) bytes / 2.01e12 B/s = 20.591 ms, and 20.592 ms.
  const std::int64_t ttft = 104'912;
  const std::int64_t itl1 = 20'591;
  const std::int64_t itl2 = 20'592;
  EXPECT_EQ(s.costs().step_us(1000, 1000), ttft);
  EXPECT_EQ(s.costs().step_us(1, 1001), itl1);
  EXPECT_EQ(s.costs().step_us(1, 1002), itl2);
  ASSERT_EQ(s.completions().size(), 1u);
  const Completion& c = s.completions()[0];
  EXPECT_EQ(c.id, 7u);
  EXPECT_EQ(c.first_token_us, ttft);
  EXPECT_EQ(c.finished_us, ttft + itl1 + itl2);

  const VllmCounters& k = s.counters(r);
  EXPECT_EQ(k.time_to_first_token.count(), 1);
  EXPECT_EQ(k.time_to_first_token.sum_us(), ttft);
  EXPECT_EQ(k.inter_token_latency.count(), 2);
  EXPECT_EQ(k.inter_token_latency.sum_us(), itl1 + itl2);
  EXPECT_EQ(k.e2e_request_latency.sum_us(), ttft + itl1 + itl2);
  EXPECT_EQ(k.prompt_tokens, 1000);
  EXPECT_EQ(k.generation_tokens, 3);
  EXPECT_EQ(k.request_success[0], 1);  // stop
  // TTFT 0.104912 s lies in the (0.1, 0.25] bucket, each ITL in (0.01, 0.025].
  EXPECT_EQ(k.time_to_first_token.bucket_counts()[8], 1);
  EXPECT_EQ(k.inter_token_latency.bucket_counts()[1], 2);

  const auto snap = s.replica_snapshot(r);
  EXPECT_EQ(snap.running, 0);
  EXPECT_EQ(snap.kv_cache_usage, 0.0);
  EXPECT_EQ(snap.busy_us, ttft + itl1 + itl2);
  // Load factor: 146.095 ms busy in the 1,000 ms since 0.
  EXPECT_DOUBLE_EQ(snap.load_factor, 0.146095);
  ASSERT_TRUE(s.advance_to(2000));
  EXPECT_EQ(s.replica_snapshot(r).load_factor, 0.0);
}

TEST(InferenceService, StateBetweenSteps) {
  auto s = make(llama70b());
  const ReplicaId r = s.add_replica({}, 0);
  add(s, {{0, 1000, 3, 1}});
  ASSERT_TRUE(s.advance_to(50));  // inside the prefill step (0 .. 104.912 ms)
  auto snap = s.replica_snapshot(r);
  EXPECT_EQ(snap.name, "replica-0");
  EXPECT_EQ(snap.running, 1);
  EXPECT_EQ(snap.waiting, 0);
  EXPECT_EQ(snap.generation_tokens, 0);
  // 1,000 prompt tokens hold ceil(1000 / 16) = 63 of 31,808 blocks.
  EXPECT_DOUBLE_EQ(snap.kv_cache_usage, 63.0 / 31'808.0);
  EXPECT_DOUBLE_EQ(snap.load_factor, 1.0);
  ASSERT_TRUE(s.advance_to(110));  // first token at 104.912 ms, second step under way
  snap = s.replica_snapshot(r);
  EXPECT_EQ(snap.generation_tokens, 1);
  EXPECT_EQ(snap.prompt_tokens, 1000);
  EXPECT_FALSE(s.advance_to(100));  // the past
}

TEST(InferenceService, FcfsAdmissionAndPreemptionWithATinyKvCache) {
  ServiceOptions options;
  options.keep_completions = true;
  auto s = make(tiny_kv(), options);
  ASSERT_EQ(s.costs().kv_blocks, 4);
  ASSERT_EQ(s.costs().max_request_tokens, 64);
  const ReplicaId r = s.add_replica({}, 0);
  // A and B take 2 blocks each for their 30-token prompts; C waits although it is shorter.
  // D (70 tokens) can never fit in 64 and is refused, as vLLM refuses a request above its
  // maximum length.
  add(s, {{0, 30, 10, 0}, {0, 30, 10, 1}, {0, 30, 2, 2}, {0, 60, 10, 3}});
  ASSERT_TRUE(s.advance_to(0));
  // Arrivals at 0 are routed (D refused at the router); the step at 0 has not started.
  auto snap = s.replica_snapshot(r);
  EXPECT_EQ(s.snapshot().rejected, 1);
  EXPECT_EQ(snap.running, 0);
  EXPECT_EQ(snap.waiting, 3);
  ASSERT_TRUE(s.advance_to(1));
  snap = s.replica_snapshot(r);
  EXPECT_EQ(snap.running, 2);
  EXPECT_EQ(snap.waiting, 1);
  EXPECT_EQ(snap.kv_cache_usage, 1.0);

  ASSERT_TRUE(s.advance_to(60'000));
  // A and B decode in lockstep; A's fourth step needs a third block (30 + 3 computed
  // tokens + 1): the newest running request, B (3 tokens generated), is preempted to the
  // front of the waiting queue and frees its 2 blocks. B's recompute needs 33 tokens = 3
  // blocks, so B comes back only when A finishes, and C (2 blocks) waits behind it until
  // B finishes: FCFS throughout, A, B, C.
  const auto& done = s.completions();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].id, 0u);
  EXPECT_EQ(done[1].id, 1u);
  EXPECT_EQ(done[2].id, 2u);
  EXPECT_EQ(done[0].preemptions, 0);
  EXPECT_EQ(done[1].preemptions, 1);
  EXPECT_EQ(done[2].preemptions, 0);
  EXPECT_LE(done[0].finished_us, done[1].finished_us);
  EXPECT_LE(done[1].finished_us, done[2].first_token_us);  // C's first token after B is done
  const VllmCounters& k = s.counters(r);
  EXPECT_EQ(k.preemptions, 1);
  EXPECT_EQ(k.prompt_tokens, 90);       // counted once, at the first token, not on recompute
  EXPECT_EQ(k.generation_tokens, 22);   // 10 + 10 + 2
  EXPECT_EQ(k.time_to_first_token.count(), 3);
  EXPECT_EQ(k.inter_token_latency.count(), 19);  // every token after the first
  EXPECT_EQ(s.replica_snapshot(r).kv_cache_usage, 0.0);
}

TEST(InferenceService, RouterSpreadsByWeight) {
  auto s = make(llama70b());
  const ReplicaId light = s.add_replica({"light", 1}, 0);
  const ReplicaId heavy = s.add_replica({"heavy", 3}, 0);
  std::vector<Request> load;
  for (int i = 0; i < 8; ++i) load.push_back({i, 100, 5000, static_cast<std::uint64_t>(i)});
  add(s, load);
  ASSERT_TRUE(s.advance_to(10));
  // Fewest outstanding per weight, ties to the lower id: light, heavy, heavy, heavy,
  // light (3/3 ties 1/1), heavy, heavy, heavy.
  EXPECT_EQ(s.replica_snapshot(light).in_flight, 2);
  EXPECT_EQ(s.replica_snapshot(heavy).in_flight, 6);
}

TEST(InferenceService, DrainLetsTheStreamFinishAndRoutesNothingNew) {
  ServiceOptions options;
  options.keep_completions = true;
  auto s = make(llama70b(), options);
  const ReplicaId old_replica = s.add_replica({"old", 1}, 0);
  add(s, {{0, 100, 1000, 1}});  // ~1,000 tokens at ~20 ms: about 20 s
  ASSERT_TRUE(s.advance_to(1000));
  const ReplicaId new_replica = s.add_replica({"new", 1}, 1000);
  ASSERT_TRUE(s.start_drain(old_replica));
  EXPECT_FALSE(s.is_drained(old_replica));
  EXPECT_FALSE(s.remove_replica(old_replica));
  add(s, {{2000, 100, 10, 2}, {3000, 100, 10, 3}});
  ASSERT_TRUE(s.advance_to(10'000));
  EXPECT_EQ(s.replica_snapshot(old_replica).in_flight, 1);
  EXPECT_EQ(s.replica_snapshot(new_replica).finished, 2);
  EXPECT_EQ(s.replica_snapshot(old_replica).state, ReplicaState::draining);
  ASSERT_TRUE(s.advance_to(60'000));
  EXPECT_TRUE(s.is_drained(old_replica));
  EXPECT_EQ(s.replica_snapshot(old_replica).finished, 1);
  EXPECT_EQ(s.counters(old_replica).generation_tokens, 1000);
  ASSERT_TRUE(s.remove_replica(old_replica));
  EXPECT_EQ(s.replica_snapshot(old_replica).state, ReplicaState::removed);
  // The removed replica leaves the exposition; the new one stays.
  const auto e = s.exposition();
  const auto* running = e.find("vllm:num_requests_running");
  ASSERT_NE(running, nullptr);
  ASSERT_EQ(running->samples.size(), 1u);
  EXPECT_EQ(running->samples[0].labels.back().value, "new");
}

TEST(InferenceService, AbortCutsTheRequestsInFlightAtOnce) {
  auto s = make(llama70b());
  const ReplicaId gone = s.add_replica({"gone", 1}, 0);
  const ReplicaId kept = s.add_replica({"kept", 1}, 0);
  // Four long requests: gone, kept, gone, kept (fewest outstanding, ties to the lower id).
  add(s, {{0, 100, 1000, 1}, {0, 100, 1000, 2}, {0, 100, 1000, 3}, {0, 100, 1000, 4}});
  ASSERT_TRUE(s.advance_to(1000));
  EXPECT_EQ(s.replica_snapshot(gone).in_flight, 2);
  const auto cut = s.abort_replica(gone);
  ASSERT_TRUE(cut) << cut.error();
  EXPECT_EQ(*cut, 2);
  EXPECT_EQ(s.replica_snapshot(gone).state, ReplicaState::removed);
  EXPECT_FALSE(s.abort_replica(gone));  // already gone
  // A new request goes to the replica left; the aborted ones never finish.
  add(s, {{2000, 100, 10, 5}});
  ASSERT_TRUE(s.advance_to(120'000));
  const auto snap = s.snapshot();
  EXPECT_EQ(snap.aborted, 2);
  EXPECT_EQ(snap.finished, 3);  // requests 2, 4 and 5
  EXPECT_EQ(s.replica_snapshot(kept).finished, 3);
  const auto e = s.exposition();
  const auto* running = e.find("vllm:num_requests_running");
  ASSERT_NE(running, nullptr);
  ASSERT_EQ(running->samples.size(), 1u);
  EXPECT_EQ(running->samples[0].labels.back().value, "kept");
}

TEST(InferenceService, RequestsWaitAtTheRouterUntilAReplicaIsReady) {
  ServiceOptions options;
  options.keep_completions = true;
  auto s = make(llama70b(), options);
  const ReplicaId r = s.add_replica({}, 5000);  // loading until 5 s
  add(s, {{0, 1000, 2, 1}, {10, 1000, 2, 2}});
  ASSERT_TRUE(s.advance_to(4999));
  auto snap = s.snapshot();
  EXPECT_EQ(snap.router_waiting, 2);
  EXPECT_EQ(snap.replicas[0].state, ReplicaState::loading);
  EXPECT_EQ(snap.replicas[0].in_flight, 0);
  ASSERT_TRUE(s.advance_to(6000));
  snap = s.snapshot();
  EXPECT_EQ(snap.router_waiting, 0);
  EXPECT_EQ(snap.replicas[0].state, ReplicaState::ready);
  ASSERT_EQ(s.completions().size(), 2u);
  // Both are dispatched at 5 s and prefilled together: 2,000 tokens, 3 ms + 2,000 x
  // 141,107,412,992 / 1.3846e9 FLOP/us = 206.824 ms. vLLM's TTFT starts at dispatch.
  const std::int64_t prefill = s.costs().step_us(2000, 2000);
  EXPECT_EQ(prefill, 206'824);
  EXPECT_EQ(s.completions()[0].arrival_us, 0);
  EXPECT_EQ(s.completions()[0].dispatched_us, 5'000'000);
  EXPECT_EQ(s.completions()[0].first_token_us, 5'000'000 + prefill);
  EXPECT_EQ(s.counters(r).time_to_first_token.sum_us(), 2 * prefill);
}

TEST(InferenceService, RejectsMalformedLoadAllOrNothing) {
  auto s = make(llama70b());
  Diagnostics findings;
  EXPECT_FALSE(s.add_requests(std::vector<Request>{{10, 5, 5, 1}, {5, 5, 5, 2}, {20, 0, 5, 3}}, findings));
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].path, "requests[1]");
  EXPECT_EQ(findings[0].rule, kRuleRequest);
  EXPECT_EQ(findings[1].path, "requests[2]");
  ASSERT_TRUE(s.advance_to(100));
  EXPECT_EQ(s.snapshot().arrived, 0);
  findings.clear();
  EXPECT_FALSE(s.add_requests(std::vector<Request>{{99, 5, 5, 1}}, findings));  // before now
  EXPECT_EQ(findings.size(), 1u);
}

// An embed service: a request is its prefill alone; its one output (the vector) comes with
// the step that finishes the prefill, so its TTFT is its whole latency, and the requests of
// one step all finish together.
TEST(InferenceService, AnEmbedRequestIsItsPrefillAlone) {
  Service svc;
  svc.name = "embed";
  svc.task = Task::Embed;
  svc.gpu_model = "L40S";
  svc.tensor_parallel_size = 1;
  svc.model.parameters = 568'000'000;
  svc.model.num_layers = 24;
  svc.model.num_kv_heads = 16;
  svc.model.head_dim = 64;
  svc.model.max_model_len = 8'192;
  ServiceOptions options;
  options.keep_completions = true;
  auto s = make(svc, options);
  s.add_replica({"embed-0", 1}, 0);
  add(s, {{0, 100, 1, 1}, {0, 300, 1, 2}});
  ASSERT_TRUE(s.advance_to(1000));
  ASSERT_EQ(s.completions().size(), 2u);
  const std::int64_t step = s.costs().step_us(400, 400);
  for (const Completion& c : s.completions()) {
    EXPECT_EQ(c.first_token_us, step);
    EXPECT_EQ(c.finished_us, step);
  }
  EXPECT_EQ(s.counters(0).inter_token_latency.count(), 0);
  // A request asking for more than its vector is refused, naming it.
  Diagnostics findings;
  EXPECT_FALSE(s.add_requests(std::vector<Request>{{2000, 50, 2, 9}}, findings));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, kRuleRequest);
  EXPECT_NE(findings[0].message.find("outputTokens must be 1 for an embed service"), std::string::npos)
      << findings[0].message;
}

// Runs a random load on two replicas, scraping every `scrape_ms`; returns the scrapes.
std::vector<std::string> run_load(ServiceOptions options, std::vector<Completion>* done = nullptr) {
  options.keep_completions = true;
  Service svc = llama70b();
  svc.engine.max_num_seqs = 48;  // so that requests queue too
  auto s = make(svc, options);
  s.add_replica({"a", 1}, 0);
  s.add_replica({"b", 2}, 3000);
  add(s, testing::random_load(42, 3000, 40, 4000, 600));
  std::vector<std::string> scrapes;
  for (std::int64_t t = 0; t <= 400'000; t += 7'000) {
    EXPECT_TRUE(s.advance_to(t));
    auto text = metrics::write_text(s.exposition());
    EXPECT_TRUE(text.ok());
    const auto snap = s.snapshot();
    std::string state;
    for (const auto& r : snap.replicas) {
      state += std::to_string(r.running) + "," + std::to_string(r.waiting) + "," +
               std::to_string(r.kv_cache_usage) + "," + std::to_string(r.busy_us) + "," +
               std::to_string(r.load_factor) + ";";
    }
    scrapes.push_back(*text + state);
  }
  if (done != nullptr) *done = s.completions();
  return scrapes;
}

TEST(InferenceService, SameInputsSameOutputs) {
  std::vector<Completion> first_done;
  std::vector<Completion> second_done;
  EXPECT_EQ(run_load({}, &first_done), run_load({}, &second_done));
  // 25 requests/s overload the two replicas: about three quarters finish within 400 s.
  ASSERT_EQ(first_done.size(), second_done.size());
  ASSERT_GT(first_done.size(), 2000u);
  for (std::size_t i = 0; i < first_done.size(); ++i) {
    EXPECT_EQ(first_done[i].finished_us, second_done[i].finished_us);
  }
}

TEST(InferenceService, JumpingOverDecodeRunsChangesNothing) {
  // The fast path (runs of identical decode steps at once) against every step on its own:
  // every scrape, gauge and completion is the same.
  ServiceOptions step_by_step;
  step_by_step.max_steps_per_run = 1;
  std::vector<Completion> fast_done;
  std::vector<Completion> slow_done;
  const auto fast = run_load({}, &fast_done);
  const auto slow = run_load(step_by_step, &slow_done);
  ASSERT_EQ(fast.size(), slow.size());
  for (std::size_t i = 0; i < fast.size(); ++i) EXPECT_EQ(fast[i], slow[i]) << "scrape " << i;
  ASSERT_EQ(fast_done.size(), slow_done.size());
  std::int64_t preempted = 0;
  for (std::size_t i = 0; i < fast_done.size(); ++i) {
    EXPECT_EQ(fast_done[i].id, slow_done[i].id);
    EXPECT_EQ(fast_done[i].first_token_us, slow_done[i].first_token_us);
    EXPECT_EQ(fast_done[i].finished_us, slow_done[i].finished_us);
    preempted += fast_done[i].preemptions;
  }
  EXPECT_EQ(preempted, 0);  // 48 sequences never exhaust 31,808 blocks
}

TEST(InferenceService, JumpingOverDecodeRunsWithPreemption) {
  // The same comparison where the KV cache runs out: small cache, long outputs.
  auto run = [](std::int64_t max_steps) {
    ServiceOptions o;
    o.keep_completions = true;
    o.max_steps_per_run = max_steps;
    Service svc = tiny_kv();
    svc.model.parameters = 1'200'000'000;  // (2,565,624,299.52 - 2.4e9) / 5,242,880 = 31 blocks
    auto s = make(svc, o);
    s.add_replica({}, 0);
    add(s, testing::random_load(7, 200, 300, 200, 200));
    std::vector<std::string> out;
    for (std::int64_t t = 0; t <= 600'000; t += 5'000) {
      EXPECT_TRUE(s.advance_to(t));
      out.push_back(*metrics::write_text(s.exposition()));
    }
    return std::make_pair(out, s.counters(0).preemptions);
  };
  const auto fast = run(std::int64_t{1} << 40);
  const auto slow = run(1);
  EXPECT_GT(fast.second, 10);  // the cache did run out
  EXPECT_EQ(fast.second, slow.second);
  ASSERT_EQ(fast.first.size(), slow.first.size());
  for (std::size_t i = 0; i < fast.first.size(); ++i) EXPECT_EQ(fast.first[i], slow.first[i]) << "scrape " << i;
}

}  // namespace
}  // namespace gpubank::twin::inference
