#!/usr/bin/env bash
# render.sh GPUBANK WORKDIR: `gpubank render --out` against a real directory. Writes the
# example set, re-runs (nothing changes), then checks that a modified file is rewritten, a
# stale file gpubank wrote is removed, a file without the managed-by label is kept, that
# --check writes nothing, and that switching the backend replaces kueue/ by volcano/. The
# directory holds only objects and their Kustomization: dashboard models go to
# --dashboards-out (and an earlier layout's, under --out, are removed).
set -eu
gpubank=$1; work=$2
out="$work/out"
rm -rf "$work"; mkdir -p "$work"
fail() { echo "render.sh: $*" >&2; exit 1; }
render() { "$gpubank" render -f examples/policies "$@"; }

render --backend kueue --out "$out" > "$work/first.txt"
files=$(find "$out" -type f -name '*.yaml' | wc -l)
[ "$files" -gt 0 ] || fail "nothing written"
grep -q "^$files objects: $files written, 0 unchanged, 0 removed$" "$work/first.txt" || fail "first run: $(tail -1 "$work/first.txt")"
[ -z "$(find "$out" -name '*.gpubank-tmp')" ] || fail "temporary files left behind"
grep -q '^  name: search-h100-rdma-training$' "$out/kueue/clusterqueue-search-h100-rdma-training.yaml" || fail "no ClusterQueue"
# Objects and their Kustomization only: no dashboard model (kubectl apply -R -f reads .json).
[ "$(find "$out" -type f ! -name '*.yaml' | sed "s|^$out/||")" = "Kustomization" ] || fail "files other than objects: $(find "$out" -type f ! -name '*.yaml')"
grep -q "^written  Kustomization  $files resources for kubectl apply -k$" "$work/first.txt" || fail "Kustomization not reported"
[ "$(grep -c '^- ' "$out/Kustomization")" = "$files" ] || fail "the Kustomization does not list every object"
[ "$(grep '^- ' "$out/Kustomization" | sed 's/^- //')" = "$(cd "$out" && find . -name '*.yaml' | sed 's|^\./||' | LC_ALL=C sort)" ] || fail "Kustomization: not the objects, sorted"

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

# Dashboard models go to --dashboards-out; one an earlier gpubank wrote under --out goes.
dash="$work/dashboards"
cp tests/render/golden/kueue/grafana/bank.json "$out/kueue/bank.json"
render --backend kueue --out "$out" --dashboards-out "$dash" > "$work/dashboards.txt"
[ "$(find "$dash" -type f -name '*.json' | wc -l)" -eq 6 ] || fail "dashboards: $(ls "$dash")"
grep -q '"uid": "gpubank-bank"' "$dash/bank.json" || fail "no bank dashboard"
grep -q "^removed  kueue/bank.json  GrafanaDashboard/" "$work/dashboards.txt" || fail "old dashboard not reported"
[ ! -e "$out/kueue/bank.json" ] || fail "old dashboard under --out not removed"
grep -q "^written  $dash/bank.json  GrafanaDashboard/" "$work/dashboards.txt" || fail "dashboards not reported"
echo '{"uid": "mine", "title": "not gpubank'"'"'s"}' > "$dash/mine.json"
render --backend kueue --out "$out" --dashboards-out "$dash" > "$work/dashboards2.txt"
grep -q "^$((files + 6)) objects: 0 written, $((files + 6)) unchanged, 0 removed$" "$work/dashboards2.txt" ||
  fail "dashboards re-run: $(tail -1 "$work/dashboards2.txt")"
[ -f "$dash/mine.json" ] || fail "a dashboard gpubank did not write was removed"
code=0
"$gpubank" render -f examples/policies --backend kueue --out "$out" --dashboards-out "$out/grafana" > /dev/null 2>&1 || code=$?
[ "$code" -eq 2 ] || fail "--dashboards-out inside --out: exit $code, want 2"

# Switching to Volcano removes every Kueue object and writes the Volcano ones.
render --backend volcano --out "$out" -o yaml > "$work/volcano.yaml"
[ -z "$(find "$out/kueue" -name '*.yaml' ! -name configmap-mine.yaml)" ] || fail "Kueue objects left after switching"
[ -f "$out/volcano/queue-search-h100-rdma-training.yaml" ] || fail "no Volcano queue"
grep -q 'status: removed' "$work/volcano.yaml" || fail "-o yaml lists no removal"
grep -q 'status: unchanged' "$work/volcano.yaml" || fail "PriorityClasses should be unchanged"
