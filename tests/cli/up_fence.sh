#!/usr/bin/env bash
# Two `gpubank up` on one --data-dir: the second takes the store over (a new writer epoch)
# and the first, still running, is fenced: its next append fails, it says so and exits 1,
# and nothing is counted twice. The store ends equal to an uninterrupted run's.
#   up_fence.sh GPUBANK
set -euo pipefail
gpubank=$1
dir=$(mktemp -d)
first_pid=
cleanup() {
  [ -n "$first_pid" ] && kill -KILL "$first_pid" 2> /dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
day=(--port 0 --hours 3 --serving-load 0.05)
entries() { "$gpubank" bank ledger --store "$1/gpubank.db" -o json | sed -n 's/^  "entries": \([0-9]*\),$/\1/p'; }

# The reference: the same day, uninterrupted.
"$gpubank" up "${day[@]}" --speed max --quiet --exit-when-done --data-dir "$dir/reference" 2> "$dir/reference.log" ||
  { cat "$dir/reference.log"; exit 1; }
reference=$(entries "$dir/reference")

# The first process runs slowly (a virtual minute per wall second: the 3 h day takes 3
# minutes), so it is still appending when the second one starts.
"$gpubank" up "${day[@]}" --speed 60 --quiet --data-dir "$dir/data" 2> "$dir/first.log" &
first_pid=$!
for _ in $(seq 1 600); do
  grep -q "serving http://" "$dir/first.log" && break
  kill -0 "$first_pid" 2> /dev/null || { cat "$dir/first.log"; echo "the first process died"; exit 1; }
  sleep 0.1
done
sleep 2

# The second process replays what the first stored, takes over and runs the day to its end.
"$gpubank" up "${day[@]}" --speed max --quiet --exit-when-done --data-dir "$dir/data" 2> "$dir/second.log" ||
  { cat "$dir/second.log"; echo "the second process failed"; exit 1; }

# The first notices at its next append (within seconds at this speed) and exits 1.
status=0
for _ in $(seq 1 600); do
  kill -0 "$first_pid" 2> /dev/null || break
  sleep 0.1
done
if kill -0 "$first_pid" 2> /dev/null; then
  cat "$dir/first.log"; echo "the fenced process is still running after 60 s"; exit 1
fi
wait "$first_pid" || status=$?
first_pid=
[ "$status" = 1 ] || { cat "$dir/first.log"; echo "the fenced process exited $status, not 1"; exit 1; }
grep -q "gpubank up: the run stopped: .*writer epoch" "$dir/first.log" ||
  { cat "$dir/first.log"; echo "the fenced process did not say why it stopped"; exit 1; }

stored=$(entries "$dir/data")
[ "$stored" = "$reference" ] || { echo "fenced run: $stored ledger entries, uninterrupted: $reference"; exit 1; }
"$gpubank" audit verify --store "$dir/data/gpubank.db" > "$dir/verify.txt" || { cat "$dir/verify.txt"; exit 1; }
echo "fence ok: $stored ledger entries, as uninterrupted"
