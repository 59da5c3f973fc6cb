#!/usr/bin/env bash
# A fuzzing campaign over every harness of the sanitizer build (make fuzz).
#   fuzz/run_campaign.sh <build dir> [name ...]
# Environment:
#   FUZZ_SECONDS  seconds per harness (default 600)
#   FUZZ_SECONDS_<name>  seconds for that harness alone (e.g. FUZZ_SECONDS_task=3600)
#   FUZZ_RUNS     stop a harness after this many executions too (libFuzzer -runs; default
#                 none): FUZZ_SECONDS=3600 FUZZ_RUNS=10000000 is "1 h or 10M, whichever first"
#   FUZZ_CPU_SECONDS  a CPU budget instead of a wall one (default none): the harness runs in
#                 rounds of FUZZ_ROUND_SECONDS wall seconds (default 600) on the growing corpus
#                 until its processes have used this much CPU time (user + system) or FUZZ_RUNS
#                 executions. This is the issue's "1 h CPU" measured, not assumed from wall time
#                 on a machine whose other cores are busy. FUZZ_CPU_SECONDS_<name> for one harness.
#   FUZZ_JOBS     parallel fuzzing processes per harness (libFuzzer -fork; default: nproc;
#                 set it to the cores you can spare)
#   FUZZ_ONLY     space-separated harness names (default: all, or the names given as arguments)
#   FUZZ_TIMEOUT  seconds after which one input counts as a hang (default 20)
#   FUZZ_RSS_MB   memory limit per fuzzing process (default 2560)
# New corpus entries go to build/fuzz/corpus/<name>/ (the checked-in fuzz/corpus/<name>/
# is read, never written); crash, timeout and OOM inputs go to fuzz/crashes/<name>/.
# Prints a table: harness, executions, exec/s (per CPU second), cov, ft, corpus, crashes
# (crash/timeout/oom), wall and CPU seconds, rounds,
# also written to <build dir>/fuzz/summary.tsv.
set -uo pipefail
build="$(cd "${1:?usage: fuzz/run_campaign.sh <build dir> [name ...]}" && pwd)"
shift
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
source "$here/sanitizer_env.sh"
seconds="${FUZZ_SECONDS:-600}"
runs="${FUZZ_RUNS:-}"
cpu_budget="${FUZZ_CPU_SECONDS:-}"
round_s="${FUZZ_ROUND_SECONDS:-600}"
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
printf 'harness\texecs\texec_per_cpu_s\tcov\tft\tcorpus\tcrash\ttimeout\toom\twall_s\tcpu_s\trounds\n' >"$summary"
for name in $names; do
  bin="$build/fuzz/fuzz_$name"
  [ -x "$bin" ] || { echo "no harness binary $bin" >&2; exit 2; }
  mkdir -p "$out/corpus/$name" "$here/crashes/$name"
  own="FUZZ_SECONDS_$name"
  secs="${!own:-$seconds}"
  own="FUZZ_CPU_SECONDS_$name"
  budget="${!own:-$cpu_budget}"
  [ -n "$budget" ] && secs="$round_s"
  base=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1
        -max_total_time="$secs" -timeout="$timeout_s" -rss_limit_mb="$rss"
        -artifact_prefix="$here/crashes/$name/" -print_final_stats=1)
  [ -f "$here/$name.dict" ] && base+=(-dict="$here/$name.dict")
  seeds=()
  [ -d "$here/corpus/$name" ] && seeds+=("$here/corpus/$name")
  log="$out/$name.log"
  : >"$log"
  echo "== fuzz_$name: ${budget:+${budget} CPU s in rounds of }${secs}s${runs:+ or $runs executions}, ${jobs} processes, log $log"
  execs=0 cpu=0 wall=0 rounds=0 oom=0 tmo=0 crash=0 last=""
  while :; do
    args=("${base[@]}")
    [ -n "$runs" ] && args+=(-runs="$((runs - execs))")
    # Fork mode runs short child jobs and merges their coverage; the children keep the
    # harness's temp directories apart (one per process). GNU time's rusage includes every
    # child the fuzzer waited for, so cpu is the harness's whole CPU time.
    (cd "$out" && /usr/bin/time -f '%e %U %S' -o "$out/$name.time" \
        "$bin" "${args[@]}" "$out/corpus/$name" "${seeds[@]}") >>"$log" 2>&1
    rounds=$((rounds + 1))
    read -r e u sy <"$out/$name.time" || { e=0 u=0 sy=0; }
    wall=$(awk -v a="$wall" -v b="$e" 'BEGIN { printf "%d", a + b }')
    cpu=$(awk -v a="$cpu" -v b="$u" -v c="$sy" 'BEGIN { printf "%d", a + b + c }')
    # Fork mode's progress lines: "#<runs>: cov: C ft: F corp: K exec/s E oom/timeout/crash: O/T/X time: Ns ..."
    line="$(grep -E '^#[0-9]+: cov: ' "$log" | tail -n 1)"
    [ -n "$line" ] && [ "$line" != "$last" ] || break
    last="$line"
    execs=$((execs + $(sed -E 's/^#([0-9]+):.*/\1/' <<<"$line")))
    IFS=/ read -r o t x <<<"$(sed -E 's#.* oom/timeout/crash: ([0-9]+/[0-9]+/[0-9]+).*#\1#' <<<"$line")"
    oom=$((oom + o)) tmo=$((tmo + t)) crash=$((crash + x))
    [ -n "$budget" ] && [ "$cpu" -lt "$budget" ] || break
    [ -n "$runs" ] && [ "$execs" -ge "$runs" ] && break
    echo "   round $rounds: $execs executions, $cpu CPU s"
  done
  if [ -z "$last" ]; then
    echo "fuzz_$name: no statistics in $log:" >&2
    tail -n 30 "$log" >&2
    printf '%s\t0\t0\t0\t0\t0\t?\t?\t?\t%s\t%s\t%s\n' "$name" "$wall" "$cpu" "$rounds" >>"$summary"
    failed=1
    continue
  fi
  cov=$(sed -E 's/.* cov: ([0-9]+).*/\1/' <<<"$last")
  ft=$(sed -E 's/.* ft: ([0-9]+).*/\1/' <<<"$last")
  corp=$(sed -E 's/.* corp: ([0-9]+).*/\1/' <<<"$last")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$execs" "$((execs / (cpu > 0 ? cpu : 1)))" \
    "$cov" "$ft" "$corp" "$crash" "$tmo" "$oom" "$wall" "$cpu" "$rounds" >>"$summary"
done
echo
column -t -s $'\t' "$summary"
echo
echo "crash/timeout/oom inputs: fuzz/crashes/<name>/ (triage: docs/reliability.md)"
total=$(awk -F'\t' 'NR > 1 && $7 != "?" { s += $7 + $8 + $9 } END { print s + 0 }' "$summary")
[ "$total" -eq 0 ] && [ "$failed" -eq 0 ]
