#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs every test: the unit,
# integration and command-line tests under AddressSanitizer and UndefinedBehaviorSanitizer,
# then the fuzzers for a bounded time. Prints a ctest summary; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh || exit 1
jobs=$(nproc)
echo "test: configuring and building (asan preset, $jobs jobs)" >&2
cmake --preset asan >/dev/null || exit 1
cmake --build --preset asan -j "$jobs" || exit 1

echo "test: running ctest" >&2
# Tests labelled `long` (the serving day over five seeds) are a separate command:
# ctest --preset asan -L long (README, "Tests").
#
# Every Platform built from the example policies calibrates its serving models (the embed
# model's is about 2 s under the sanitizers), and dozens of test processes build one. A
# directory made fresh for this run lets each calibration be computed once per run; being
# fresh, it never holds one from older code. A calibration is a pure function of its key,
# so the tests see the same numbers either way (GPUBANK_CALIBRATION_CACHE, docs/twin-inference.md).
calibration_cache="$(mktemp -d "${TMPDIR:-/tmp}/gpubank-calibrations.XXXXXX")" || exit 1
trap 'rm -rf "$calibration_cache"' EXIT
GPUBANK_CALIBRATION_CACHE="$calibration_cache" ctest --preset asan -j "$jobs" --timeout 600 -LE long
status=$?

if [ -x scripts/fuzz.sh ]; then
  echo "test: fuzzing (bounded time)" >&2
  # The asan build above already made the fuzzers.
  FUZZ_PRESET=asan ./scripts/fuzz.sh || status=1
fi
exit $status
