# Sanitizer settings shared by fuzz/replay.sh, fuzz/run_campaign.sh and `make asan`
# (source it). Leak checking stays on for the harnesses (lsan.supp names the third-party
# allocations that live for the whole process); the CLI under pytest turns it off.
_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=0:strict_string_checks=1:check_initialization_order=1:detect_odr_violation=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1:suppressions=$_here/ubsan.supp}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$_here/lsan.supp:print_suppressions=0}"
# Symbolized stacks: any llvm-symbolizer (clang-16 or the system's).
for _s in /usr/lib/llvm-16/bin/llvm-symbolizer "$(command -v llvm-symbolizer 2>/dev/null)" /usr/lib/llvm-14/bin/llvm-symbolizer; do
  if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -n "$_s" ] && [ -x "$_s" ]; then export ASAN_SYMBOLIZER_PATH="$_s"; fi
done
unset _s
# Arrow allocates through malloc, so ASan bounds its buffers (harness_util.cc sets it too).
export ARROW_DEFAULT_MEMORY_POOL=system
unset _here
