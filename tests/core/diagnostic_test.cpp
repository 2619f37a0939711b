#include "core/diagnostic.hpp"

#include <gtest/gtest.h>

namespace gpubank {
namespace {

TEST(Diagnostic, FormatsEveryKnownPart) {
  Diagnostic d{Severity::Error, "quota.sum-exceeds-pool", "policies/quota.yaml", {12, 14},
               "GPUQuotaPolicy", "ads-h100", "spec.guaranteed",
               "guarantees on pool h100-rdma-training add up to 72, above its capacity 64"};
  EXPECT_EQ(d.to_string(),
            "policies/quota.yaml:12:14: error: GPUQuotaPolicy/ads-h100: spec.guaranteed: "
            "guarantees on pool h100-rdma-training add up to 72, above its capacity 64 "
            "[quota.sum-exceeds-pool]");
}

TEST(Diagnostic, LeavesOutUnknownParts) {
  Diagnostic d;
  d.severity = Severity::Warning;
  d.message = "no objects found";
  EXPECT_EQ(d.to_string(), "warning: no objects found");
  d.file = "x.yaml";
  EXPECT_EQ(d.to_string(), "x.yaml: warning: no objects found");
}

TEST(Diagnostic, HasErrorsIgnoresWarnings) {
  Diagnostics ds{Diagnostic{}};
  ds[0].severity = Severity::Warning;
  EXPECT_FALSE(has_errors(ds));
  ds.push_back(Diagnostic{});
  EXPECT_TRUE(has_errors(ds));
}

}  // namespace
}  // namespace gpubank
