#!/usr/bin/env bash
# A fuzzing campaign over every harness of the sanitizer build (make fuzz).
#   fuzz/run_campaign.sh <build dir> [name ...]
# Environment:
#   FUZZ_SECONDS  seconds per harness (default 600)
#   FUZZ_SECONDS_<name>  seconds for that harness alone (e.g. FUZZ_SECONDS_task=3600)
#   FUZZ_RUNS     stop a harness after this many executions too (libFuzzer -runs; default
#                 none): FUZZ_SECONDS=3600 FUZZ_RUNS=10000000 is "1 h or 10M, whichever first"
#   FUZZ_JOBS     parallel fuzzing processes per harness (libFuzzer -fork; default: nproc;
#                 set it to the cores you can spare)
#   FUZZ_ONLY     space-separated harness names (default: all, or the names given as arguments)
#   FUZZ_TIMEOUT  seconds after which one input counts as a hang (default 20)
#   FUZZ_RSS_MB   memory limit per fuzzing process (default 2560)
# New corpus entries go to build/fuzz/corpus/<name>/ (the checked-in fuzz/corpus/<name>/
# is read, never written); crash, timeout and OOM inputs go to fuzz/crashes/<name>/.
# Prints a table: harness, executions, exec/s, cov, ft, corpus, crashes (crash/timeout/oom),
# also written to <build dir>/fuzz/summary.tsv.
set -uo pipefail
build="$(cd "${1:?usage: fuzz/run_campaign.sh <build dir> [name ...]}" && pwd)"
shift
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
source "$here/sanitizer_env.sh"
seconds="${FUZZ_SECONDS:-600}"
runs="${FUZZ_RUNS:-}"
jobs="${FUZZ_JOBS:-$(nproc)}"
timeout_s="${FUZZ_TIMEOUT:-20}"
rss="${FUZZ_RSS_MB:-2560}"
names="${FUZZ_ONLY:-$*}"
[ -n "$names" ] || names="$(cat "$build/fuzz_harnesses.txt")"
out="$build/fuzz"
mkdir -p "$out"
export REEL_FUZZ_TMP="${REEL_FUZZ_TMP:-$(mktemp -d /dev/shm/reel-fuzz-campaign.XXXXXX 2>/dev/null || mktemp -d)}"
trap 'rm -rf "$REEL_FUZZ_TMP"' EXIT
summary="$out/summary.tsv"
failed=0
printf 'harness\texecs\texec_per_s\tcov\tft\tcorpus\tcrash\ttimeout\toom\tseconds\n' >"$summary"
for name in $names; do
  bin="$build/fuzz/fuzz_$name"
  [ -x "$bin" ] || { echo "no harness binary $bin" >&2; exit 2; }
  mkdir -p "$out/corpus/$name" "$here/crashes/$name"
  own="FUZZ_SECONDS_$name"
  secs="${!own:-$seconds}"
  args=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1
        -max_total_time="$secs" -timeout="$timeout_s" -rss_limit_mb="$rss"
        -artifact_prefix="$here/crashes/$name/" -print_final_stats=1)
  [ -n "$runs" ] && args+=(-runs="$runs")
  [ -f "$here/$name.dict" ] && args+=(-dict="$here/$name.dict")
  seeds=()
  [ -d "$here/corpus/$name" ] && seeds+=("$here/corpus/$name")
  log="$out/$name.log"
  echo "== fuzz_$name: ${secs}s${runs:+ or $runs executions}, ${jobs} processes, log $log"
  start=$(date +%s)
  # Fork mode runs short child jobs and merges their coverage; the children keep the
  # harness's temp directories apart (one per process).
  (cd "$out" && "$bin" "${args[@]}" "$out/corpus/$name" "${seeds[@]}") >"$log" 2>&1
  end=$(date +%s)
  # Fork mode's progress lines: "#<runs>: cov: C ft: F corp: K exec/s E oom/timeout/crash: O/T/X time: Ns ..."
  last="$(grep -E '^#[0-9]+: cov: ' "$log" | tail -n 1)"
  if [ -z "$last" ]; then
    echo "fuzz_$name: no statistics in $log:" >&2
    tail -n 30 "$log" >&2
    printf '%s\t0\t0\t0\t0\t0\t?\t?\t?\t%s\n' "$name" "$((end - start))" >>"$summary"
    failed=1
    continue
  fi
  execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
  cov=$(sed -E 's/.* cov: ([0-9]+).*/\1/' <<<"$last")
  ft=$(sed -E 's/.* ft: ([0-9]+).*/\1/' <<<"$last")
  corp=$(sed -E 's/.* corp: ([0-9]+).*/\1/' <<<"$last")
  otc=$(sed -E 's#.* oom/timeout/crash: ([0-9]+/[0-9]+/[0-9]+).*#\1#' <<<"$last")
  IFS=/ read -r oom tmo crash <<<"$otc"
  elapsed=$((end - start))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$execs" "$((execs / (elapsed > 0 ? elapsed : 1)))" \
    "$cov" "$ft" "$corp" "$crash" "$tmo" "$oom" "$elapsed" >>"$summary"
done
echo
column -t -s $'\t' "$summary"
echo
echo "crash/timeout/oom inputs: fuzz/crashes/<name>/ (triage: docs/reliability.md)"
total=$(awk -F'\t' 'NR > 1 && $7 != "?" { s += $7 + $8 + $9 } END { print s + 0 }' "$summary")
[ "$total" -eq 0 ] && [ "$failed" -eq 0 ]
