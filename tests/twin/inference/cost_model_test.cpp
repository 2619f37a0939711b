#include "twin/inference/cost_model.hpp"

#include <gtest/gtest.h>

#include "twin/inference/service.hpp"

namespace gpubank::twin::inference {
namespace {

TEST(CostModel, KvCapacityOfLlama70bOnFourH100) {
  const auto c = replica_costs(ModelConfig{}, EngineConfig{}, "H100", 4);
  ASSERT_TRUE(c.has_value());
  // Weights: 70,553,706,496 parameters x 2 bytes.
  EXPECT_EQ(c->weight_bytes, 141'107'412'992);
  // KV per token: 2 x 80 layers x 8 KV heads x 128 x 2 bytes.
  EXPECT_EQ(c->kv_bytes_per_token, 327'680);
  // 4 x 81,559 MiB (85,520,809,984 bytes) x 0.9 = 307,874,915,942.4, minus the weights
  // = 166,767,502,950.4 bytes; / (16 x 327,680 = 5,242,880 bytes per block) = 31,808.38.
  EXPECT_EQ(c->kv_blocks, 31'808);
  EXPECT_EQ(c->kv_tokens, 508'928);
  EXPECT_EQ(c->max_request_tokens, 131'072);  // max_model_len is the smaller
}

TEST(CostModel, StepTimesOfLlama70bOnFourH100) {
  const auto c = replica_costs(ModelConfig{}, EngineConfig{}, "H100", 4);
  ASSERT_TRUE(c.has_value());
  // Prefill of 1,000 tokens: compute bound. 1,000 x 2 x 70,553,706,496 FLOP / (4 x 989e12 x
  // 0.35 FLOP/s) = 101.912 ms, plus 3 ms overhead.
  EXPECT_EQ(c->step_us(1000, 1000), 104'912);
  // Decode at batch 1 with 1,001 tokens of context: memory bound. (35,276,853,248 bytes of
  // weights per GPU + 1,001 x 81,920 bytes of KV per GPU) / (3.35e12 x 0.6 B/s) = 17.591 ms,
  // plus 3 ms.
  EXPECT_EQ(c->step_us(1, 1001), 20'591);
  // 64 requests with 2,000 tokens each: + 128,000 x 81,920 bytes = 5.217 ms more.
  EXPECT_EQ(c->step_us(64, 128'000), 25'767);
}

TEST(CostModel, FasterGpusGiveShorterSteps) {
  std::int64_t previous = 0;
  // Decode-bound steps by HBM bandwidth, fastest first: H200, H100, A100, L40S (TP=8 so
  // that the weights fit the L40S).
  for (const char* gpu : {"H200", "H100", "A100", "L40S"}) {
    const auto c = replica_costs(ModelConfig{}, EngineConfig{}, gpu, 8);
    ASSERT_TRUE(c.has_value()) << gpu;
    const auto step = c->step_us(8, 8 * 1000);
    EXPECT_GT(step, previous) << gpu;
    previous = step;
    // More context and more tokens never make a step shorter.
    EXPECT_LE(c->step_us(8, 8000), c->step_us(8, 8001));
    EXPECT_LE(c->step_us(8000, 8000), c->step_us(8001, 8001));
  }
}

TEST(CostModel, CheckServiceNamesEveryProblem) {
  Service s;
  s.name = "chat";
  EXPECT_TRUE(check_service(s).empty());

  s.gpu_model = "V100";
  auto findings = check_service(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, kRuleGpuModel);
  EXPECT_EQ(findings[0].path, "gpuModel");

  s.gpu_model = "L40S";
  s.tensor_parallel_size = 2;  // 141 GB of weights on 2 x 48 GB
  findings = check_service(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, kRuleKvCapacity);

  s = Service{};
  s.engine.gpu_memory_utilization = std::numeric_limits<double>::quiet_NaN();
  s.engine.max_num_seqs = 0;
  findings = check_service(s);
  ASSERT_EQ(findings.size(), 3u);  // the name too
  EXPECT_EQ(findings[0].path, "name");
  EXPECT_EQ(findings[1].path, "engine.gpuMemoryUtilization");
  EXPECT_EQ(findings[2].path, "engine.maxNumSeqs");
  EXPECT_EQ(findings[2].rule, kRuleServiceField);
  EXPECT_EQ(findings[2].to_string(),
            "error: Service: engine.maxNumSeqs: engine.maxNumSeqs must be between 1 and 65536, not 0 "
            "[inference.service-field]");
}

}  // namespace
}  // namespace gpubank::twin::inference
