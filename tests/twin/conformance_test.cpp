// Runs every case under tests/twin/conformance (see its README.md) the way
// `gpubank twin admit -f <case>/input.yaml --until-stable [--fair-sharing] -o json` does, and
// compares the final Workloads and ClusterQueues with the case's expected.yaml.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kueue/admit.hpp"
#include "kueue/decode.hpp"
#include "support/paths.hpp"
#include "twin/admission/core.hpp"

namespace gpubank {
namespace {

namespace fs = std::filesystem;
using Json = doc::Json;

fs::path cases_dir() { return fs::path(gpubank::testing::source_dir()) / "tests" / "twin" / "conformance"; }

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(cases_dir())) {
    if (entry.is_directory() && fs::exists(entry.path() / "input.yaml")) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

const Json* find_item(const Json& list, const std::string& kind, const std::string& name) {
  for (const auto& item : list.at("items")) {
    if (item.value("kind", "") == kind && item.at("metadata").value("name", "") == name) return &item;
  }
  return nullptr;
}

const Json* find_condition(const Json& workload, const std::string& type) {
  if (!workload.contains("status") || !workload.at("status").contains("conditions")) return nullptr;
  for (const auto& c : workload.at("status").at("conditions")) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, MatchesExpectedEndState) {
  const fs::path dir = cases_dir() / GetParam();
  const YAML::Node expected = YAML::LoadFile((dir / "expected.yaml").string());
  const bool fair_sharing = expected["fairSharing"] && expected["fairSharing"].as<bool>();
  const std::string feature_gates = expected["featureGates"] ? expected["featureGates"].as<std::string>() : "";
  Diagnostics diagnostics;
  const kueue::ObjectSet set = kueue::load_objects({(dir / "input.yaml").string()}, diagnostics);
  ASSERT_FALSE(has_errors(diagnostics)) << (diagnostics.empty() ? std::string() : diagnostics.front().to_string());
  // As `twin admit`: the input's manager Configuration, then the case's flags.
  const auto options = kueue::AdmissionRun::core_options(set, fair_sharing, feature_gates, diagnostics);
  ASSERT_TRUE(options.ok()) << options.error();
  kueue::AdmissionRun run(set, diagnostics);
  run.use_options(*options);
  kueue::CoreInputs in = run.inputs();
  auto core = twin::AdmissionCore::create(*options, std::move(in.flavors),
                                          std::move(in.cohorts), std::move(in.queues));
  ASSERT_TRUE(core.ok()) << core.error();
  run.load(**core, diagnostics);
  const auto cycles = run.run(**core, {});
  ASSERT_TRUE(cycles.ok()) << cycles.error();
  const Json out = run.encode(**core);

  for (const auto& w : expected["workloads"]) {
    const std::string name = w.first.as<std::string>();
    SCOPED_TRACE("Workload " + name);
    const YAML::Node& want = w.second;
    const Json* wl = find_item(out, "Workload", name);
    ASSERT_NE(wl, nullptr);
    const Json* reserved = find_condition(*wl, "QuotaReserved");
    const bool has_admission = wl->contains("status") && wl->at("status").contains("admission");
    if (want["admitted"]) {
      ASSERT_TRUE(has_admission) << wl->dump();
      EXPECT_EQ(wl->at("status").at("admission").value("clusterQueue", ""), want["admitted"].as<std::string>());
      ASSERT_NE(reserved, nullptr);
      EXPECT_EQ(reserved->value("status", ""), "True");
      if (want["flavors"]) {
        for (const auto& ps : want["flavors"]) {
          const auto& assignments = wl->at("status").at("admission").at("podSetAssignments");
          auto it = std::find_if(assignments.begin(), assignments.end(),
                                 [&](const Json& a) { return a.value("name", "") == ps.first.as<std::string>(); });
          ASSERT_NE(it, assignments.end()) << "pod set " << ps.first.as<std::string>();
          for (const auto& f : ps.second) {
            EXPECT_EQ(it->at("flavors").value(f.first.as<std::string>(), ""), f.second.as<std::string>())
                << "pod set " << ps.first.as<std::string>() << " resource " << f.first.as<std::string>();
          }
        }
      }
      const auto& assignments = wl->at("status").at("admission").at("podSetAssignments");
      auto assignment_of = [&](const std::string& pod_set) -> const Json* {
        auto it = std::find_if(assignments.begin(), assignments.end(),
                               [&](const Json& a) { return a.value("name", "") == pod_set; });
        return it == assignments.end() ? nullptr : &*it;
      };
      for (const auto& ps : want["counts"]) {
        const Json* a = assignment_of(ps.first.as<std::string>());
        ASSERT_NE(a, nullptr) << "pod set " << ps.first.as<std::string>();
        EXPECT_EQ(a->value("count", -1), ps.second.as<int>()) << "pod set " << ps.first.as<std::string>();
      }
      for (const auto& ps : want["resourceUsage"]) {
        const Json* a = assignment_of(ps.first.as<std::string>());
        ASSERT_NE(a, nullptr) << "pod set " << ps.first.as<std::string>();
        // Exactly the listed resources: Kueue lists only those that got a flavor.
        EXPECT_EQ(a->value("resourceUsage", Json::object()).size(), ps.second.size())
            << "pod set " << ps.first.as<std::string>() << ": " << a->dump();
        for (const auto& r : ps.second) {
          EXPECT_EQ(a->at("resourceUsage").value(r.first.as<std::string>(), ""), r.second.as<std::string>())
              << "pod set " << ps.first.as<std::string>() << " resource " << r.first.as<std::string>();
        }
      }
    } else {
      EXPECT_FALSE(has_admission) << wl->dump();
      if (reserved != nullptr) {
        EXPECT_EQ(reserved->value("status", ""), "False");
      }
      if (want["message"]) {
        ASSERT_NE(reserved, nullptr);
        EXPECT_EQ(reserved->value("message", ""), want["message"].as<std::string>());
      }
    }
    if (want["admittedCondition"]) {
      const Json* a = find_condition(*wl, "Admitted");
      ASSERT_NE(a, nullptr);
      EXPECT_EQ(a->value("status", "") + "/" + a->value("reason", ""), want["admittedCondition"].as<std::string>());
    }
    if (want["admissionChecks"]) {
      std::map<std::string, std::string> got, expected_checks;
      if (wl->contains("status") && wl->at("status").contains("admissionChecks")) {
        for (const auto& c : wl->at("status").at("admissionChecks")) got[c.value("name", "")] = c.value("state", "");
      }
      for (const auto& c : want["admissionChecks"]) expected_checks[c.first.as<std::string>()] = c.second.as<std::string>();
      EXPECT_EQ(got, expected_checks);
    }
    const Json* evicted = find_condition(*wl, "Evicted");
    const Json* preempted = find_condition(*wl, "Preempted");
    if (want["evictedReason"]) {
      // Evicted without a preemption (stopPolicy HoldAndDrain): Evicted=True with that
      // reason and message, and no Preempted condition.
      ASSERT_NE(evicted, nullptr);
      EXPECT_EQ(evicted->value("status", ""), "True");
      EXPECT_EQ(evicted->value("reason", ""), want["evictedReason"].as<std::string>());
      if (want["evictedMessage"]) {
        EXPECT_EQ(evicted->value("message", ""), want["evictedMessage"].as<std::string>());
      }
      EXPECT_EQ(preempted, nullptr) << preempted->dump();
    } else if (want["evicted"] && want["evicted"].as<bool>()) {
      ASSERT_NE(evicted, nullptr);
      ASSERT_NE(preempted, nullptr);
      if (want["admitted"]) {
        // Re-admitted: SetQuotaReservation turned both to False, "Previously: ...".
        EXPECT_EQ(evicted->value("status", ""), "False");
        EXPECT_EQ(preempted->value("reason", ""), "QuotaReserved");
        EXPECT_EQ(preempted->value("message", "").rfind("Previously: Preempted to accommodate", 0), 0u);
      } else {
        EXPECT_EQ(evicted->value("status", ""), "True");
        EXPECT_EQ(evicted->value("reason", ""), "Preempted");
        EXPECT_EQ(preempted->value("status", ""), "True");
        if (want["preemptedReason"]) {
          EXPECT_EQ(preempted->value("reason", ""), want["preemptedReason"].as<std::string>());
        }
      }
    } else {
      EXPECT_EQ(preempted, nullptr) << "never preempted, got " << preempted->dump();
    }
  }
  if (!expected["clusterQueues"]) return;
  for (const auto& q : expected["clusterQueues"]) {
    const std::string name = q.first.as<std::string>();
    SCOPED_TRACE("ClusterQueue " + name);
    const Json* cq = find_item(out, "ClusterQueue", name);
    ASSERT_NE(cq, nullptr);
    for (const char* count : {"admittedWorkloads", "reservingWorkloads", "pendingWorkloads"}) {
      if (q.second[count]) {
        EXPECT_EQ(cq->at("status").value(count, -1), q.second[count].as<int>()) << count;
      }
    }
    if (q.second["flavorsUsage"]) {
      for (const auto& flavor : cq->at("status").value("flavorsUsage", Json::array())) {
        for (const auto& resource : flavor.at("resources")) {
          const std::string f = flavor.value("name", ""), r = resource.value("name", "");
          std::string want = "0";
          const YAML::Node flavors = q.second["flavorsUsage"];
          if (flavors.IsMap() && flavors[f] && flavors[f][r]) want = flavors[f][r].as<std::string>();
          EXPECT_EQ(resource.value("total", ""), want) << "flavorsUsage " << f << "/" << r;
        }
      }
    }
    const Json reservation = cq->at("status").value("flavorsReservation", Json::array());
    for (const auto& flavor : reservation) {
      for (const auto& resource : flavor.at("resources")) {
        const std::string f = flavor.value("name", ""), r = resource.value("name", "");
        std::string want = "0";
        const YAML::Node flavors = q.second["flavorsReservation"];
        if (flavors && flavors.IsMap() && flavors[f] && flavors[f][r]) want = flavors[f][r].as<std::string>();
        EXPECT_EQ(resource.value("total", ""), want) << f << "/" << r;
      }
    }
    for (const auto& flavor : q.second["flavorsReservation"]) {
      for (const auto& resource : flavor.second) {
        const bool listed = std::any_of(reservation.begin(), reservation.end(), [&](const Json& fl) {
          return fl.value("name", "") == flavor.first.as<std::string>();
        });
        EXPECT_TRUE(listed) << "flavor " << flavor.first.as<std::string>() << " " << resource.first.as<std::string>();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kueue, Conformance, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string n = param.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace gpubank
