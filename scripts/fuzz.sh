#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan + UBSan and runs each one for
# a bounded time on a copy of its seed corpus. Exits non-zero on any crash,
# hang (10 s per input), leak or sanitizer report.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${FUZZ_BUILD:-build-fuzz}

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ is needed (Debian: clang libclang-rt-dev)" >&2
  exit 1
fi
CXX=clang++ cmake -S . -B "$build" -DATTNSCOPE_FUZZ=ON -DATTNSCOPE_SANITIZE=address,undefined \
  -DATTNSCOPE_BUILD_GUI=OFF -DATTNSCOPE_BUILD_TESTS=OFF -DATTNSCOPE_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for target in "$build"/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target" | sed 's/^fuzz_//')
  mkdir -p "$work/$name"
  cp fuzz/corpus/"$name"/* "$work/$name/" 2>/dev/null || true
  dict=()
  [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
  echo "== fuzz_$name for ${seconds}s"
  if ! "$target" "$work/$name" "${dict[@]}" -max_total_time="$seconds" -max_len=65536 \
       -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$work/crash-$name-" \
       -print_final_stats=1 >"$work/$name.log" 2>&1; then
    echo "fuzz_$name FAILED:"; tail -40 "$work/$name.log"
    mkdir -p fuzz-artifacts && cp "$work"/crash-"$name"-* fuzz-artifacts/ 2>/dev/null || true
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$work/$name.log" | tail -2
  fi
done
exit $status
