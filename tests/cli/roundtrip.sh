#!/usr/bin/env bash
# roundtrip.sh GPUBANK OUTDIR PATH...: converts the policies to canonical YAML and JSON
# and checks that both validate again with the same verdicts.
set -eu
gpubank=$1; out=$2; shift 2
mkdir -p "$out"
"$gpubank" convert "$@" -o yaml > "$out/canonical.yaml"
"$gpubank" convert "$@" -o json > "$out/canonical.json"
"$gpubank" validate "$out/canonical.yaml" > "$out/yaml.txt"
"$gpubank" validate "$out/canonical.json" > "$out/json.txt"
# Same objects, both valid (file names differ, so compare kind/name columns).
cut -d' ' -f1-3 "$out/yaml.txt" > "$out/yaml.objects"
cut -d' ' -f1-3 "$out/json.txt" > "$out/json.objects"
diff "$out/yaml.objects" "$out/json.objects"
# Converting the canonical form again changes nothing.
"$gpubank" convert "$out/canonical.yaml" -o yaml > "$out/again.yaml"
diff "$out/canonical.yaml" "$out/again.yaml"
