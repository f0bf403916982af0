#!/usr/bin/env bash
# The GPU check (scripts/gpu_check.sh's) on an NVIDIA machine with NO network, from a bundle
# packed here: the llama-cpp-python sdist (it vendors llama.cpp), the pinned py3.12 wheels,
# the default models and the committed source tree. The bundle goes across in parts of under
# 64 MiB (what one call of a lent GPU machine carries), each part a folder .gpu-bundle/pN.
#
#   scripts/gpu_offline.sh pack           here, with PyPI and `make setup`'s models: fills
#                                         .gpu-bundle/ (git-ignored via .git/info/exclude)
#   scripts/gpu_offline.sh build          there, with .gpu-bundle/p1: a venv and the CUDA build
#                                         of llama-cpp-python (arch 90, all cores) started in
#                                         the background (setsid), log in $WORK/build.log
#   scripts/gpu_offline.sh stage N        there, with .gpu-bundle/pN: keep part N in $WORK
#   scripts/gpu_offline.sh check          there, with the last part: wait for the build,
#                                         install, check that every layer offloads, run the
#                                         quick benchmarks at n_gpu_layers 0 and -1 side by
#                                         side, then `pytest -m models` with every model on
#                                         the GPU until CALL_BUDGET seconds are spent
#   (install, offload, bench, tests: one step of check alone)
#
# Calls back to back share $WORK (default /tmp/gpu-offline) on the warm machine. Logs and a
# summary go to $OUT (default $WORK/out). Why the tests see the GPU: their fixtures read no
# LYRA_* from the environment (on purpose: the suite is hermetic), so a .pth hook in the venv
# sets n_gpu_layers on every llama_cpp.Llama when GPU_CHECK_N_GPU_LAYERS is set, in every
# process (pytest, `python -m lyra_local`, `python -m llama_cpp.server`), and logs each load.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
VERSION="${LLAMA_CPP_VERSION:-$(sed -n 's/^LLAMA_CPP_VERSION := //p' Makefile)}"
BUNDLE="$REPO/.gpu-bundle"
WORK="${GPU_WORK:-/tmp/gpu-offline}"
OUT="${OUT:-$WORK/out}"
VPY="$WORK/venv/bin/python"
PART_BYTES="${PART_BYTES:-57000000}"   # a part plus the ~3 MB working tree stays under 64 MiB
CUDA_ARCH="${CUDA_ARCH:-90}"
JOBS="${JOBS:-$(nproc)}"
say() { echo "[gpu_offline $(date -u +%H:%M:%S)] $*" >&2; }

pack() {
  local py="${PYTHON:-.venv/bin/python}" tmp wheels
  [[ -f models/manifest.json ]] || { echo "error: models/ is not fetched: run make setup first" >&2; exit 1; }
  git diff --quiet HEAD -- lyra_local tests scripts pyproject.toml || say "note: uncommitted changes are NOT packed (HEAD is)"
  # Untracked files travel with each call: the bundle must be ignored, or the first call carries it all.
  local exclude; exclude="$(git rev-parse --git-path info/exclude)"
  mkdir -p "$(dirname "$exclude")"; grep -qxF /.gpu-bundle/ "$exclude" 2>/dev/null || echo /.gpu-bundle/ >> "$exclude"
  rm -rf "$BUNDLE"; mkdir -p "$BUNDLE/p1/build-wheels"
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' RETURN
  # The sdist without what is never compiled: its git pack, vocab test models, docs, media,
  # benches, the web UI assets and the example scripts (76 MB -> ~6 MB).
  python3 -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$tmp"
  tar xzf "$tmp/llama_cpp_python-$VERSION.tar.gz" -C "$tmp"
  (cd "$tmp/llama_cpp_python-$VERSION" && rm -rf .git examples vendor/llama.cpp/{models,docs,media,benches,tools/ui} \
     vendor/llama.cpp/tools/mtmd/test-*.mp4)
  tar cf - -C "$tmp" "llama_cpp_python-$VERSION" | xz -6 -T0 > "$BUNDLE/p1/llama_cpp_python-$VERSION.tar.xz"
  git archive --format=tar.gz -o "$BUNDLE/p1/src.tar.gz" HEAD
  # The grounded-dream tests (tests/real_data/) read LoCoMo's dev half from the folder LYRA_REAL_DATA names
  # (here ../shared/data, 1 MB): never in the repository.
  if [[ -f ../shared/data/locomo-dev.json ]]; then
    mkdir -p "$BUNDLE/p1/shared-data" && cp ../shared/data/locomo-dev.json ../shared/data/locomo-LICENSE.txt "$BUNDLE/p1/shared-data/"
  fi
  git rev-parse HEAD > "$BUNDLE/p1/src.commit"
  # What the build needs before the rest arrives: pip itself (run from its wheel), the build backend.
  local plat=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
              --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
              --platform manylinux1_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_31_x86_64
              --platform manylinux_2_34_x86_64 --platform manylinux_2_35_x86_64)
  python3 -m pip download -q --no-deps "${plat[@]}" -d "$BUNDLE/p1/build-wheels" pip scikit-build-core setuptools \
    "$(grep -E '^packaging==' constraints.txt | cut -d' ' -f1)" "$(grep -E '^pathspec==' constraints.txt | cut -d' ' -f1)"
  # Every pinned runtime and test dependency (constraints.txt), py3.12 manylinux, except those the
  # GPU box never runs: the linters and the browser (no Chromium there: the browser tests are left out).
  wheels="$tmp/rest/wheels"; mkdir -p "$wheels" "$tmp/rest/models"
  grep -v '^#' constraints.txt | grep -v -E "sys_platform == '(win32|emscripten)'" | awk 'NF {print $1}' \
    | grep -v -E '^(llama-cpp-python|playwright|greenlet|ruff|mypy|librt|ast-serialize|packaging|pathspec)==' > "$tmp/reqs.txt"
  python3 -m pip download -q --no-deps "${plat[@]}" -d "$wheels" -r "$tmp/reqs.txt"
  # The models: the chat GGUF, the embedding model's sources (its GGUF is converted there, as
  # `lyra models fetch` does, and checked against the manifest), the manifest.
  cp models/manifest.json models/*.gguf "$tmp/rest/models/"
  rm -f "$tmp/rest/models/all-MiniLM-L6-v2.F16.gguf"
  cp -r models/sources "$tmp/rest/models/"
  # One tar of the rest, cut in order: p1 fills up with its head, p2... take the remainder.
  tar cf "$tmp/rest.tar" -C "$tmp/rest" wheels models
  local first=$((PART_BYTES - $(du -sb "$BUNDLE/p1" | cut -f1))) n=2 f
  head -c "$first" "$tmp/rest.tar" > "$BUNDLE/p1/rest.tar.0"
  tail -c +"$((first + 1))" "$tmp/rest.tar" | split -b "$PART_BYTES" -a 1 --numeric-suffixes=1 - "$tmp/rest.tar."
  for f in "$tmp"/rest.tar.[1-9]; do mkdir -p "$BUNDLE/p$n"; mv "$f" "$BUNDLE/p$n/"; n=$((n + 1)); done
  (cd "$BUNDLE" && find . -type f ! -name SHA256SUMS -exec sha256sum {} + | sort -k2 > SHA256SUMS && cp SHA256SUMS p1/)
  du -sh "$BUNDLE"/p*; say "tree: $(git ls-files | xargs du -cb | tail -1 | cut -f1) bytes; parts: p1..p$((n - 1))"
}

stage() {  # stage N: keep what call N carried (the next call may carry another part over it)
  local part="p$1"; mkdir -p "$WORK/parts"
  [[ -d "$BUNDLE/$part" ]] || { echo "error: $BUNDLE/$part was not carried" >&2; exit 1; }
  cp -r "$BUNDLE/$part" "$WORK/parts/"
  (cd "$WORK/parts" && grep " ./$part/" p1/SHA256SUMS 2>/dev/null | sed "s| ./| |" | sha256sum -c --quiet) \
    || { echo "error: $part arrived damaged (or p1 not staged first)" >&2; exit 1; }
  say "staged $part: $(du -sh "$WORK/parts/$part" | cut -f1)"
  if [[ -f "$WORK/build.log" ]]; then
    say "build: step $(grep -o '^ *\[[0-9]*/[0-9]*\]' "$WORK/build.log" | tail -1 | xargs); rc $(cat "$WORK/build.rc" 2>/dev/null || echo running)"
    grep -E -m5 "error:|FAILED:|CMake Error" "$WORK/build.log" | cut -c1-400 || true
  fi
}

build() {
  stage 1
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  local base="${PY_BASE:-/opt/torch/.venv/bin/python3}"; [[ -x "$base" ]] || base=python3
  export PATH="$PATH:$(dirname "$base"):/usr/local/cuda/bin"
  say "python $("$base" -V 2>&1), cmake $(cmake --version | head -1), ninja $(ninja --version), nvcc $(nvcc --version | tail -2 | head -1)"
  rm -rf "$WORK/venv" "$WORK/src" "$WORK/llama_cpp_python-$VERSION"
  "$base" -m venv --without-pip "$WORK/venv"
  local pipwhl; pipwhl="$(ls "$WORK"/parts/p1/build-wheels/pip-*.whl)"
  "$VPY" "$pipwhl/pip" install -q --no-index --no-deps "$WORK"/parts/p1/build-wheels/*.whl
  tar xJf "$WORK/parts/p1/llama_cpp_python-$VERSION.tar.xz" -C "$WORK"
  mkdir -p "$WORK/src" && tar xzf "$WORK/parts/p1/src.tar.gz" -C "$WORK/src"
  rm -f "$WORK/build.rc"
  local cmake_args; cmake_args="$(cuda_cmake_args)"
  say "CMAKE_ARGS=$cmake_args"
  if [[ -n "${GPU_CHECK_PREBUILT:-}" ]]; then  # a dry run of the rest on a machine without CUDA: a CPU wheel
    mkdir -p "$WORK/wheelhouse" && cp "$GPU_CHECK_PREBUILT" "$WORK/wheelhouse/" && echo "prebuilt" > "$WORK/build.log"
    echo 0 > "$WORK/build.rc"; return
  fi
  # shellcheck disable=SC2016
  setsid nohup bash -c 'cd "$1" && time env CMAKE_ARGS="$2" \
      CMAKE_BUILD_PARALLEL_LEVEL="$3" MAKEFLAGS="-j$3" "$4" -m pip wheel -v --no-index --no-deps \
      --no-build-isolation -w "$5/wheelhouse" .; echo $? > "$5/build.rc"' _ \
    "$WORK/llama_cpp_python-$VERSION" "$cmake_args" "$JOBS" "$VPY" "$WORK" > "$WORK/build.log" 2>&1 < /dev/null &
  say "build started in the background (pid $!)"
}

cuda_cmake_args() {
  # The CUDA variant for one arch. A configure first (seconds), to fail here and not in the
  # background: an image whose toolkit is the pip wheels' may lack cuBLAS and the driver's
  # libcuda.so; then take cuBLAS from the wheels beside PyTorch and libcuda.so.1 from the driver
  # (CMake names one missing library at a time: up to three tries).
  local args="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH" src="$WORK/llama_cpp_python-$VERSION"
  local extra="$WORK/cuda-extra" roots=(${SHIM_ROOTS:-/usr/local /opt /usr/lib}) f name try
  rm -rf "$extra" "$WORK/probe" "$WORK/env.sh"; mkdir -p "$extra/lib" "$extra/include"
  for try in 1 2 3; do
    # shellcheck disable=SC2086
    if cmake -S "$src" -B "$WORK/probe" -G Ninja $args > "$WORK/probe.log" 2>&1; then echo "$args"; return; fi
    grep -A4 "CMake Error" "$WORK/probe.log" | head -12 >&2
    rm -rf "$WORK/probe"
    if grep -q "CUDA::cublas" "$WORK/probe.log" && [[ "$args" != *CUDA_cublas_LIBRARY* ]]; then
      for name in cublas cublasLt; do
        f="$(find "${roots[@]}" -name "lib$name.so.*" -type f 2>/dev/null | sort | tail -1)"
        [[ -n "$f" ]] || { echo "error: no lib$name.so.* on this machine" >&2; exit 1; }
        ln -sf "$f" "$extra/lib/lib$name.so"
        ln -sf "$f" "$extra/lib/$(basename "$f" | sed -E 's/(\.so\.[0-9]+).*/\1/')"
        args+=" -DCUDA_${name}_LIBRARY=$extra/lib/lib$name.so"
      done
      f="$(find "${roots[@]}" -name cublas_v2.h 2>/dev/null | head -1)"
      [[ -n "$f" ]] || { echo "error: no cublas_v2.h on this machine" >&2; exit 1; }
      ln -sf "$(dirname "$f")"/cublas*.h "$extra/include/"
      args+=" -DCMAKE_CUDA_FLAGS=-I$extra/include -DCMAKE_CXX_FLAGS=-I$extra/include"
    elif grep -q "CUDA::cuda_driver" "$WORK/probe.log" && [[ "$args" != *CUDA_cuda_driver_LIBRARY* ]]; then
      f="$( (ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}'; find "${roots[@]}" -name 'libcuda.so.1' 2>/dev/null) | head -1)"
      [[ -n "$f" ]] || { echo "error: no libcuda.so.1 (the driver) on this machine" >&2; exit 1; }
      ln -sf "$f" "$extra/lib/libcuda.so"
      args+=" -DCUDA_cuda_driver_LIBRARY=$extra/lib/libcuda.so"
    else
      break
    fi
    echo "export LD_LIBRARY_PATH=$extra/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" > "$WORK/env.sh"
    say "retrying the configure with $(ls "$extra/lib" "$extra/include" | xargs)"
  done
  echo "error: the CUDA configure failed (see $WORK/probe.log)" >&2; exit 1
}

wait_build() {
  local limit="${BUILD_WAIT:-480}" t=0
  while [[ ! -f "$WORK/build.rc" && $t -lt $limit ]]; do sleep 5; t=$((t + 5)); done
  mkdir -p "$OUT"; gzip -c "$WORK/build.log" > "$OUT/build.log.gz"
  grep -E "^(real|user|sys)" "$WORK/build.log" || true
  [[ -f "$WORK/build.rc" ]] || { tail -5 "$WORK/build.log"; echo "error: the build still runs after ${limit}s" >&2; exit 1; }
  [[ "$(cat "$WORK/build.rc")" == 0 ]] || { tail -40 "$WORK/build.log"; echo "error: the CUDA build failed" >&2; exit 1; }
}

install() {
  local n
  for n in $(seq 2 9); do
    if [[ -d "$BUNDLE/p$n" && ! -d "$WORK/parts/p$n" ]]; then stage "$n"; fi
  done
  rm -rf "$WORK/rest" && mkdir -p "$WORK/rest"
  cat "$WORK"/parts/p*/rest.tar.* | tar xf - -C "$WORK/rest"
  "$VPY" -m pip install -q --no-index --no-deps --no-compile "$WORK"/rest/wheels/*.whl "$WORK"/wheelhouse/llama_cpp_python-*.whl
  "$VPY" -m pip install -q --no-index --no-deps --no-build-isolation -e "$WORK/src"
  "$VPY" -m pip check || say "pip check: see above (the linters and playwright are left out on purpose)"
  mkdir -p "$WORK/src/models" && cp -r "$WORK"/rest/models/* "$WORK/src/models/"
  if [[ -d "$WORK/parts/p1/shared-data" ]]; then mkdir -p "$WORK/shared/data" && cp "$WORK"/parts/p1/shared-data/* "$WORK/shared/data/"; fi
  (cd "$WORK/src" && "$VPY" - <<'EOF'
import json
from pathlib import Path
from lyra_local.modelfiles.bert_gguf import convert_bert
from lyra_local.modelfiles.fetch import sha256_file
models = Path("models")
manifest = json.loads((models / "manifest.json").read_text())
embed = models / "all-MiniLM-L6-v2.F16.gguf"
convert_bert(models / "sources" / "all-MiniLM-L6-v2", embed, name="all-MiniLM-L6-v2")
for name, entry in manifest.items():
    assert sha256_file(models / name) == entry["sha256"], f"{name}: not the file the manifest names"
print("models verified against models/manifest.json:", ", ".join(manifest))
EOF
  )
  local site; site="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  cat > "$site/gpu_check_offload.py" <<'EOF'
"""GPU check only: set n_gpu_layers on every llama_cpp.Llama when GPU_CHECK_N_GPU_LAYERS is set."""
import importlib.abc
import importlib.machinery
import os
import sys

LAYERS = os.environ.get("GPU_CHECK_N_GPU_LAYERS")
LOG = os.environ.get("GPU_CHECK_LOG")


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "llama_cpp.llama":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            init = module.Llama.__init__

            def __init__(self, model_path, *args, **kwargs):
                kwargs["n_gpu_layers"] = int(LAYERS)
                init(self, model_path, *args, **kwargs)
                if LOG:
                    with open(LOG, "a") as log:
                        log.write(f"{os.getpid()} {os.path.basename(str(model_path))} n_gpu_layers={LAYERS} "
                                  f"embedding={kwargs.get('embedding', False)}\n")

            module.Llama.__init__ = __init__

        spec.loader.exec_module = exec_module
        return spec


if LAYERS is not None:
    sys.meta_path.insert(0, _Hook())
EOF
  echo "import gpu_check_offload" > "$site/gpu_check_offload.pth"
}

offload_check() {  # every layer of each default model on the GPU, as llama.cpp reports it
  (cd "$WORK/src" && "$VPY" - <<'EOF'
import re, subprocess, sys
import llama_cpp
assert llama_cpp.llama_supports_gpu_offload(), "this llama-cpp-python build does not offload"
for name, extra in (("SmolLM2-135M-Instruct.Q4_1.gguf", ""), ("all-MiniLM-L6-v2.F16.gguf", ", embedding=True")):
    code = f"import llama_cpp; llama_cpp.Llama('models/{name}', n_gpu_layers=-1, verbose=True{extra})"
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stderr
    found = re.search(r"offloaded (\d+)/(\d+) layers to GPU", err)
    devices = sorted(set(re.findall(r"using device (\S+) \(([^)]*)\)", err)))
    layers = re.findall(r"layer +\d+ assigned to device (\w+)", err)
    assert found and found[1] == found[2], f"{name}: {found and found[0]}\n{err[-3000:]}"
    assert layers and all(d.startswith("CUDA") for d in layers), f"{name}: layers on {sorted(set(layers))}"
    print(f"offload: {name}: {found[0]}, {len(layers)} layers on {sorted(set(layers))}; {devices}")
EOF
  ) | tee "$OUT/offload.txt"
  # Seen 2026-11-26 on the lent H200 (Ubuntu 24.04 image, g++ 13.3): with numpy imported before
  # llama_cpp, loading any model segfaulted in llama_model::print_info (libllama), GPU or not;
  # llama_cpp first, or the system libstdc++ preloaded, and it loads. Recorded on every run.
  local code="import numpy, llama_cpp; llama_cpp.Llama('models/all-MiniLM-L6-v2.F16.gguf', embedding=True, verbose=False)"
  if (cd "$WORK/src" && env -u LD_PRELOAD "$VPY" -c "$code" > /dev/null 2>&1); then
    echo "numpy before llama_cpp: loads" | tee -a "$OUT/offload.txt"
  else
    echo "numpy before llama_cpp: CRASHES (rc $?); the tests and benchmarks run with LD_PRELOAD=$(libstdcxx)" \
      | tee -a "$OUT/offload.txt"
  fi
}

libstdcxx() {  # the libstdc++ the build linked, loaded first (see offload_check); GPU_CHECK_PRELOAD=0: none
  [[ "${GPU_CHECK_PRELOAD:-1}" == 0 ]] || ldd "$WORK"/venv/lib/python3*/site-packages/llama_cpp/lib/libllama.so \
    | awk '/libstdc\+\+/ {print $3}'
}

run_tests() {
  cd "$WORK/src"
  # Left out, by name: the browser tests (no Chromium there); the two of llama.cpp's own
  # llama-server (that binary would be a second CUDA build of llama.cpp); the fetch from PyPI
  # (no network there).
  # The files in order, the two slowest (minutes of generation on a CPU) last, so that a run
  # cut short by the deadline has run the most tests.
  local browser files=() f
  browser="$(grep -l -E "^(from|import) playwright" tests/*.py | xargs)"
  for f in tests/test_*.py; do
    [[ " $browser tests/test_dream_real.py tests/test_forget_real.py " == *" $f "* ]] || files+=("$f")
  done
  files+=(tests/test_forget_real.py tests/test_dream_real.py)
  local real_data=()
  if [[ -f "$WORK/shared/data/locomo-dev.json" ]]; then
    files+=(tests/real_data/test_grounded_dream.py); real_data=(LYRA_REAL_DATA="$WORK/shared/data")
  fi
  [[ -z "${TEST_SELECT:-}" ]] || read -ra files <<< "$TEST_SELECT"
  : > "$OUT/loads.txt"
  set +e
  # A call has a deadline (CALL_BUDGET seconds from the script's start): pytest is interrupted
  # (SIGINT: it still prints what ran) in time to hand the logs back.
  local limit="${TEST_TIMEOUT:-300}"
  [[ -n "${CALL_BUDGET:-}" ]] && limit=$((CALL_BUDGET - SECONDS - 20))
  [[ $limit -ge 30 ]] || { echo "no time left for the tests (${limit}s)" | tee "$OUT/pytest.txt"; return 1; }
  say "pytest -m models, at most ${limit}s"
  env "${real_data[@]}" LD_PRELOAD="$(libstdcxx)" GPU_CHECK_N_GPU_LAYERS=-1 GPU_CHECK_LOG="$OUT/loads.txt" PYTHONUNBUFFERED=1 \
    timeout -s INT -k 15 "$limit" \
    "$VPY" -m pytest -m models -p no:cacheprovider -q "${files[@]}" \
    --deselect tests/test_rerank.py::test_llama_server_scores_pairs_as_the_in_process_model_does \
    --deselect tests/test_role_checks.py::test_a_server_backed_embedder_is_checked_the_same_way \
    --deselect tests/test_fetch.py::test_a_corrupted_model_is_detected_and_fetched_again \
    --durations=10 2>&1 | tee "$OUT/pytest.txt" | tail -40
  local rc=${PIPESTATUS[0]}
  set -e
  echo "pytest rc=$rc; left out (browser): $browser" | tee -a "$OUT/pytest.txt"
  echo "Llama loads in the tests: $(wc -l < "$OUT/loads.txt") (every one n_gpu_layers=-1: $(grep -vc 'n_gpu_layers=-1' "$OUT/loads.txt") not)" \
    | tee -a "$OUT/pytest.txt"
  cd "$REPO"
  return "$rc"
}

bench() {
  cd "$WORK/src"
  mkdir -p "$OUT/bench"
  local layers name hide
  for layers in 0 -1; do
    for name in models recall import; do
      local args=()
      case $name in
        models) args=(scripts/bench_models.py --quick) ;;
        recall) args=(scripts/bench_recall.py --sizes 10000 --queries 20) ;;
        import) args=(scripts/bench_import.py --conversations 40 --messages 2000 --sample 500) ;;
      esac
      if [[ -n "${CALL_BUDGET:-}" && $((CALL_BUDGET - SECONDS)) -lt 150 ]]; then
        say "skipped $name at $layers: the call's time is nearly spent" 2>&1 | tee "$OUT/bench/$name$layers.txt"; continue
      fi
      say "$name, n_gpu_layers=$layers"
      # At 0 the CUDA build would still send large batches' matrix products to the GPU (llama.cpp's
      # op offload): no device visible makes the CPU run all CPU.
      hide=(); [[ $layers != 0 ]] || hide=(CUDA_VISIBLE_DEVICES=)
      env "${hide[@]}" LD_PRELOAD="$(libstdcxx)" LYRA_MODELS__CHAT__N_GPU_LAYERS=$layers LYRA_MODELS__EMBED__N_GPU_LAYERS=$layers \
        GPU_CHECK_N_GPU_LAYERS=$layers PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-120}" \
        "$VPY" "${args[@]}" > "$OUT/bench/$name$layers.txt" 2>&1 || say "$name at $layers failed: see $OUT/bench/$name$layers.txt"
    done
  done
  {
    echo "# GPU check (offline), $(date -u +%Y-%m-%d), source $(cat "$WORK/parts/p1/src.commit")"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/device: /' || true
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; CUDA $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
    for name in models recall import; do
      echo; "$VPY" scripts/side_by_side.py "$OUT/bench/${name}0.txt" "$OUT/bench/${name}-1.txt" --labels CPU GPU || true
    done
  } | tee "$OUT/summary.md"
  tar czf "$OUT/bench.tar.gz" -C "$OUT" bench && rm -rf "$OUT/bench"
  cd "$REPO"
}

[[ -f "$WORK/env.sh" ]] && . "$WORK/env.sh"
case "${1:-}" in
  pack) pack ;;
  build) build ;;
  stage) stage "$2" ;;
  check) mkdir -p "$OUT"; wait_build; install; offload_check; bench; run_tests ;;
  install) mkdir -p "$OUT"; wait_build; install ;;
  offload) mkdir -p "$OUT"; offload_check ;;
  tests) mkdir -p "$OUT"; run_tests ;;
  bench) mkdir -p "$OUT"; bench ;;
  *) echo "usage: $0 pack | build | stage N | check (= install, offload, bench, tests)" >&2; exit 2 ;;
esac
