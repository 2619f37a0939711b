// How fast `gpubank render` turns a large policy set into engine objects: 1,000 business
// groups with a quota on each of 4 pools (4,000 GPUQuotaPolicy) and 500 inference
// services, plus low-utilisation policies, leases and tidal policies as a platform has
// them. The target: rendering it with the Kueue backend in under 1 s.
//
//   (a) encode_all      baseline: policy::encode_policy + dump of every policy, the least
//                       any renderer does (read every policy, write JSON)
//   (b) validate        policy::check_all, the first step of every render
//   (c) render_kueue    render::render(set, kueue): validation, checks, objects, stamping
//   (d) render_kueue_files  (c) + the file text of every object (YAML), what --out writes
//   (e) render_volcano  render::render(set, volcano)
//
// The set is generated in memory from a fixed seed and must be valid before anything is
// timed. --summary=FILE also writes the markdown summary there.
#include <benchmark/benchmark.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "document/reader.hpp"
#include "policy/decode.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"
#include "policy_generator.hpp"
#include "render/render.hpp"
#include "summary_reporter.hpp"

namespace {

namespace doc = gpubank::doc;
namespace policy = gpubank::policy;
namespace render = gpubank::render;
using gpubank::bench::GeneratedSet;

gpubank::bench::GeneratorOptions options() {
  gpubank::bench::GeneratorOptions o;
  o.keda_scalable_refs = true;  // every service gets its ScaledObject
  o.pools = 4;
  o.groups = 1000;
  o.pools_per_group = 4;
  o.inference_policies = 500;
  o.low_utilization_policies = 1000;
  o.leases = 200;
  o.tidal_policies = 2;
  o.pool_capacity = 32768;  // 1,000 guarantees of up to 16 GPUs each, plus leases
  return o;
}

struct Fixture {
  GeneratedSet generated = gpubank::bench::generate_policy_set(options());
  policy::PolicySet set;
  std::size_t kueue_objects = 0;
  std::size_t volcano_objects = 0;
  std::size_t kueue_bytes = 0;

  Fixture() {
    std::vector<doc::Document> documents;
    doc::read_yaml(generated.yaml, "generated.yaml", documents, set.diagnostics());
    for (const auto& d : documents) set.add(d.root, d.file, d.index);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void set_rates(benchmark::State& state) {
  state.counters["policies/s"] = benchmark::Counter(static_cast<double>(fixture().generated.objects),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

void encode_all(benchmark::State& state) {
  const auto& set = fixture().set;
  for (auto _ : state) {
    std::size_t bytes = 0;
    for (const auto& p : set.policies()) bytes += policy::encode_policy(p).dump().size();
    benchmark::DoNotOptimize(bytes);
  }
  set_rates(state);
}

void validate(benchmark::State& state) {
  const auto& set = fixture().set;
  for (auto _ : state) {
    gpubank::Diagnostics findings = policy::check_all(set);
    benchmark::DoNotOptimize(findings.data());
  }
  set_rates(state);
}

void render_with(benchmark::State& state, render::Backend backend, bool files) {
  const auto& set = fixture().set;
  for (auto _ : state) {
    render::RenderResult r = render::render(set, {backend});
    std::size_t bytes = 0;
    if (files) {
      for (const auto& text : render::to_file_texts(r.objects)) bytes += text.size();
    }
    benchmark::DoNotOptimize(r.objects.data());
    benchmark::DoNotOptimize(bytes);
  }
  set_rates(state);
}

void render_kueue(benchmark::State& state) { render_with(state, render::Backend::Kueue, false); }
void render_kueue_files(benchmark::State& state) { render_with(state, render::Backend::Kueue, true); }
void render_volcano(benchmark::State& state) { render_with(state, render::Backend::Volcano, false); }

using gpubank::bench::Case;

constexpr Case kCases[] = {
    {"encode_all", "(a) baseline: encode_policy + dump, every policy", encode_all},
    {"validate", "(b) policy::check_all", validate},
    {"render_kueue", "(c) render(set, kueue): (b) + checks, objects, stamps", render_kueue},
    {"render_kueue_files", "(d) (c) + YAML text of every object", render_kueue_files},
    {"render_volcano", "(e) render(set, volcano)", render_volcano},
};

using gpubank::bench::fixed;
using gpubank::bench::SummaryReporter;

std::string summary(const SummaryReporter& reporter, const Fixture& f) {
  const GeneratedSet& g = f.generated;
  std::ostringstream s;
  s << "Policy set: " << g.objects << " objects (1 PlatformGuardrails with 1000 groups and 4 pools, " << g.quotas
    << " GPUQuotaPolicy, " << g.inference << " InferenceScalingPolicy, " << g.low_utilization
    << " LowUtilizationPolicy, " << g.leases << " CapacityLease, " << g.tidal << " TidalPolicy), all valid. "
    << "Rendered: " << f.kueue_objects << " objects with the Kueue backend ("
    << fixed(static_cast<double>(f.kueue_bytes) / 1e6, 1)
    << " MB of YAML), " << f.volcano_objects << " with the Volcano backend.\n\n";
  const bool medians = gpubank::bench::write_table(s, reporter, kCases, "Policies/s", "policies/s");
  s << "\nTimes are wall-clock (real) time per render of the whole set"
    << (medians ? ", medians of the repetitions" : ", one measurement each (no repetitions)") << ".\n";
  const auto& results = reporter.results();
  const auto render = results.find("render_kueue");
  const auto files = results.find("render_kueue_files");
  if (render != results.end() && files != results.end()) {
    const double ms = render->second.ms_per_iteration;
    s << "\n**Target: 1,000 groups x 4 pools with 500 inference services rendered with the Kueue backend in "
         "under 1 s: "
      << (ms < 1000.0 ? "met" : "NOT met") << "** (" << fixed(ms, 1) << " ms; "
      << fixed(files->second.ms_per_iteration, 1)
      << " ms with the YAML text of every object, all that `gpubank render --out` does before the disk).\n";
  }
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string summary_path = gpubank::bench::take_summary_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  // The set must render cleanly, or the benchmark would time error reporting instead.
  Fixture& f = fixture();
  for (auto backend : {render::Backend::Kueue, render::Backend::Volcano}) {
    const render::RenderResult r = render::render(f.set, {backend});
    if (!r.diagnostics.empty() || f.set.policies().size() != f.generated.objects) {
      std::cerr << "render_bench: the generated set does not render cleanly: " << f.set.policies().size() << " of "
                << f.generated.objects << " objects decoded, " << r.diagnostics.size() << " findings\n";
      for (std::size_t i = 0; i < r.diagnostics.size() && i < 20; ++i) {
        std::cerr << "  " << r.diagnostics[i].to_string() << '\n';
      }
      return 1;
    }
    if (backend == render::Backend::Kueue) {
      f.kueue_objects = r.objects.size();
      for (const auto& o : r.objects) f.kueue_bytes += render::to_file_text(o).size();
    } else {
      f.volcano_objects = r.objects.size();
    }
  }

  gpubank::bench::register_cases(kCases);
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  const std::string text = summary(reporter, f);
  if (!gpubank::bench::emit_summary(text, summary_path, "render_bench")) return 1;
  return 0;
}
