#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` (parallel slots, continuous batching) from
# the llama.cpp sources vendored in the pinned llama-cpp-python sdist, so the
# server matches the library version. Used by scripts/bench_dream.py and the re-ranker's test; the
# sdist comes from the package registry (pip's cache after the first time), or, offline, from the
# folder PIP_FIND_LINKS names (`make ... OFFLINE=DIR` sets it to scripts/offline_bundle.sh's bundle,
# which also holds cmake and ninja wheels for a box without them). Nothing else is fetched: no
# prebuilt web UI (LLAMA_USE_PREBUILT_UI=OFF; Lyra talks to the server's API only).
#   scripts/build_llama_server.sh [DEST]     (default: .venv/llama-server)
#   CMAKE_ARGS="-DGGML_CUDA=on" scripts/build_llama_server.sh   for a GPU box
set -euo pipefail
VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
DEST="$(realpath -m "${1:-.venv/llama-server}")"
PY="${PYTHON:-.venv/bin/python}"
if [[ -x "$DEST/bin/llama-server" ]]; then
  echo "$DEST/bin/llama-server"
  exit 0
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
SDIST=""
for links in ${PIP_FIND_LINKS:-}; do  # the bundle's sdist as it is: no metadata build, no index
  [[ -f "$links/llama_cpp_python-$VERSION.tar.gz" ]] && SDIST="$links/llama_cpp_python-$VERSION.tar.gz"
done
if [[ -z $SDIST ]]; then
  "$PY" -m pip download --disable-pip-version-check --quiet --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$VERSION" -d "$WORK" >&2
  SDIST="$WORK/llama_cpp_python-$VERSION.tar.gz"
fi
tar xzf "$SDIST" -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
if ! command -v cmake >/dev/null; then  # the cmake and ninja wheels (PyPI's, or the bundle's), beside the build
  "$PY" -m pip install --disable-pip-version-check --quiet --target "$WORK/tools" cmake ninja >&2
  export PATH="$WORK/tools/bin:$PATH" PYTHONPATH="$WORK/tools${PYTHONPATH:+:$PYTHONPATH}"
fi
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)  # else cmake's default, make
# shellcheck disable=SC2086
cmake -S "$SRC" -B "$WORK/build" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF \
  ${CMAKE_ARGS:-} >&2
cmake --build "$WORK/build" --target llama-server -j "$(nproc)" >&2
mkdir -p "$DEST/bin"
cp "$WORK/build/bin/llama-server" "$DEST/bin/"
echo "$DEST/bin/llama-server"
