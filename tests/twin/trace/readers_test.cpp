// The readers on the real files in ../shared/traces (numbers worked out from the files with
// an independent script; the comments say what each counts) and on small bad inputs, one
// per rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "document/loader.hpp"
#include "support/paths.hpp"
#include "twin/trace/alibaba.hpp"
#include "twin/trace/azure_llm.hpp"
#include "twin/trace/helios.hpp"
#include "twin/trace/philly.hpp"

namespace gpubank::twin::trace {
namespace {

std::string trace_file(const std::string& relative) {
  const std::string path = gpubank::testing::shared_dir() + "/traces/" + relative;
  auto text = doc::read_file(path, std::size_t{64} << 20);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? *text : std::string();
}

std::string messages(const Diagnostics& d) {
  std::string out;
  for (const auto& x : d) out += x.to_string() + "\n";
  return out;
}

// ---- Alibaba ---------------------------------------------------------------------------

TEST(AlibabaPods, TheDefaultPodList) {
  Diagnostics d;
  const auto pods = read_alibaba_pods(trace_file("alibaba-gpu-v2023/openb_pod_list_default.csv"),
                                      "openb_pod_list_default.csv", d);
  ASSERT_TRUE(pods) << messages(d);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(pods->size(), 8152u);
  std::int64_t gpu = 0, shared = 0, pending = 0, unscheduled = 0, spec = 0, ls = 0, be = 0, burstable = 0,
               guaranteed = 0, eight = 0;
  std::int64_t first = pods->front().creation_time.value(), last = first;
  for (const auto& p : *pods) {
    gpu += p.num_gpu > 0 ? 1 : 0;
    shared += p.num_gpu > 0 && p.gpu_milli < 1000 ? 1 : 0;
    pending += p.pod_phase == AlibabaPodPhase::Pending ? 1 : 0;
    unscheduled += p.scheduled_time ? 0 : 1;
    spec += p.gpu_spec.empty() ? 0 : 1;
    ls += p.qos == AlibabaQos::LS ? 1 : 0;
    be += p.qos == AlibabaQos::BE ? 1 : 0;
    burstable += p.qos == AlibabaQos::Burstable ? 1 : 0;
    guaranteed += p.qos == AlibabaQos::Guaranteed ? 1 : 0;
    eight += p.num_gpu == 8 ? 1 : 0;
    first = std::min(first, p.creation_time.value());
    last = std::max(last, p.creation_time.value());
    ASSERT_TRUE(p.deletion_time);  // no pod lacks one
  }
  EXPECT_EQ(gpu, 7064);          // 8152 - 1088 CPU-only pods
  EXPECT_EQ(shared, 3078);       // gpu_milli < 1000, all with num_gpu 1
  EXPECT_EQ(pending, 897);       // the pods that never ran ...
  EXPECT_EQ(unscheduled, 897);   // ... are exactly those without scheduled_time
  EXPECT_EQ(spec, 0);            // gpu_spec is empty in every row
  EXPECT_EQ(ls + be + burstable + guaranteed, 8152);
  EXPECT_EQ(ls, 4647);
  EXPECT_EQ(be, 3398);
  EXPECT_EQ(burstable, 100);
  EXPECT_EQ(guaranteed, 7);
  EXPECT_EQ(eight, 44);          // the largest pods: 8 GPUs
  EXPECT_EQ(first, 0);
  EXPECT_EQ(last, 12901761);     // 149.3 days
  EXPECT_EQ(pods->front().name, "openb-pod-0000");
  EXPECT_EQ(pods->front().line, 2);
}

TEST(AlibabaPods, TheSampledVariants) {
  Diagnostics d;
  const auto share = read_alibaba_pods(trace_file("alibaba-gpu-v2023/openb_pod_list_gpushare100.csv"), "s.csv", d);
  ASSERT_TRUE(share) << messages(d);
  EXPECT_EQ(share->size(), 8152u);
  EXPECT_EQ(std::count_if(share->begin(), share->end(), [](const AlibabaPod& p) { return p.num_gpu > 0 && p.gpu_milli < 1000; }),
            7064);  // every GPU pod shares a GPU
  // multigpu50 has only the first five columns: the rest stay unset.
  const auto multi = read_alibaba_pods(trace_file("alibaba-gpu-v2023/openb_pod_list_multigpu50.csv"), "m.csv", d);
  ASSERT_TRUE(multi) << messages(d);
  EXPECT_EQ(multi->size(), 9061u);
  EXPECT_EQ(std::count_if(multi->begin(), multi->end(), [](const AlibabaPod& p) { return p.num_gpu == 8; }), 556);
  EXPECT_FALSE(multi->front().creation_time);
  EXPECT_FALSE(multi->front().qos);
}

constexpr std::string_view kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";

Diagnostics bad_pods(const std::string& rows) {
  Diagnostics d;
  EXPECT_FALSE(read_alibaba_pods(std::string(kPodHeader) + rows, "p.csv", d));
  return d;
}

void expect_first(const Diagnostics& d, std::string_view rule, int line, std::string_view column) {
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].rule, rule) << messages(d);
  EXPECT_EQ(d[0].pos.line, line) << messages(d);
  EXPECT_EQ(d[0].path, column) << messages(d);
}

TEST(AlibabaPods, EachRuleOnASmallBadInput) {
  const std::string good = "p0,1000,1024,1,1000,,LS,Running,0,100,5\n";
  Diagnostics ok;
  ASSERT_TRUE(read_alibaba_pods(std::string(kPodHeader) + good, "p.csv", ok)) << messages(ok);
  expect_first(bad_pods(good + "p1,1000,1024,x,1000,,LS,Running,0,100,5\n"), kRuleNumber, 3, "num_gpu");
  expect_first(bad_pods(good + "p1,1000,1024,1,1001,,LS,Running,0,100,5\n"), kRuleOutOfRange, 3, "gpu_milli");
  expect_first(bad_pods(good + "p1,1000,1024,1,1000,,LS,Running,-5,100,5\n"), kRuleOutOfRange, 3, "creation_time");
  expect_first(bad_pods(good + "p1,1000,1024,1,1000,,XX,Running,0,100,5\n"), kRuleEnum, 3, "qos");
  expect_first(bad_pods(good + "p1,1000,1024,1,1000,,LS,Sleeping,0,100,5\n"), kRuleEnum, 3, "pod_phase");
  expect_first(bad_pods(good + "p1,1000,1024,1,1000,A100|,LS,Running,0,100,5\n"), kRuleName, 3, "gpu_spec");
  expect_first(bad_pods(good + ",1000,1024,1,1000,,LS,Running,0,100,5\n"), kRuleRequired, 3, "name");
  expect_first(bad_pods(good + "p1,,1024,1,1000,,LS,Running,0,100,5\n"), kRuleRequired, 3, "cpu_milli");
  expect_first(bad_pods(good + good), kRuleDuplicate, 3, "name");
  expect_first(bad_pods(good + "p1,1000\n"), kRuleCsvFieldCount, 3, "");
  Diagnostics header;
  EXPECT_FALSE(read_alibaba_pods("name,cpu\np,1\n", "p.csv", header));
  expect_first(header, kRuleCsvHeader, 1, "");
  // Every bad field of a row is reported, not only the first.
  const auto many = bad_pods("p1,x,y,1,1000,,LS,Running,0,100,5\n");
  EXPECT_EQ(many.size(), 2u) << messages(many);
  // gpu_spec with several models keeps their order.
  Diagnostics d;
  const auto pods = read_alibaba_pods(std::string(kPodHeader) + "p,1,1,1,1000,V100M32|A10,BE,,,,\n", "p.csv", d);
  ASSERT_TRUE(pods) << messages(d);
  EXPECT_EQ((*pods)[0].gpu_spec, (std::vector<std::string>{"V100M32", "A10"}));
  EXPECT_FALSE((*pods)[0].pod_phase);
  EXPECT_FALSE((*pods)[0].creation_time);
}

// ---- Azure LLM -------------------------------------------------------------------------

struct AzureFacts {
  const char* file;
  std::size_t rows;
  std::int64_t last_ms;
  std::int64_t context_tokens;
  std::int64_t generated_tokens;
};

TEST(AzureLlm, TheCodeAndConversationTraces) {
  // Last request 19:14:19.928016 - first 18:17:03.97996 = 3435.948056 s (code);
  // 19:14:08.402527 - 18:15:46.68059 = 3501.721937 s (conv).
  for (const AzureFacts f : {AzureFacts{"AzureLLMInferenceTrace_code.csv", 8819, 3435948, 18059974, 245896},
                             AzureFacts{"AzureLLMInferenceTrace_conv.csv", 19366, 3501721, 22361870, 4088665}}) {
    Diagnostics d;
    const auto requests = read_azure_llm(trace_file(std::string("azure-llm-2023/") + f.file), f.file, d);
    ASSERT_TRUE(requests) << messages(d);
    EXPECT_EQ(requests->size(), f.rows) << f.file;
    EXPECT_EQ(requests->front().t_ms, 0);
    EXPECT_EQ(requests->back().t_ms, f.last_ms) << f.file;
    std::int64_t context = 0, generated = 0;
    for (const auto& r : *requests) {
      context += r.context_tokens;
      generated += r.generated_tokens;
    }
    EXPECT_EQ(context, f.context_tokens) << f.file;
    EXPECT_EQ(generated, f.generated_tokens) << f.file;
    EXPECT_TRUE(std::is_sorted(requests->begin(), requests->end(),
                               [](const AzureRequest& a, const AzureRequest& b) { return a.offset_ns < b.offset_ns; }));
  }
}

TEST(AzureLlm, SubMillisecondOrderIsKept) {
  const std::string text =
      "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
      "2023-11-16 18:00:00.0010000,1,1\r\n"
      "2023-11-16 18:00:00.0015000,2,2\r\n"
      "2023-11-16 18:00:00.0012000,3,3\r\n"  // out of order within the same millisecond
      "2023-11-16 18:00:00.0012000,4,4\r\n"
      "2023-11-16 18:00:00,5,5";
  Diagnostics d;
  const auto r = read_azure_llm(text, "a.csv", d);
  ASSERT_TRUE(r) << messages(d);
  std::vector<std::int64_t> order;
  for (const auto& x : *r) order.push_back(x.context_tokens);
  EXPECT_EQ(order, (std::vector<std::int64_t>{5, 1, 3, 4, 2}));  // by exact time; the two equal times in file order
  EXPECT_EQ((*r)[1].t_ms, 1);
  EXPECT_EQ((*r)[2].offset_ns, 1'200'000);
  EXPECT_EQ((*r)[4].t_ms, 1);
}

TEST(AzureLlm, EachRuleOnASmallBadInput) {
  const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  Diagnostics d;
  EXPECT_FALSE(read_azure_llm(header + "2023-11-16 18:00:00.1,x,1\n", "a.csv", d));
  expect_first(d, kRuleNumber, 2, "ContextTokens");
  d.clear();
  EXPECT_FALSE(read_azure_llm(header + "2023-11-16T18:00:00,1,1\n", "a.csv", d));
  expect_first(d, kRuleTime, 2, "TIMESTAMP");
  d.clear();
  EXPECT_FALSE(read_azure_llm(header + "2023-11-16 18:00:00,1,-1\n", "a.csv", d));
  expect_first(d, kRuleOutOfRange, 2, "GeneratedTokens");
  d.clear();
  EXPECT_FALSE(read_azure_llm("TIMESTAMP,Context\n", "a.csv", d));
  expect_first(d, kRuleCsvHeader, 1, "");
}

// ---- Philly ----------------------------------------------------------------------------

TEST(Philly, TheVirtualClustersAndTheNodeSequence) {
  Diagnostics d;
  const auto vcs = read_philly_vcs(trace_file("philly/philly_vc.csv"), "philly_vc.csv", d);
  ASSERT_TRUE(vcs) << messages(d);
  ASSERT_EQ(vcs->size(), 11u);
  EXPECT_EQ((*vcs)[0].name, "6214e9");
  EXPECT_EQ((*vcs)[0].nodes, 64);
  std::int64_t nodes = 0;
  for (const auto& vc : *vcs) nodes += vc.nodes;
  EXPECT_EQ(nodes, 352);  // 3 x 64 + 3 x 32 + 3 x 16 + 2 x 8
  const auto samples = read_philly_node_sequence(trace_file("philly/philly_node_sequence.csv"), "seq.csv", d);
  ASSERT_TRUE(samples) << messages(d);
  EXPECT_EQ(samples->size(), 105644u);
  std::int64_t active = 0, gaps = 0;
  for (std::size_t i = 0; i < samples->size(); ++i) {
    active += (*samples)[i].active;
    if (i > 0 && (*samples)[i].time_s - (*samples)[i - 1].time_s != 60) ++gaps;
  }
  EXPECT_EQ(active, 33065327);  // node-minutes
  EXPECT_EQ(gaps, 1);           // one 10-hour hole
  EXPECT_EQ(samples->front().total, 420);

  const auto curve = philly_demand_curve(*vcs, *samples);
  ASSERT_TRUE(curve.ok()) << curve.error();
  // 2017-10-03 00:00 to 2017-12-15 18:42: 73 days 18 h 42 min = 106242 minutes, + 1.
  EXPECT_EQ(curve->minutes(), 106243u);
  EXPECT_EQ(curve->missing_minutes, 106243 - 105644);  // 599: the 10-hour hole less its end
  // The split adds up to the active count in every minute, so the node-minutes too.
  std::int64_t total = 0;
  std::vector<std::int64_t> per_vc(vcs->size(), 0);
  for (std::size_t v = 0; v < vcs->size(); ++v) {
    for (const auto n : curve->nodes[v]) per_vc[v] += n;
    total += per_vc[v];
  }
  EXPECT_EQ(total, 33065327);
  // 6214e9 holds 64 / 352 of the nodes: 33065327 x 64 / 352 = 6011877.6; the largest
  // remainders move it to 6028758 (an independent script's count).
  EXPECT_EQ(per_vc[0], 6028758);
  EXPECT_EQ(per_vc[8], 752637);  // ed69ec, 8 nodes
  // Minute 0: 312 active: shares 312 x 64 / 352 = 56.73 -> 56 + a remainder node, ...
  std::int64_t minute0 = 0;
  for (std::size_t v = 0; v < vcs->size(); ++v) minute0 += curve->nodes[v][0];
  EXPECT_EQ(minute0, 312);
}

TEST(Philly, EachRuleOnASmallBadInput) {
  Diagnostics d;
  EXPECT_FALSE(read_philly_vcs("vc,node num\na,1\na,2\n", "v.csv", d));
  expect_first(d, kRuleDuplicate, 3, "vc");
  d.clear();
  EXPECT_FALSE(read_philly_vcs("vc,nodes\na,1\n", "v.csv", d));
  expect_first(d, kRuleCsvHeader, 1, "");
  d.clear();
  EXPECT_FALSE(read_philly_node_sequence("time,active,total\n2017-10-03 00:00:00,5,4\n", "s.csv", d));
  expect_first(d, kRuleOutOfRange, 2, "active");
  d.clear();
  EXPECT_FALSE(read_philly_node_sequence(
      "time,active,total\n2017-10-03 00:01:00,1,4\n2017-10-03 00:00:00,1,4\n", "s.csv", d));
  expect_first(d, kRuleOrder, 3, "time");
  d.clear();
  EXPECT_FALSE(read_philly_node_sequence("time,active,total\n2017-10-03 00:00,1,4\n", "s.csv", d));
  expect_first(d, kRuleTime, 2, "time");
}

// ---- Helios ----------------------------------------------------------------------------

TEST(Helios, TheGpuNumbersOfVenusAndEarth) {
  for (const auto& [file, max_total] : std::map<std::string, std::int64_t>{{"Venus_cluster_gpu_number.csv", 1264},
                                                                           {"Earth_gpu_number.csv", 1232}}) {
    Diagnostics d;
    const auto numbers = read_helios_gpu_numbers(trace_file("helios/" + file), file, d);
    ASSERT_TRUE(numbers) << messages(d);
    EXPECT_EQ(numbers->vcs.size(), 25u) << file;
    EXPECT_EQ(numbers->days.size(), 181u) << file;  // 2020-04-01 .. 2020-09-28
    EXPECT_EQ(numbers->days.front().date, "2020-04-01");
    EXPECT_EQ(numbers->days.back().day - numbers->days.front().day, 180);
    std::int64_t largest = 0;
    for (const auto& day : numbers->days) largest = std::max(largest, day.total);
    EXPECT_EQ(largest, max_total) << file;
  }
}

TEST(Helios, EachRuleOnASmallBadInput) {
  Diagnostics d;
  EXPECT_FALSE(read_helios_gpu_numbers("date,a,b,total\n2020-04-01,1,2,4\n", "h.csv", d));
  expect_first(d, kRuleTotal, 2, "total");
  d.clear();
  EXPECT_FALSE(read_helios_gpu_numbers("date,a,a,total\n", "h.csv", d));
  expect_first(d, kRuleCsvHeader, 1, "a");
  d.clear();
  EXPECT_FALSE(read_helios_gpu_numbers("day,a,total\n", "h.csv", d));
  expect_first(d, kRuleCsvHeader, 1, "");
  d.clear();
  EXPECT_FALSE(read_helios_gpu_numbers("date,a,total\n2020-04-02,1,1\n2020-04-01,1,1\n", "h.csv", d));
  expect_first(d, kRuleOrder, 3, "date");
  d.clear();
  EXPECT_FALSE(read_helios_gpu_numbers("date,a,total\n2020-13-01,1,1\n", "h.csv", d));
  expect_first(d, kRuleTime, 2, "date");
}

}  // namespace
}  // namespace gpubank::twin::trace
