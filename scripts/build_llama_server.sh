#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` (parallel slots, continuous batching) from
# the llama.cpp sources vendored in the pinned llama-cpp-python sdist, so the
# server matches the library version. Used by scripts/bench_dream.py and the re-ranker's test; the
# sdist comes from the package registry (pip's cache after the first time). Nothing else is
# fetched: no prebuilt web UI (LLAMA_USE_PREBUILT_UI=OFF; Lyra talks to the server's API only).
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
"$PY" -m pip download --disable-pip-version-check --quiet --no-deps --no-binary llama-cpp-python \
  "llama-cpp-python==$VERSION" -d "$WORK" >&2
tar xzf "$WORK"/llama_cpp_python-"$VERSION".tar.gz -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
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
