#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang + ASan + UBSan, replays
# every saved crash input (fuzz/regressions/<target>/), then fuzzes each
# target for a bounded time on a copy of its seed corpus (fuzz/corpus/<target>/).
# Exits non-zero on any crash, hang (10 s per input), leak, out-of-memory
# (2 GB) or sanitizer report; the input that caused it is copied to
# fuzz-artifacts/. Prints, per target, the inputs run, the seconds and the
# corpus size (seed files, and the corpus libFuzzer ended with).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60 s, every target)
#   FUZZ_BUILD=dir  build folder (default build-fuzz)
#   FUZZ_JOBS=n     targets fuzzed at once (default: the number of cores). Each
#                   libFuzzer process is single-threaded, so every target still
#                   gets its SECONDS_PER_TARGET on a core of its own.
#
# Needs clang and its libFuzzer runtime (Debian: clang libclang-rt-dev, both
# installed by scripts/install-deps.sh); installs nothing itself.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=${FUZZ_BUILD:-build-fuzz}

if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number of seconds, got '$seconds'" >&2
  exit 2
fi
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ is not installed; run scripts/install-deps.sh (Debian: clang libclang-rt-dev)" >&2
  exit 1
fi
fuzzer_lib=$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)
if [ ! -f "$fuzzer_lib" ]; then
  echo "fuzz.sh: clang's libFuzzer runtime is missing; run scripts/install-deps.sh (Debian: libclang-rt-dev)" >&2
  exit 1
fi

targets=("$@")
all_targets=no
if [ ${#targets[@]} -eq 0 ]; then
  targets=(config csv npy json_import session cli safetensors tokenizer hf_tokenizer pth shapes hub_listing
           hub_headers)
  all_targets=yes
fi
for name in "${targets[@]}"; do
  if [ ! -f "fuzz/fuzz_$name.cpp" ]; then
    echo "fuzz.sh: there is no target '$name' (fuzz/fuzz_$name.cpp)" >&2
    exit 2
  fi
done

echo "== building the fuzz targets in $build"
build_start=$SECONDS
CXX=clang++ cmake -S . -B "$build" -DATTNSCOPE_FUZZ=ON -DATTNSCOPE_SANITIZE=address,undefined \
  -DATTNSCOPE_BUILD_GUI=OFF -DATTNSCOPE_BUILD_TESTS=OFF -DATTNSCOPE_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
# CMake's Makefiles build the targets of `--target a b c` one after another
# (.NOTPARALLEL), each one-file target on one core: every target at once is
# the fuzz_targets target, whose parts build side by side.
if [ "$all_targets" = yes ]; then
  cmake --build "$build" -j"$(nproc)" --target fuzz_targets
else
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"
fi
echo "== built in $((SECONDS - build_start)) s"

# Readable reports: stack traces for UBSan too.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/artifacts"
status=0
summary=()
save_artifacts() {  # name log
  mkdir -p fuzz-artifacts
  cp "$work/artifacts/$1"-* fuzz-artifacts/ 2>/dev/null || true
  cp "$2" "fuzz-artifacts/fuzz_$1.log"
  echo "   the input and the log are in fuzz-artifacts/; once fixed, add the input to" \
       "fuzz/regressions/$1/ (make test replays it)"
}

# One target: replays its regressions, then fuzzes it. Prints its report
# and writes its summary line to $work/<name>.summary; non-zero on failure.
fuzz_target() {  # name
  local name=$1
  local target="$build/fuzz/fuzz_$name"
  local dict=()
  [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
  # Artifacts are named <prefix>crash-<sha1> (or leak-, timeout-, oom-).
  local common=(-timeout=10 -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$work/artifacts/$name-")

  # 1. Every input that ever crashed this target must pass now.
  local regressions=()
  if [ -d "fuzz/regressions/$name" ]; then
    mapfile -t regressions < <(find "fuzz/regressions/$name" -type f | sort)
  fi
  if [ ${#regressions[@]} -gt 0 ]; then
    if ! "$target" "${common[@]}" "${regressions[@]}" >"$work/$name-regressions.log" 2>&1; then
      echo "fuzz_$name FAILED on a saved regression input:"
      tail -40 "$work/$name-regressions.log"
      save_artifacts "$name" "$work/$name-regressions.log"
      printf '%-12s %10s %8s %8s %12s  %s\n' "$name" - - "${#regressions[@]}" - "FAILED (regression)" \
        >"$work/$name.summary"
      return 1
    fi
  fi

  # 2. Fuzz for $seconds on a copy of the seeds (plus the regressions).
  local corpus="$work/corpus-$name"
  mkdir -p "$corpus"
  local seeds=0
  if [ -d "fuzz/corpus/$name" ]; then
    cp fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
    seeds=$(find "fuzz/corpus/$name" -type f | wc -l)
  fi
  local f
  for f in "${regressions[@]}"; do cp "$f" "$corpus/"; done
  echo "== fuzz_$name for ${seconds} s ($seeds seed inputs, ${#regressions[@]} regression inputs)"
  local log="$work/$name.log" result
  local start=$SECONDS
  if "$target" "$corpus" "${dict[@]}" "${common[@]}" -max_total_time="$seconds" \
       -print_final_stats=1 >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
  fi
  local took=$((SECONDS - start)) runs final
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  final=$(sed -n 's/^#[0-9]*[[:space:]]*DONE .*corp: \([0-9]*\/[^ ]*\).*/\1/p' "$log" | tail -1)
  printf '%-12s %10s %8s %8s %12s  %s\n' "$name" "${runs:-?}" "$took" "$seeds" "${final:-?}" "$result" \
    >"$work/$name.summary"
  if [ "$result" = ok ]; then
    echo "   $runs inputs in $took s, corpus $seeds seeds -> ${final:-?} (files/size)"
  else
    echo "fuzz_$name FAILED after $took s:"
    tail -40 "$log"
    save_artifacts "$name" "$log"
    return 1
  fi
}

# FUZZ_JOBS targets at a time, each report printed whole when its target ends.
jobs=${FUZZ_JOBS:-$(nproc)}
if ! [[ "$jobs" =~ ^[0-9]+$ ]] || [ "$jobs" -lt 1 ]; then
  jobs=1
fi
echo "== fuzzing ${#targets[@]} targets, $jobs at a time"
declare -A running=()  # pid -> name
finish_one() {
  local pid
  wait -n -p pid "${!running[@]}" || true
  local name=${running[$pid]}
  unset "running[$pid]"
  cat "$work/$name.out"
  [ -f "$work/$name.summary" ] || echo "$name did not finish" >"$work/$name.summary"
  grep -q ' ok$' "$work/$name.summary" || status=1
}
for name in "${targets[@]}"; do
  while [ ${#running[@]} -ge "$jobs" ]; do finish_one; done
  fuzz_target "$name" >"$work/$name.out" 2>&1 &
  running[$!]=$name
done
while [ ${#running[@]} -gt 0 ]; do finish_one; done
for name in "${targets[@]}"; do
  summary+=("$(cat "$work/$name.summary")")
done

echo
echo "== fuzz summary (${seconds} s per target)"
printf '%-12s %10s %8s %8s %12s  %s\n' target inputs seconds seeds corpus result
printf '%s\n' "${summary[@]}"
exit $status
