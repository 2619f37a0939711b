// The platform's serving rules: the load model against the Azure trace, the capacity and
// scale rule, the service a policy gets, the request stream's determinism.
#include "twin/live/serving.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include "support/paths.hpp"
#include "twin/trace/azure_llm.hpp"

namespace gpubank::twin::live {
namespace {

constexpr std::int64_t kHour = 3'600'000;

std::vector<trace::AzureRequest> conv_trace() {
  const std::string file = testing::shared_dir() + "/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv";
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  Diagnostics d;
  auto requests = trace::read_azure_llm(text.str(), file, d);
  EXPECT_TRUE(requests.has_value() && !has_errors(d)) << file;
  return requests ? *requests : std::vector<trace::AzureRequest>{};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// The numbers behind the synthetic model (docs/up.md): the conversation trace's token
// medians and means, and its rate.
TEST(ServingLoad, AzureConversationTraceStatistics) {
  const auto trace = conv_trace();
  ASSERT_EQ(trace.size(), 19'366u);
  std::vector<double> prompt, output;
  for (const auto& r : trace) {
    prompt.push_back(static_cast<double>(r.context_tokens));
    output.push_back(static_cast<double>(r.generated_tokens));
  }
  EXPECT_EQ(median(prompt), kPromptTokensMedian);
  EXPECT_EQ(median(output), kOutputTokensMedian);
  EXPECT_NEAR(mean(prompt), kPromptTokensMean, 0.05);  // 1154.697
  EXPECT_NEAR(mean(output), kOutputTokensMean, 0.05);  // 211.126
  // 18:15:46 to 19:14:08: all of it inside the first hour, 19,366 / 3,600 s.
  EXPECT_NEAR(trace_rps(trace), 19'366.0 / 3600.0, 1e-12);
}

TEST(ServingLoad, SyntheticTokensHaveTheTracesMediansAndMeans) {
  // 40 h at 5 requests/s: 720,000 requests expected (Poisson: sd 849).
  auto source = synthetic_requests(42, std::vector<double>(40, 5.0), 40 * kHour);
  EXPECT_DOUBLE_EQ(source->expected_total(), 720'000.0);
  const auto requests = source->take_until(40 * kHour);
  EXPECT_NEAR(static_cast<double>(requests.size()), 720'000.0, 4 * 849.0);
  std::vector<double> prompt, output;
  for (const auto& r : requests) {
    prompt.push_back(r.prompt_tokens);
    output.push_back(r.output_tokens);
  }
  // Log-normal sigma: prompt sqrt(2 ln(1154.7/1020)) = 0.498, output sqrt(2 ln(211.1/129))
  // = 0.992; at n = 720,000 the sample means and medians are within 0.5 % (mean of the
  // output: sd 211 x sqrt(e^0.985 - 1) / sqrt(n) = 0.3 tokens).
  EXPECT_NEAR(median(prompt), kPromptTokensMedian, 0.005 * kPromptTokensMedian);
  EXPECT_NEAR(mean(prompt), kPromptTokensMean, 0.005 * kPromptTokensMean);
  EXPECT_NEAR(median(output), kOutputTokensMedian, 0.01 * kOutputTokensMedian);
  EXPECT_NEAR(mean(output), kOutputTokensMean, 0.005 * kOutputTokensMean);
  EXPECT_GE(*std::min_element(prompt.begin(), prompt.end()), 1.0);
  EXPECT_LE(*std::max_element(output.begin(), output.end()), kMaxOutputTokens);
}

TEST(ServingLoad, ArrivalsFollowTheHourlyRates) {
  // 10/s, 0/s, 2.5/s: 36,000, 0 and 9,000 requests expected (sd 190 and 95).
  auto source = synthetic_requests(7, {10.0, 0.0, 2.5}, 3 * kHour);
  const auto requests = source->take_until(3 * kHour);
  std::array<std::int64_t, 3> per_hour{};
  for (const auto& r : requests) ++per_hour[static_cast<std::size_t>(r.arrival_ms / kHour)];
  EXPECT_NEAR(static_cast<double>(per_hour[0]), 36'000.0, 4 * 190.0);
  EXPECT_EQ(per_hour[1], 0);
  EXPECT_NEAR(static_cast<double>(per_hour[2]), 9'000.0, 4 * 95.0);
  for (std::size_t i = 1; i < requests.size(); ++i) ASSERT_LE(requests[i - 1].arrival_ms, requests[i].arrival_ms);
}

TEST(ServingLoad, ALinearRampKeepsTheDayAndMovesWithinTheHour) {
  // 2, 4, 4, 2 per second: half-hour segments 2-2, 2-3 | 3-4, 4-4 | 4-4, 4-3 | 3-2, 2-2
  // (flat beyond the run): 8,100, 13,500, 13,500 and 8,100 expected per hour, the day's
  // 43,200 kept; hour 1's first half 6,300, its second 7,200 (sd about 80 and 85).
  auto source = synthetic_requests(11, {2.0, 4.0, 4.0, 2.0}, 4 * kHour, kChatTokens, RateShape::Linear);
  EXPECT_DOUBLE_EQ(source->expected_total(), 43'200.0);
  const auto requests = source->take_until(4 * kHour);
  std::array<std::int64_t, 8> per_half{};
  for (const auto& r : requests) ++per_half[static_cast<std::size_t>(r.arrival_ms / (kHour / 2))];
  const std::array<double, 8> expected{3'600, 4'500, 6'300, 7'200, 7'200, 6'300, 4'500, 3'600};
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(static_cast<double>(per_half[i]), expected[i], 4 * std::sqrt(expected[i])) << "half-hour " << i;
  }
  EXPECT_LT(per_half[2] + 3 * 80, per_half[3]);  // the ramp rises within the hour
  for (std::size_t i = 1; i < requests.size(); ++i) ASSERT_LE(requests[i - 1].arrival_ms, requests[i].arrival_ms);
  // Counted (the fluid model's batches): the same integral per slice.
  auto counted = synthetic_requests(11, {2.0, 4.0, 4.0, 2.0}, 4 * kHour, kChatTokens, RateShape::Linear);
  double total = 0;
  for (const auto& b : counted->batches_until(4 * kHour)) {
    ASSERT_EQ(b.from_ms / (kHour / 2), (b.to_ms - 1) / (kHour / 2)) << "a batch crosses a segment";
    total += b.count;
  }
  EXPECT_NEAR(total, 43'200.0, 4 * std::sqrt(43'200.0));
}

TEST(ServingLoad, StepsAndALinearRampAgreeOnAFlatDay) {
  // A constant rate is the same process either way, draw for draw.
  auto steps = synthetic_requests(5, std::vector<double>(3, 3.0), 3 * kHour, kChatTokens, RateShape::Steps);
  auto linear = synthetic_requests(5, std::vector<double>(3, 3.0), 3 * kHour, kChatTokens, RateShape::Linear);
  const auto a = steps->take_until(3 * kHour);
  const auto b = linear->take_until(3 * kHour);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].arrival_ms, b[i].arrival_ms) << i;
}

TEST(ServingLoad, TheEmbedProfileDrawsShortInputsAndOneOutput) {
  auto source = synthetic_requests(9, std::vector<double>(1, 50.0), kHour, kEmbedTokens);
  const auto requests = source->take_until(kHour);
  ASSERT_GT(requests.size(), 150'000U);
  std::vector<double> prompt;
  for (const auto& r : requests) {
    ASSERT_EQ(r.output_tokens, 1);
    ASSERT_LE(r.prompt_tokens, kEmbedTokens.prompt_cap);
    prompt.push_back(r.prompt_tokens);
  }
  EXPECT_NEAR(median(prompt), 64, 1);
  EXPECT_NEAR(mean(prompt), 128, 0.02 * 128);
}

TEST(ServingLoad, TheStreamDoesNotDependOnHowItIsTaken) {
  auto whole = synthetic_requests(3, std::vector<double>(2, 4.0), 2 * kHour);
  auto pieces = synthetic_requests(3, std::vector<double>(2, 4.0), 2 * kHour);
  const auto all = whole->take_until(2 * kHour);
  std::vector<inference::Request> taken;
  for (std::int64_t t = 0; t <= 2 * kHour; t += 61'237) {
    for (const auto& r : pieces->take_until(t)) taken.push_back(r);
  }
  for (const auto& r : pieces->take_until(2 * kHour)) taken.push_back(r);
  ASSERT_EQ(all.size(), taken.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(all[i].arrival_ms, taken[i].arrival_ms);
    ASSERT_EQ(all[i].prompt_tokens, taken[i].prompt_tokens);
    ASSERT_EQ(all[i].output_tokens, taken[i].output_tokens);
  }
  auto other = synthetic_requests(4, std::vector<double>(2, 4.0), 2 * kHour);
  EXPECT_NE(other->take_until(kHour).front().arrival_ms, all.front().arrival_ms);
}

TEST(ServingLoad, HourlyRatesFollowTheDefaultCurveByLocalHour) {
  // Starting at local 22:00: hours 22, 23, 0 of the curve (0.45, 0.40, 0.35).
  const auto rates = hourly_rates(10.0, 22, 3);
  ASSERT_EQ(rates.size(), 3u);
  EXPECT_DOUBLE_EQ(rates[0], 4.5);
  EXPECT_DOUBLE_EQ(rates[1], 4.0);
  EXPECT_DOUBLE_EQ(rates[2], 3.5);
}

TEST(ServingLoad, TraceIsRepeatedAndScaled) {
  const auto trace = conv_trace();
  // Local 10:00 and 11:00 (curve 1.0) scaled x2: twice the recorded hour, twice: 4 x
  // 19,366 = 77,464 expected (each copy of a request taken twice exactly: the factor is
  // a whole number).
  auto source = trace_requests(trace, 5, 2.0, 10, 2 * kHour);
  ASSERT_TRUE(source) << source.error();
  EXPECT_DOUBLE_EQ((*source)->expected_total(), 77'464.0);
  const auto requests = (*source)->take_until(2 * kHour);
  EXPECT_EQ(requests.size(), 77'464u);
  for (const auto& r : requests) {
    ASSERT_GE(r.prompt_tokens, 1);
    ASSERT_GE(r.output_tokens, 1);
  }
}

// The capacity rule with the cost model's numbers for Llama-3.1-70B on 4 x H100:
//   weights per GPU 70,553,706,496 x 2 / 4 = 35,276,853,248 B; KV 327,680 B per token;
//   HBM 3.35e12 x 0.6 = 2,010,000 B/us per GPU; 4 x 989e12 x 0.35 = 1.3846e9 FLOP/us.
//   prefill of 1,155 tokens: compute 1155 x 141,107,412,992 / 1.3846e9 = 117,708 us
//     (memory 17,598 us), plus 3,000 overhead: 120,708 us;
//   decode at batch 32 with 32 x (1154.7 + 211.1 / 2) = 40,328 context tokens: memory
//     (35,276,853,248 + 40,328 x 81,920) / 2,010,000 = 19,194 us, plus 3,000: 22,194 us;
//   one request: 120,708 + 211.1 x 22,194 / 32 = 267,119 us: 3.744 requests/s.
TEST(ServingScale, ReplicaCapacityOfTheLlmService) {
  policy::InferenceScalingPolicySpec spec;
  spec.workload_ref.name = "customer-service-llm";
  spec.replica_shape.tensor_parallel_size = 4;
  const auto service = service_for("customer-service-llm", spec, "H100");
  EXPECT_EQ(service.model.parameters, 70'553'706'496);
  EXPECT_EQ(service.model_name, "customer-service-llm");
  EXPECT_EQ(service.tensor_parallel_size, 4);
  const auto costs = inference::replica_costs(service.model, service.engine, "H100", 4);
  ASSERT_TRUE(costs);
  EXPECT_EQ(costs->step_us(1155, 1155), 120'708);
  EXPECT_EQ(costs->step_us(32, 40'328), 22'194);
  EXPECT_NEAR(replica_capacity_rps(*costs), 1e6 / (120'708 + 211.1 * 22'194 / 32), 1e-9);
  EXPECT_NEAR(replica_capacity_rps(*costs), 3.744, 0.001);
}

TEST(ServingScale, AnEmbedServiceRunsAnEmbeddingModelSizedOnFullSteps) {
  policy::InferenceScalingPolicySpec spec;
  spec.workload_ref.name = "embeddings";
  spec.replica_shape.tensor_parallel_size = 1;
  spec.task = policy::ServingTask::Embed;
  const auto service = service_for("customer-service-embeddings", spec, "L40S");
  EXPECT_EQ(service.task, inference::Task::Embed);
  EXPECT_EQ(service.model.num_layers, 24);
  EXPECT_EQ(service.model.max_model_len, 8'192);
  EXPECT_TRUE(check_service(service).empty());
  const auto costs = inference::replica_costs(service.model, service.engine, "L40S", 1);
  ASSERT_TRUE(costs);
  // A full step: 8,192 tokens x 2 x 568 M FLOP at 35 % of 362 TFLOP/s, plus 3 ms.
  const std::int64_t full = costs->step_us(8'192, 8'192);
  EXPECT_NEAR(static_cast<double>(full), 3'000 + 8'192 * 2 * 568e6 / (362e12 * 0.35) * 1e6, 2);
  EXPECT_NEAR(service_capacity_rps(service, *costs, 128, 1), kEmbedReferenceBusy * 8'192.0 / 128 * 1e6 / full, 1e-9);
  // A generate service keeps the batch-32 figure.
  spec.task.reset();
  const auto chat = service_for("x", spec, "H100");
  const auto chat_costs = inference::replica_costs(chat.model, chat.engine, "H100", 1);
  ASSERT_TRUE(chat_costs);
  EXPECT_DOUBLE_EQ(service_capacity_rps(chat, *chat_costs, kPromptTokensMean, kOutputTokensMean),
                   replica_capacity_rps(*chat_costs));
}

TEST(ServingScale, SmallGpusGetTheSmallModel) {
  policy::InferenceScalingPolicySpec spec;
  spec.workload_ref.name = "embeddings";
  spec.replica_shape.tensor_parallel_size = 1;
  // 70B in bf16 is 141 GB: more than half of one L40S (46,068 MiB): Llama-3.1-8B.
  const auto small = service_for("customer-service-embeddings", spec, "L40S");
  EXPECT_EQ(small.model.parameters, 8'030'261'248);
  EXPECT_EQ(small.model.num_layers, 32);
  EXPECT_TRUE(check_service(small).empty());
  // 4 x H100 hold 326 GB: half of it is more than 141 GB, so the 70B model stays.
  spec.replica_shape.tensor_parallel_size = 4;
  EXPECT_EQ(service_for("x", spec, "H100").model.parameters, 70'553'706'496);
}

}  // namespace
}  // namespace gpubank::twin::live
