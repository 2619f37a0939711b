#!/usr/bin/env bash
# render_kubectl.sh GPUBANK WORKDIR: the directory `gpubank render --out` writes is itself
# appliable. `kubectl kustomize DIR` (what `kubectl apply -k DIR` applies) yields exactly
# the rendered objects, kinds and count; `kubectl apply -R -f DIR` reads exactly the
# objects too (no dashboard model, no Kustomization: checked with `kubectl label --local`,
# which reads files as apply does and needs no cluster). Both backends. Without kubectl
# (CI has none) the test is skipped: exit 77, ctest's SKIP_RETURN_CODE.
set -eu
gpubank=$1; work=$2
fail() { echo "render_kubectl.sh: $*" >&2; exit 1; }
kubectl=$(command -v kubectl) || { echo "render_kubectl.sh: SKIP: kubectl is not on PATH"; exit 77; }
rm -rf "$work"; mkdir -p "$work/home"
# No cluster and no user configuration: both commands work offline.
export HOME="$work/home" KUBECONFIG="$work/home/none"

# The kind of each file's object, sorted (one object per file).
kinds_of_files() { (cd "$1" && find . -name '*.yaml' "${@:2}" -exec awk '/^kind:/ {print $2; exit}' {} \; | LC_ALL=C sort); }

for backend in kueue volcano; do
  out="$work/$backend"
  "$gpubank" render -f examples/policies --backend "$backend" --out "$out" --dashboards-out "$work/dashboards-$backend" > /dev/null
  # PodGroup templates (volcano/templates/) are not for applying: not in the Kustomization.
  want=$(kinds_of_files "$out" ! -path './volcano/templates/*')
  objects=$(printf '%s\n' "$want" | wc -l)
  [ "$objects" -gt 10 ] || fail "$backend: only $objects objects rendered"
  got=$("$kubectl" kustomize "$out" | awk '/^kind:/ {print $2}' | LC_ALL=C sort) || fail "$backend: kubectl kustomize failed"
  [ "$got" = "$want" ] || fail "$backend: kubectl kustomize yields other objects: $(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -20)"
  # -R -f reads every .yaml, .yml and .json file: only the objects may be there.
  files=$(find "$out" -name '*.yaml' | wc -l)
  read=$("$kubectl" label --local -R -f "$out" gpubank.dev/applied=yes -o name) || fail "$backend: kubectl -R -f cannot read $out"
  [ "$(printf '%s\n' "$read" | wc -l)" -eq "$files" ] || fail "$backend: kubectl -R -f read $(printf '%s\n' "$read" | wc -l) objects, $files files"
  ! printf '%s\n' "$read" | grep -qi kustomization || fail "$backend: kubectl -R -f read the Kustomization"
  echo "$backend: $objects objects through kubectl kustomize, $files through kubectl apply -R -f"
done
