#!/usr/bin/env bash
# Writes everything a user sees into one folder, so that two builds can be
# compared file by file after a refactoring that must change nothing:
#
#   scripts/same_output.sh BUILD_DIR OUT_DIR [MODEL_DIR]
#   cmp -r / diff -r OUT_A OUT_B    (or: scripts/same_output.sh --compare A B)
#
# It writes: the app's screenshot of each of the six variants (two stages
# each), of a model in its three views (every head, one head, the head
# view); the CLI's svg/csv/json/npy exports of the six variants; `model
# export` and `model trace`; and the trace JSON of each variant. MODEL_DIR
# is a GPT-2 folder (default: a small random one written with
# app/tests/model_fixtures.py into OUT_DIR/../same-output-model).
set -euo pipefail

if [[ ${1:-} == --compare ]]; then
  a=$2 b=$3
  if ! diff <(cd "$a" && find . -type f | sort) <(cd "$b" && find . -type f | sort); then
    echo "the two folders hold different files"
    exit 1
  fi
  differ=$(cd "$a" && find . -type f | sort | while IFS= read -r f; do
    cmp -s "$a/$f" "$b/$f" || echo "$f"
  done)
  if [[ -n $differ ]]; then
    echo "$(echo "$differ" | wc -l) files differ, e.g.:"
    echo "$differ" | head -20
    exit 1
  fi
  echo "same: $(cd "$a" && find . -type f | wc -l) files identical"
  exit 0
fi

build=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
cli=$build/app/cli/attnscope-cli
app=$build/app/gui/attnscope
model=${3:-}
if [[ -z $model ]]; then
  model=$out/../same-output-model/tiny
  if [[ ! -f $model/model.safetensors ]]; then
    /usr/bin/python3 -c "import sys; sys.path.insert(0, '$here/app/tests'); \
import model_fixtures as mf; mf.write_gpt2_124m('$model', cfg=dict(mf.TINY, n_layer=2, n_head=4))"
  fi
fi

variants=(simple self_attention_v1 self_attention_v2 causal multihead_wrapper multihead)
text="Your journey starts with one step"
shot() {  # name, app flags...
  local name=$1
  shift
  xvfb-run -a -s "-screen 0 1600x1000x24" env HOME="$out/.home" XDG_CONFIG_HOME="$out/.home" \
    "$app" --no-session --size 1600x1000 --screenshot "$out/shots/$name.png" "$@" > /dev/null
}
mkdir -p "$out/shots" "$out/export" "$out/trace" "$out/model"
for v in "${variants[@]}"; do
  shot "$v-weights" --variant "$v" --stage softmax
  shot "$v-context" --variant "$v" --stage context
  "$cli" trace --variant "$v" > "$out/trace/$v.json"
  for fmt in svg csv json npy; do
    "$cli" export --variant "$v" --format "$fmt" --out "$out/export/$v-$fmt" > /dev/null 2>&1
  done
done
shot model-heads --model "$model" --text "$text" --layer 1
shot model-head --model "$model" --text "$text" --layer 1 --view head --head 2
shot model-head-softmax --model "$model" --text "$text" --layer 0 --view head --head 1 --stage softmax
shot model-tokens --model "$model" --text "$text" --layer 0 --view tokens
for fmt in svg csv json npy; do
  "$cli" model export "$model" --text "$text" --stages scores,weights,context,logits --format "$fmt" --out "$out/model/export-$fmt" > /dev/null 2>&1
done
"$cli" model trace "$model" --text "$text" > "$out/model/trace.json"
rm -rf "$out/.home"
# exported names carry the time of the export: drop it
find "$out" -type f -name '*_[0-9]*-[0-9]*.*' | while IFS= read -r f; do
  mv "$f" "$(echo "$f" | sed -E 's/_[0-9]{8}-[0-9]{6}(\.[a-z]+)$/\1/')"
done
echo "$(find "$out" -type f | wc -l) files in $out"
