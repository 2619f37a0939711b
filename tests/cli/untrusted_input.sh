#!/usr/bin/env bash
# untrusted_input.sh GPUBANK WORKDIR: input that tries to smuggle or forge (issue 28).
#  1. A raw NUL, which yaml-cpp read as an escape ("re<NUL>x73earch" was "research"), is a
#     syntax error at its place, in policies and in a twin scenario.
#  2. A name holding a line break and ESC sequences is printed escaped: the output has
#     exactly the expected lines, none forged, and no raw ESC.
set -u
gpubank=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
status=0
fail() { echo "untrusted_input.sh: $*" >&2; status=1; }

# expect NAME CODE EXPECTED-OUTPUT-FILE COMMAND...: stdout and stderr together, byte for byte.
expect() {
  local name=$1 code=$2 want=$3; shift 3
  "$@" > "$work/$name.out" 2>&1
  local got=$?
  [ "$got" -eq "$code" ] || fail "$name: exit code $got, expected $code"
  if ! cmp -s "$want" "$work/$name.out"; then
    fail "$name: unexpected output"
    diff -u "$want" "$work/$name.out" | cat -A | head -40 >&2
  fi
  if LC_ALL=C grep -q "$(printf '\033')" "$work/$name.out"; then fail "$name: a raw ESC reached the output"; fi
}

# 1. NUL in a policy: validate, and the same bytes in a twin scenario.
printf 'apiVersion: platform.gpubank.dev/v1alpha1\nkind: GPUQuotaPolicy\nmetadata: {name: research-extra}\nspec:\n  businessGroup: re\000x73earch\n  resourcePool: h100-rdma-training\n  guaranteed: 0\n' > "$work/nul.yaml"
printf '%s\n' "$work/nul.yaml:5:20: error: invalid character U+0000 (NUL): YAML does not allow control characters [schema.syntax]" \
  "" "0 objects: 0 valid, 0 invalid, 0 skipped; 1 errors, 0 warnings" > "$work/nul.want"
expect nul 1 "$work/nul.want" "$gpubank" validate "$work/nul.yaml"

printf 'start: "2026-12-01T00:00:00Z"\nworkloads:\n- {name: w\000x2d1, businessGroup: ads, resourcePool: h100-rdma-training, gpus: 8,\n   workloadType: batch, priorityClass: batch-low, arrivalTime: 0s, runTime: 1h}\n' > "$work/nul-scenario.yaml"
printf '%s\n' "$work/nul-scenario.yaml:3:11: error: invalid character U+0000 (NUL): YAML does not allow control characters [schema.syntax]" \
  "gpubank twin run: the scenario is invalid" > "$work/nul-scenario.want"
expect nul-scenario 1 "$work/nul-scenario.want" "$gpubank" twin run --policies examples/policies --workloads "$work/nul-scenario.yaml"

# 2. A forged diagnostic in a name, and ESC sequences in a name and a value (written as
# YAML escapes, which are legal; the printed text must not carry them raw).
cat > "$work/forged.yaml" <<'YAML'
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: "a\nfake.yaml:1:1: error: injected [x]"}
spec: {businessGroup: "\e[2J\e[31msearch", resourcePool: h100-rdma-training, guaranteed: 1}
YAML
dns="is not a DNS-1123 label: use lower-case letters, digits and '-', starting and ending with a letter or digit [schema.invalid-format]"
object='GPUQuotaPolicy/a\nfake.yaml:1:1: error: injected [x]'
printf '%s\n' "invalid  $object  $work/forged.yaml:1" \
  "  $work/forged.yaml:3:18: error: $object: metadata.name: \"a\\nfake.yaml:1:1: error: injected [x]\" $dns" \
  "  $work/forged.yaml:4:23: error: $object: spec.businessGroup: \"\\x1b[2J\\x1b[31msearch\" $dns" \
  "" "1 objects: 0 valid, 1 invalid, 0 skipped; 2 errors, 0 warnings" > "$work/forged.want"
expect forged 1 "$work/forged.want" "$gpubank" validate "$work/forged.yaml"
# No line of the output starts the forged diagnostic.
if grep -q '^fake.yaml' "$work/forged.out"; then fail "forged: a forged line reached the output"; fi

exit $status
