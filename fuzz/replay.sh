#!/usr/bin/env bash
# Replays fuzz/corpus/<name>/ and fuzz/crashes/<name>/ through one harness binary,
# without fuzzing (libFuzzer runs each file given as an argument once). Fails on any
# crash, sanitizer report, leak or timeout. Used by ctest (label fuzz_replay) in the
# sanitizer build.
#   fuzz/replay.sh <harness binary> <name>
set -euo pipefail
bin="$1"
name="$2"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/sanitizer_env.sh"
files=()
for d in "$here/corpus/$name" "$here/crashes/$name"; do
  [ -d "$d" ] || continue
  while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$d" -type f ! -name '.*' ! -name '*.md' -print0 | sort -z)
done
if [ ${#files[@]} -eq 0 ]; then
  echo "fuzz_$name: no corpus or crash files"
  exit 0
fi
log="$(mktemp)"
# The harness's temp directory, removed even when a crash skips its destructor.
export REEL_FUZZ_TMP="$(mktemp -d /dev/shm/reel-fuzz-replay.XXXXXX 2>/dev/null || mktemp -d)"
trap 'rm -f "$log"; rm -rf "$REEL_FUZZ_TMP"' EXIT
# -timeout: a single input that runs this long is a hang; -rss_limit_mb: an OOM is a bug.
if "$bin" -timeout=60 -rss_limit_mb=3072 "${files[@]}" >"$log" 2>&1; then
  echo "fuzz_$name: replayed ${#files[@]} files, no crash"
else
  rc=$?
  grep -v '^Running: \|^Executed ' "$log" | tail -n 80
  echo "fuzz_$name: FAILED (exit $rc) replaying ${#files[@]} files from fuzz/corpus/$name and fuzz/crashes/$name"
  exit 1
fi
