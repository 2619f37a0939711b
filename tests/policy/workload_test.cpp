#include "policy/workload.hpp"

#include <gtest/gtest.h>

#include "document/reader.hpp"
#include "policy/priority.hpp"
#include "policy/rules.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

struct Finding {
  std::string rule, path, message;
};

const PolicySet& examples() {
  static const PolicySet set = gpubank::testing::examples_plus();
  return set;
}

// Findings for a workload in namespace `ns`; `requester` is the writer (nullptr: a file),
// `old_yaml` the object before an update.
std::vector<Finding> check_as(const std::string& yaml, const std::string& ns, const UserInfo* requester,
                              const char* old_yaml = nullptr, const PlatformGuardrailsSpec* guardrails = nullptr) {
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::read_yaml(yaml, "w.yaml", docs, d);
  EXPECT_EQ(docs.size(), 1u);
  std::vector<doc::Document> old_docs;
  if (old_yaml != nullptr) doc::read_yaml(old_yaml, "old.yaml", old_docs, d);
  std::vector<Finding> out;
  const WorkloadContext context{ns, guardrails != nullptr ? *guardrails : *examples().guardrails_spec(), &examples(),
                                old_docs.empty() ? nullptr : &old_docs[0].root, requester};
  check_workload(docs[0].root, context, [&](std::string_view rule, std::string path, std::string message, SourcePos) {
    out.push_back({std::string(rule), std::move(path), std::move(message)});
  });
  return out;
}

std::vector<Finding> check(const std::string& yaml, const std::string& ns, const char* old_yaml = nullptr) {
  return check_as(yaml, ns, nullptr, old_yaml);
}

TEST(Workload, AllowedPriorityAndTypeOnAPodTemplatePass) {
  auto f = check(R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: embeddings, labels: {platform.gpubank.dev/workload-type: inference}}
spec:
  template:
    metadata: {labels: {platform.gpubank.dev/workload-type: inference}}
    spec: {priorityClassName: inference-critical, containers: [{name: c}]}
)",
                 "customer-service");
  EXPECT_TRUE(f.empty()) << f[0].message;
}

TEST(Workload, PriorityForAnotherWorkloadTypeIsForbidden) {
  auto f = check(R"(
kind: Pod
metadata: {name: p, labels: {platform.gpubank.dev/workload-type: training}}
spec: {priorityClassName: inference-critical, containers: [{name: c}]}
)",
                 "search");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kPriorityForbidden);
  EXPECT_EQ(f[0].path, "spec.priorityClassName");
  EXPECT_NE(f[0].message.find("not allowed for training workloads"), std::string::npos);
  EXPECT_NE(f[0].message.find("training-high, training-standard, batch-low"), std::string::npos);
}

TEST(Workload, TypeRestrictedPriorityNeedsAWorkloadTypeLabel) {
  auto f = check(R"(
kind: Pod
metadata: {name: p}
spec: {priorityClassName: training-standard, containers: [{name: c}]}
)",
                 "ads");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kPriorityForbidden);
  EXPECT_NE(f[0].message.find("has no platform.gpubank.dev/workload-type label"), std::string::npos);
}

TEST(Workload, ReservedLabelsInANamespaceOfNoGroupAreForged) {
  auto f = check(R"(
kind: Pod
metadata: {name: p, labels: {platform.gpubank.dev/cost-center: CC-1001}}
spec: {containers: [{name: c}]}
)",
                 "kube-system");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kLabelsReserved);
  EXPECT_NE(f[0].message.find("belongs to no business group"), std::string::npos);
}

TEST(Workload, ForgedLabelsInsidePodTemplatesAreFoundToo) {
  auto f = check(R"(
kind: Job
metadata: {name: j}
spec:
  template:
    metadata: {labels: {platform.gpubank.dev/cost-center: CC-1002}}
    spec: {containers: [{name: c}]}
)",
                 "search");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].path, "spec.template.metadata.labels[platform.gpubank.dev/cost-center]");
}

TEST(Workload, AnUnchangedLabelOnUpdateIsNotTheUsersDoing) {
  // The namespace moved to another group after the label was written: an update that
  // leaves the label alone is not a forgery.
  const char* old_pod = R"(
kind: Pod
metadata: {name: p, labels: {platform.gpubank.dev/business-group: ads}}
spec: {containers: [{name: c}]}
)";
  EXPECT_TRUE(check(old_pod, "search", old_pod).empty());
  EXPECT_EQ(check(old_pod, "search").size(), 1u);
}

TEST(Workload, KueuePriorityLabelIsChecked) {
  auto f = check(R"(
kind: JobSet
metadata: {name: js, labels: {kueue.x-k8s.io/priority-class: made-up, platform.gpubank.dev/workload-type: batch}}
spec: {replicatedJobs: [{name: w, template: {spec: {template: {spec: {containers: [{name: c}]}}}}}]}
)",
                 "ads");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kPriorityUnknown);
  EXPECT_EQ(f[0].path, "metadata.labels[kueue.x-k8s.io/priority-class]");
}

// ---- labels that grant something -------------------------------------------------------

const UserInfo kMei{"mei.chen", {"system:authenticated"}};
const UserInfo kJobController{"system:serviceaccount:kube-system:job-controller",
                              {"system:serviceaccounts", "system:serviceaccounts:kube-system"}};

std::vector<std::string> rules(const std::vector<Finding>& f) {
  std::vector<std::string> out;
  for (const auto& x : f) out.push_back(x.rule);
  return out;
}

TEST(WorkloadTrust, InferenceNeedsAnInferenceScalingPolicyThatTargetsTheObject) {
  const char* chat = R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: chat, labels: {platform.gpubank.dev/workload-type: inference}}
spec: {template: {spec: {containers: [{name: c}]}}}
)";
  auto f = check(chat, "customer-service");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kLabelsInferenceNotTargeted);
  EXPECT_EQ(f[0].path, "metadata.labels[platform.gpubank.dev/workload-type]");
  EXPECT_NE(f[0].message.find("no policy targets Deployment \"chat\" in customer-service"), std::string::npos)
      << f[0].message;
  // The targeted InferenceService, and the same name in another group's namespace.
  const char* llm = R"(
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: customer-service-llm, labels: {platform.gpubank.dev/workload-type: inference}}
spec: {predictor: {model: {modelFormat: {name: huggingface}}}}
)";
  EXPECT_TRUE(check(llm, "customer-service").empty());
  EXPECT_EQ(rules(check(llm, "search")), std::vector<std::string>{std::string(rule::kLabelsInferenceNotTargeted)});
  // A pod claims nothing by itself; its ReplicaSet's controller may copy the label.
  const char* pod = R"(
apiVersion: v1
kind: Pod
metadata: {name: embeddings-7d9f-abcde, labels: {platform.gpubank.dev/workload-type: inference}}
spec: {containers: [{name: c}]}
)";
  // (Nor does it name a priority class, which its protected type needs.)
  EXPECT_EQ(rules(check_as(pod, "customer-service", &kMei)),
            (std::vector<std::string>{std::string(rule::kLabelsInferenceNotTargeted),
                                      std::string(rule::kPriorityProtectedNeedsClass)}));
  EXPECT_TRUE(check_as(pod, "customer-service", &kJobController).empty());
  // An update that leaves an existing label alone is not a new claim; only the missing
  // priority class remains.
  EXPECT_EQ(rules(check_as(chat, "customer-service", &kMei, chat)),
            std::vector<std::string>{std::string(rule::kPriorityProtectedNeedsClass)});
}

TEST(WorkloadTrust, OwnerIdIsTheCreatorAndStaysOnUpdate) {
  auto job = [](const std::string& owner) {
    return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: {platform.gpubank.dev/owner-id: " + owner +
           "}}\nspec: {template: {spec: {containers: [{name: c}]}}}\n";
  };
  EXPECT_TRUE(check_as(job("mei.chen"), "search", &kMei).empty());
  auto f = check_as(job("u-40213"), "search", &kMei);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kLabelsOwnerIdNotRequester);
  EXPECT_NE(f[0].message.find("\"mei.chen\", not \"u-40213\""), std::string::npos) << f[0].message;
  // Someone else updating a workload keeps its owner.
  const std::string before = job("u-40213");
  EXPECT_TRUE(check_as(before, "search", &kMei, before.c_str()).empty());
  EXPECT_EQ(rules(check_as(job("mei.chen"), "search", &kMei, before.c_str())),
            std::vector<std::string>{std::string(rule::kLabelsOwnerIdNotRequester)});
  const std::string removed = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: {app: x}}\n"
                              "spec: {template: {spec: {containers: [{name: c}]}}}\n";
  f = check_as(removed, "search", &kMei, before.c_str());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("may not be removed"), std::string::npos) << f[0].message;
  const std::string no_labels = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n"
                                "spec: {template: {spec: {containers: [{name: c}]}}}\n";
  EXPECT_EQ(rules(check_as(no_labels, "search", &kMei, before.c_str())),
            std::vector<std::string>{std::string(rule::kLabelsOwnerIdNotRequester)});
  // The Job controller creates the pods of anyone's Job; files have no writer.
  EXPECT_TRUE(check_as(job("u-40213"), "search", &kJobController).empty());
  EXPECT_TRUE(check(job("u-40213"), "search").empty());
}

TEST(WorkloadTrust, CapacityRoleIsTheControllersAlone) {
  const char* pod = R"(
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {platform.gpubank.dev/capacity-role: serving-floor}}
spec: {containers: [{name: c}]}
)";
  auto f = check_as(pod, "customer-service", &kMei);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kLabelsCapacityRoleControllerOnly);
  EXPECT_EQ(f[0].path, "metadata.labels[platform.gpubank.dev/capacity-role]");
  EXPECT_TRUE(check_as(pod, "customer-service", &kMei, pod).empty());  // unchanged on update
  // A controller the guardrails name (here only gpubank's; the defaults are replaced).
  PlatformGuardrailsSpec g = *examples().guardrails_spec();
  g.controllers = {"user:system:serviceaccount:gpubank-system:gpubank-controller"};
  const UserInfo gpubank{"system:serviceaccount:gpubank-system:gpubank-controller", {}};
  EXPECT_TRUE(check_as(pod, "customer-service", &gpubank, nullptr, &g).empty());
  EXPECT_EQ(rules(check_as(pod, "customer-service", &kJobController, nullptr, &g)),
            std::vector<std::string>{std::string(rule::kLabelsCapacityRoleControllerOnly)});
}

TEST(WorkloadTrust, CheckpointableIsTrueOnAnUnprotectedType) {
  auto pod = [](const std::string& labels) {
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {" + labels +
           "}}\nspec: {containers: [{name: c}]}\n";
  };
  EXPECT_TRUE(check(pod("platform.gpubank.dev/workload-type: training, platform.gpubank.dev/checkpointable: \"true\""),
                    "search")
                  .empty());
  for (const std::string labels :
       {"platform.gpubank.dev/workload-type: training, platform.gpubank.dev/checkpointable: \"yes\"",
        "platform.gpubank.dev/checkpointable: \"true\""}) {
    auto f = check(pod(labels), "search");
    ASSERT_EQ(f.size(), 1u) << labels;
    EXPECT_EQ(f[0].rule, rule::kLabelsCheckpointableNotAllowed);
  }
  auto f = check(pod("platform.gpubank.dev/workload-type: inference, platform.gpubank.dev/checkpointable: \"true\""),
                 "search");
  ASSERT_EQ(f.size(), 2u);  // inference is not this pod's to claim either
  EXPECT_EQ(f[1].rule, rule::kLabelsCheckpointableNotAllowed);
  EXPECT_NE(f[1].message.find("protected from preemption"), std::string::npos) << f[1].message;
}

TEST(WorkloadTrust, GpuWorkloadsMustNameAKueueQueue) {
  auto job = [](const std::string& labels, const std::string& resources) {
    return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: {" + labels +
           "}}\nspec: {template: {spec: {initContainers: [{name: i}], containers: [{name: c, resources: " + resources +
           "}]}}}\n";
  };
  auto f = check(job("app: x", "{limits: {nvidia.com/gpu: 8}}"), "search-training");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kWorkloadMissingQueueName);
  EXPECT_EQ(f[0].path, "metadata.labels[kueue.x-k8s.io/queue-name]");
  EXPECT_NE(f[0].message.find("spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]"), std::string::npos)
      << f[0].message;
  EXPECT_TRUE(check(job("kueue.x-k8s.io/queue-name: search", "{limits: {nvidia.com/gpu: 8}}"), "search-training").empty());
  // MIG slices of the guardrails' pools count; no GPU, zero GPUs and other namespaces do not.
  EXPECT_EQ(rules(check(job("app: x", "{requests: {nvidia.com/mig-1g.10gb: 1}}"), "research")),
            std::vector<std::string>{std::string(rule::kWorkloadMissingQueueName)});
  EXPECT_TRUE(check(job("app: x", "{requests: {cpu: 1}}"), "search-training").empty());
  EXPECT_TRUE(check(job("app: x", "{limits: {nvidia.com/gpu: \"0\"}}"), "search-training").empty());
  EXPECT_TRUE(check(job("app: x", "{limits: {nvidia.com/gpu: 8}}"), "default").empty());
  // Pods that the Job controller creates for a Kueue-managed Job carry no queue label.
  EXPECT_TRUE(check_as(job("app: x", "{limits: {nvidia.com/gpu: 8}}"), "search-training", &kJobController).empty());
  // A CronJob names the queue of the Jobs it creates in their template.
  const std::string cron = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c, labels: {%TOP%}}\n"
                           "spec: {schedule: \"0 * * * *\", jobTemplate: {metadata: {labels: {%JOB%}}, spec: {template: "
                           "{spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}}}}\n";
  auto cronjob = [&](const std::string& top, const std::string& jt) {
    std::string y = cron;
    y.replace(y.find("%TOP%"), 5, top);
    y.replace(y.find("%JOB%"), 5, jt);
    return y;
  };
  EXPECT_TRUE(check(cronjob("app: x", "kueue.x-k8s.io/queue-name: search"), "search-training").empty());
  f = check(cronjob("kueue.x-k8s.io/queue-name: search", "app: x"), "search-training");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].path, "spec.jobTemplate.metadata.labels[kueue.x-k8s.io/queue-name]");
}

// ---- protected workloads and their default priority class ---------------------------

PriorityRule priority(std::string name, int value, std::vector<WorkloadType> types, std::vector<std::string> groups = {}) {
  PriorityRule r;
  r.name = std::move(name);
  r.value = value;
  r.workload_types = std::move(types);
  r.groups = std::move(groups);
  return r;
}

TEST(DefaultPriority, IsTheHighestClassThatNamesTheTypeAndAllowsTheGroup) {
  PlatformGuardrailsSpec g;
  g.priorities = {
      priority("any-type", 900'000, {}),  // every type, so chosen for none
      priority("serving", 100'000, {WorkloadType::Inference}),
      priority("ads-serving", 200'000, {WorkloadType::Inference}, {"ads"}),
      priority("serving-too", 100'000, {WorkloadType::Inference, WorkloadType::Batch}),
      priority("batch-low", 1'000, {WorkloadType::Batch}),
  };
  ASSERT_NE(default_priority_for(g, WorkloadType::Inference, "search"), nullptr);
  EXPECT_EQ(default_priority_for(g, WorkloadType::Inference, "search")->name, "serving");  // first of equals
  EXPECT_EQ(default_priority_for(g, WorkloadType::Inference, "ads")->name, "ads-serving");
  EXPECT_EQ(default_priority_for(g, WorkloadType::Batch, "search")->name, "serving-too");
  EXPECT_EQ(default_priority_for(g, WorkloadType::Training, "search"), nullptr);
  EXPECT_TRUE(is_protected_type(g, WorkloadType::Inference));  // the default protectedWorkloadTypes
  EXPECT_FALSE(is_protected_type(g, WorkloadType::Batch));
}

std::optional<MissingPriorityClass> missing_in(const std::string& yaml, const std::string& ns,
                                               const PlatformGuardrailsSpec* guardrails = nullptr) {
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::read_yaml(yaml, "w.yaml", docs, d);
  EXPECT_EQ(docs.size(), 1u);
  return missing_priority_class(docs[0].root, ns, guardrails != nullptr ? *guardrails : *examples().guardrails_spec());
}

// An inference Deployment in customer-service; `top` and `pod` are extra labels and pod
// spec fields.
std::string embeddings(const std::string& top = "", const std::string& pod = "") {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: embeddings, labels: {platform.gpubank.dev/"
         "workload-type: inference" + top + "}}\nspec: {template: {metadata: {labels: {platform.gpubank.dev/"
         "workload-type: inference}}, spec: {" + pod + "containers: [{name: c}]}}}\n";
}

TEST(ProtectedNeedsClass, AProtectedWorkloadWithoutAnyClassIsMissingOne) {
  const auto missing = missing_in(embeddings(), "customer-service");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->type, WorkloadType::Inference);
  ASSERT_NE(missing->group, nullptr);
  EXPECT_EQ(missing->group->name, "customer-service");
  ASSERT_NE(missing->default_class, nullptr);
  EXPECT_EQ(missing->default_class->name, "inference-critical");
  // A class anywhere, whatever it is (the other priority rules judge it).
  EXPECT_FALSE(missing_in(embeddings(", kueue.x-k8s.io/priority-class: inference-critical"), "customer-service"));
  EXPECT_FALSE(missing_in(embeddings("", "priorityClassName: made-up, "), "customer-service"));
  const char* pod_with_class = R"(
kind: Pod
metadata: {name: p, labels: {platform.gpubank.dev/workload-type: inference}}
spec: {priorityClassName: inference-critical, containers: [{name: c}]}
)";
  EXPECT_FALSE(missing_in(pod_with_class, "customer-service"));
  // Unprotected types, no type, a namespace of no group.
  const char* training = R"(
kind: Job
metadata: {name: j, labels: {platform.gpubank.dev/workload-type: training}}
spec: {template: {spec: {containers: [{name: c}]}}}
)";
  EXPECT_FALSE(missing_in(training, "search-training"));
  EXPECT_FALSE(missing_in("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n", "search"));
  EXPECT_FALSE(missing_in(embeddings(), "default"));
  // The first workload-type label found decides (top level first): a pod template's
  // type does not make a training Job protected.
  const char* mixed = R"(
kind: Job
metadata: {name: j, labels: {platform.gpubank.dev/workload-type: training}}
spec: {template: {metadata: {labels: {platform.gpubank.dev/workload-type: inference}}, spec: {containers: [{name: c}]}}}
)";
  EXPECT_FALSE(missing_in(mixed, "search-training"));
}

TEST(ProtectedNeedsClass, FiresForUsersAndNamesTheDefault) {
  auto f = check_as(embeddings(), "customer-service", &kMei);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kPriorityProtectedNeedsClass);
  EXPECT_EQ(f[0].path, "metadata.labels[kueue.x-k8s.io/priority-class]");
  EXPECT_NE(f[0].message.find("inference workloads are protected"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("Its default is \"inference-critical\""), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("POST /mutate"), std::string::npos) << f[0].message;
  // With the class it passes; controllers' writes and files are not checked.
  EXPECT_TRUE(check_as(embeddings(", kueue.x-k8s.io/priority-class: inference-critical"), "customer-service", &kMei)
                  .empty());
  EXPECT_TRUE(check_as(embeddings("", "priorityClassName: inference-critical, "), "customer-service", &kMei).empty());
  EXPECT_TRUE(check_as(embeddings(), "customer-service", &kJobController).empty());
  EXPECT_TRUE(check(embeddings(), "customer-service").empty());
}

TEST(ProtectedNeedsClass, WithoutADefaultTheMessageSaysSo) {
  PlatformGuardrailsSpec g = *examples().guardrails_spec();
  for (auto& p : g.priorities) {
    if (p.name == "inference-critical") p.groups = {"search"};  // no inference class for customer-service
  }
  auto f = check_as(embeddings(), "customer-service", &kMei, nullptr, &g);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kPriorityProtectedNeedsClass);
  EXPECT_NE(f[0].message.find("The guardrails have no default for it: no priority class names inference in its "
                              "workloadTypes and allows business group customer-service"),
            std::string::npos)
      << f[0].message;
  const auto missing = missing_in(embeddings(), "customer-service", &g);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->default_class, nullptr);
  // Batch made protected: its default is the highest batch class, training-standard.
  g.protected_workload_types = {WorkloadType::Inference, WorkloadType::Batch};
  const auto batch = missing_in(R"(
kind: Job
metadata: {name: j, labels: {platform.gpubank.dev/workload-type: batch}}
spec: {template: {spec: {containers: [{name: c}]}}}
)",
                                "ads", &g);
  ASSERT_TRUE(batch);
  ASSERT_NE(batch->default_class, nullptr);
  EXPECT_EQ(batch->default_class->name, "training-standard");
}

}  // namespace
}  // namespace gpubank::policy
