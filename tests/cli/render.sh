#!/usr/bin/env bash
# render.sh GPUBANK WORKDIR: `gpubank render --out` against a real directory. Writes the
# example set, re-runs (nothing changes), then checks that a modified file is rewritten, a
# stale file gpubank wrote is removed, a file without the managed-by label is kept, that
# --check writes nothing, and that switching the backend replaces kueue/ by volcano/.
set -eu
gpubank=$1; work=$2
out="$work/out"
rm -rf "$work"; mkdir -p "$work"
fail() { echo "render.sh: $*" >&2; exit 1; }
render() { "$gpubank" render -f examples/policies "$@"; }

render --backend kueue --out "$out" > "$work/first.txt"
files=$(find "$out" -type f | wc -l)
[ "$files" -gt 0 ] || fail "nothing written"
grep -q "^$files objects: $files written, 0 unchanged, 0 removed$" "$work/first.txt" || fail "first run: $(tail -1 "$work/first.txt")"
[ -z "$(find "$out" -name '*.gpubank-tmp')" ] || fail "temporary files left behind"
grep -q '^  name: search-h100-rdma-training$' "$out/kueue/clusterqueue-search-h100-rdma-training.yaml" || fail "no ClusterQueue"

# Re-run: byte-identical, nothing rewritten (mtimes kept).
stamp=$(stat -c %Y.%N "$out/kueue/cohort-h100-inference.yaml")
sleep 1
render --backend kueue --out "$out" > "$work/second.txt"
grep -q "^$files objects: 0 written, $files unchanged, 0 removed$" "$work/second.txt" || fail "second run: $(cat "$work/second.txt")"
[ "$stamp" = "$(stat -c %Y.%N "$out/kueue/cohort-h100-inference.yaml")" ] || fail "an unchanged file was rewritten"

# A hand edit is reverted; a stale managed file goes; a foreign file stays.
echo "# edited" >> "$out/kueue/cohort-h100-inference.yaml"
cp "$out/kueue/cohort-l40s-inference.yaml" "$out/kueue/cohort-retired-pool.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine}\n' > "$out/kueue/configmap-mine.yaml"

# --check reports and writes nothing.
render --backend kueue --out "$out" --check -o json > "$work/check.json"
grep -q '"status": "would-write"' "$work/check.json" || fail "--check: no would-write"
grep -q '"status": "would-remove"' "$work/check.json" || fail "--check: no would-remove"
grep -q '# edited' "$out/kueue/cohort-h100-inference.yaml" || fail "--check wrote a file"
[ -f "$out/kueue/cohort-retired-pool.yaml" ] || fail "--check removed a file"

render --backend kueue --out "$out" > "$work/third.txt"
grep -q '^written  kueue/cohort-h100-inference.yaml  Cohort/h100-inference$' "$work/third.txt" || fail "edit not reverted"
grep -q '^removed  kueue/cohort-retired-pool.yaml  Cohort/l40s-inference$' "$work/third.txt" || fail "stale file not reported"
[ ! -e "$out/kueue/cohort-retired-pool.yaml" ] || fail "stale file not removed"
[ -f "$out/kueue/configmap-mine.yaml" ] || fail "a file gpubank did not write was removed"
! grep -q '# edited' "$out/kueue/cohort-h100-inference.yaml" || fail "edit kept"

# Switching to Volcano removes every Kueue object and writes the Volcano ones.
render --backend volcano --out "$out" -o yaml > "$work/volcano.yaml"
[ -z "$(find "$out/kueue" -name '*.yaml' ! -name configmap-mine.yaml)" ] || fail "Kueue objects left after switching"
[ -f "$out/volcano/queue-search-h100-rdma-training.yaml" ] || fail "no Volcano queue"
grep -q 'status: removed' "$work/volcano.yaml" || fail "-o yaml lists no removal"
grep -q 'status: unchanged' "$work/volcano.yaml" || fail "PriorityClasses should be unchanged"
