#!/usr/bin/env bash
# Refreshes docs/screenshots/ from the portal in headless Chromium: a release build of
# gpubank, `gpubank up` on the seeded day (six virtual hours at full speed), and the browser
# test (tests/portal/run_portal_test.sh) saving every page at 1280x800 (and the overview at
# 390x844), in the light and the dark theme; then the controller's portal on a FAKE API
# server (tests/controller/portal_browser_test.cpp) as cluster-*.png.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gpubank controller_tests
mkdir -p docs/screenshots
tests/portal/run_portal_test.sh ./build/release/cmd/gpubank/gpubank docs/screenshots
GPUBANK_SCREENSHOTS="$PWD/docs/screenshots" GPUBANK_SOURCE_DIR="$PWD" GPUBANK_SHARED_DIR="$PWD/../shared" \
  GPUBANK_BINARY_DIR="$PWD/build/release" \
  ./build/release/tests/controller/controller_tests --gtest_filter='ControllerPortalBrowser.*' >&2
echo "screenshots: docs/screenshots/" >&2
