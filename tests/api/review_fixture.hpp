// What the webhook's decision tests share: the example policies as a snapshot, the review
// time, the users who write objects, and an AdmissionReview envelope around an object.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "api/admission.hpp"
#include "core/timestamp.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::api::testing {

// examples/policies plus the test additions (support/policy_fixture.hpp), loaded once.
inline const PolicySnapshot& examples_snapshot() {
  static const PolicySnapshot s(gpubank::testing::examples_plus());
  return s;
}

inline const Timestamp kReviewNow = *parse_rfc3339("2026-11-30T09:12:44Z");

// A group's user, and the built-in ReplicaSet controller (one of the guardrails' default
// `controllers`).
inline const nlohmann::json kMei = {{"username", "mei.chen"}, {"groups", {"system:authenticated"}}};
inline const nlohmann::json kReplicaSetController = {
    {"username", "system:serviceaccount:kube-system:replicaset-controller"},
    {"groups", {"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}};

// The admission.k8s.io/v1 AdmissionReview the API server would send for `object`, written
// by `user`. The group comes from the object's apiVersion; namespace and name from its
// metadata (`fallback_namespace` and "x" when it has none, as a malformed object may).
inline nlohmann::json admission_review(const nlohmann::json& object, const nlohmann::json& user,
                                       const char* operation = "CREATE", const nlohmann::json& old_object = nullptr,
                                       const std::string& uid = "review-1",
                                       const std::string& fallback_namespace = "customer-service") {
  const std::string api_version = object.is_object() ? object.value("apiVersion", "v1") : "v1";
  const auto slash = api_version.find('/');
  const bool has_metadata = object.is_object() && object.contains("metadata") && object["metadata"].is_object();
  const std::string ns = has_metadata ? object["metadata"].value("namespace", fallback_namespace) : fallback_namespace;
  const std::string name = has_metadata ? object["metadata"].value("name", "x") : "x";
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind",
             {{"group", slash == std::string::npos ? "" : api_version.substr(0, slash)},
              {"version", "v1"},
              {"kind", object.is_object() ? object.value("kind", "") : ""}}},
            {"namespace", ns},
            {"name", name},
            {"operation", operation},
            {"userInfo", user},
            {"object", object},
            {"oldObject", old_object}}}};
}

}  // namespace gpubank::api::testing
