#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build the CUDA variant of llama-cpp-python, check that it
# offloads, then run the model, recall and import benchmarks twice — on the CPU
# (n_gpu_layers = 0) and with every layer on the GPU (-1) — and print each table's CPU and
# GPU figures side by side, with the device and driver. Full logs go to $OUT_DIR.
#   scripts/gpu_check.sh                 (CUDA toolkit with nvcc, and the NVIDIA driver)
#   QUICK=1 scripts/gpu_check.sh         (smaller runs, a few minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv-cuda}"
OUT_DIR="${OUT_DIR:-gpu-check}"
PY="$VENV/bin/python"

command -v nvidia-smi >/dev/null || { echo "error: nvidia-smi not found: this needs an NVIDIA GPU and its driver" >&2; exit 1; }
command -v nvcc >/dev/null || { echo "error: nvcc not found: install the CUDA toolkit (or use docker/Dockerfile.cuda)" >&2; exit 1; }
mkdir -p "$OUT_DIR"

# The CUDA build from the start (CMAKE_ARGS); GPU=1 rebuilds it if pip reused a CPU wheel.
CMAKE_ARGS="-DGGML_CUDA=on" make setup GPU=1 VENV="$VENV"
"$PY" -c 'import llama_cpp, sys; sys.exit(not llama_cpp.llama_supports_gpu_offload())' \
  || { echo "error: llama-cpp-python in $VENV does not offload to the GPU" >&2; exit 1; }

if [[ -n "${QUICK:-}" ]]; then
  MODELS_ARGS=(--quick); RECALL_ARGS=(--sizes 10000 --queries 20); IMPORT_ARGS=(--conversations 40 --messages 2000 --sample 500)
else
  MODELS_ARGS=(); RECALL_ARGS=(--sizes 100000); IMPORT_ARGS=(--conversations 200 --messages 10000 --sample 2000)
fi

run() {  # run NAME LAYERS SCRIPT ARGS...: one benchmark with every local role at LAYERS
  local name=$1 layers=$2; shift 2
  echo "== $name, n_gpu_layers=$layers" >&2
  LYRA_MODELS__CHAT__N_GPU_LAYERS=$layers LYRA_MODELS__EMBED__N_GPU_LAYERS=$layers \
    PYTHONUNBUFFERED=1 "$PY" "$@" 2>&1 | tee "$OUT_DIR/$name-$layers.txt" >&2
}
for layers in 0 -1; do
  run models "$layers" scripts/bench_models.py "${MODELS_ARGS[@]}"
  run recall "$layers" scripts/bench_recall.py "${RECALL_ARGS[@]}"
  run import "$layers" scripts/bench_import.py "${IMPORT_ARGS[@]}"
done

echo
echo "# GPU check, $(date -u +%Y-%m-%d)"
echo
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/device: /'
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; CUDA $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
for name in models recall import; do
  "$PY" scripts/side_by_side.py "$OUT_DIR/$name-0.txt" "$OUT_DIR/$name--1.txt" --labels CPU GPU
done
