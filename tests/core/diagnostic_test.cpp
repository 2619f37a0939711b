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

// Issue 28: a name of "a\nfake.yaml:1:1: error: injected [x]" printed a forged diagnostic
// line, and ESC sequences reached the terminal. Every part is escaped; the line stays one.
TEST(Diagnostic, EscapesControlCharactersInEveryPart) {
  Diagnostic d{Severity::Error, "r\n", "in\x1b[2J.yaml", {3, 7}, "Kind\r", "a\nfake.yaml:1:1: error: injected [x]",
               "spec.\x7f", "value \"\xC2\x9B" "31m\" is not allowed\n"};
  EXPECT_EQ(d.to_string(),
            "in\\x1b[2J.yaml:3:7: error: Kind\\r/a\\nfake.yaml:1:1: error: injected [x]: spec.\\x7f: "
            "value \"\\u009b31m\" is not allowed\\n [r\\n]");
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
