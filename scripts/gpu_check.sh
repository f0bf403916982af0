#!/usr/bin/env bash
# The GPU path, kept runnable: on a machine with an NVIDIA GPU, build the CUDA variant of
# llama-cpp-python for that GPU only, check that every layer offloads, measure the same work with
# every local role on the CPU (n_gpu_layers = 0, no device visible) and on the GPU (-1), run the
# tests marked `models` with every local role on the GPU (pytest --gpu-layers -1), and print ONE
# table. Full logs go to $OUT_DIR (default gpu-check/).
#
#   scripts/gpu_check.sh                      CUDA toolkit (nvcc) and driver; PyPI reachable
#   scripts/gpu_check.sh --offline DIR        no network: everything from scripts/offline_bundle.sh's
#                                             folder (make the bundle for this box's Python)
#   scripts/gpu_check.sh --arch 90            build for compute capability 9.0 (default: native, the
#                                             GPU of this box; `nvidia-smi --query-gpu=compute_cap`
#                                             names it: 9.0 -> 90); also ARCH=90
#   scripts/gpu_check.sh --quick              smaller runs (a few minutes after the build)
#   scripts/gpu_check.sh --no-gpu             a dry run of the rest on a machine without one (both
#                                             columns on the CPU): checks the script, not the GPU
#
# The forced dream pass and recall run on the first conversation of LoCoMo's dev half when
# $REAL_DATA/locomo-dev.json exists (default ../shared/data, beside the repository: read there,
# never copied into it); without it those rows say so.
#
# A crash seen on the lent H200 (2026-11-26, Ubuntu 24.04, g++ 13.3, a CUDA build of llama.cpp):
# with numpy imported BEFORE llama_cpp, loading any model segfaulted in llama_model::print_info
# (libllama), GPU or not; llama_cpp first, or the system libstdc++ preloaded, and it loaded. Lyra
# imports numpy (the store) before it loads a model, so every process here would die. The script
# probes it after the build and, only where it crashes, runs everything with LD_PRELOAD of the
# libstdc++ libllama.so links against; the table says which.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv-cuda}"
OUT_DIR="$(realpath -m "${OUT_DIR:-gpu-check}")"
ARCH="${ARCH:-native}"
REAL_DATA="${REAL_DATA:-../shared/data}"
OFFLINE="" QUICK="${QUICK:-}" GPU=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --offline) OFFLINE="$(realpath "$2")"; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --no-gpu) GPU=""; shift ;;
    *) echo "usage: $0 [--offline DIR] [--arch N|native] [--quick] [--no-gpu]" >&2; exit 2 ;;
  esac
done
PY="$VENV/bin/python"
say() { echo "[gpu_check $(date -u +%H:%M:%S)] $*" >&2; }
mkdir -p "$OUT_DIR"

if [[ -n $GPU ]]; then
  command -v nvidia-smi >/dev/null || { echo "error: nvidia-smi not found: this needs an NVIDIA GPU and its driver" >&2; exit 1; }
  command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] \
    || { echo "error: nvcc not found: install the CUDA toolkit (or use docker/Dockerfile.cuda)" >&2; exit 1; }
  export PATH="$PATH:/usr/local/cuda/bin"
  say "GPU: $(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader | head -1); building for CUDA architecture $ARCH"
fi
if [[ -n $OFFLINE ]]; then
  [[ -f $OFFLINE/SHA256SUMS ]] || { echo "error: $OFFLINE is not a bundle: make one with scripts/offline_bundle.sh" >&2; exit 1; }
  # The same switches `make ... OFFLINE=` sets, for the pip runs of this script's own processes too
  # (the tests' model fetch reads the default models' wheels from the bundle).
  export PIP_NO_INDEX=1 PIP_FIND_LINKS="$OFFLINE" HF_HUB_OFFLINE=1
fi

# 1. The build: the CUDA variant from the start (GPU=1 exports its CMAKE_ARGS; it rebuilds if pip
#    reused a CPU wheel from its cache).
say "make setup into $VENV${OFFLINE:+ from $OFFLINE} (the CUDA build takes minutes to an hour)"
start=$SECONDS
if [[ -n $GPU ]]; then
  make setup GPU=1 CUDA_ARCH="$ARCH" VENV="$VENV" ${OFFLINE:+OFFLINE="$OFFLINE"} > "$OUT_DIR/setup.log" 2>&1 \
    || { tail -30 "$OUT_DIR/setup.log"; echo "error: make setup failed (see $OUT_DIR/setup.log)" >&2; exit 1; }
  "$PY" -c 'import llama_cpp, sys; sys.exit(not llama_cpp.llama_supports_gpu_offload())' \
    || { echo "error: llama-cpp-python in $VENV does not offload to the GPU" >&2; exit 1; }
else
  make setup VENV="$VENV" ${OFFLINE:+OFFLINE="$OFFLINE"} > "$OUT_DIR/setup.log" 2>&1 \
    || { tail -30 "$OUT_DIR/setup.log"; echo "error: make setup failed (see $OUT_DIR/setup.log)" >&2; exit 1; }
fi
SETUP_S=$((SECONDS - start))

# 2. The libstdc++ probe (see the top), and every layer of each default model on the GPU.
PRELOAD=""
probe="import numpy, llama_cpp; llama_cpp.Llama('models/all-MiniLM-L6-v2.F16.gguf', embedding=True, verbose=False)"
if ! env -u LD_PRELOAD "$PY" -c "$probe" > /dev/null 2>&1; then
  PRELOAD="$(ldd "$VENV"/lib/python3*/site-packages/llama_cpp/lib/libllama.so | awk '/libstdc\+\+/ {print $3}')"
  say "numpy before llama_cpp crashes at model load: everything runs with LD_PRELOAD=$PRELOAD"
  export LD_PRELOAD="$PRELOAD"
fi
if [[ -n $GPU ]]; then
  "$PY" - > "$OUT_DIR/offload.txt" <<'EOF'
import re, subprocess, sys
for name, extra in (("SmolLM2-135M-Instruct.Q4_1.gguf", ""), ("all-MiniLM-L6-v2.F16.gguf", ", embedding=True")):
    code = f"import llama_cpp; llama_cpp.Llama('models/{name}', n_gpu_layers=-1, verbose=True{extra})"
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stderr
    found = re.search(r"offloaded (\d+)/(\d+) layers to GPU", err)
    layers = re.findall(r"layer +\d+ assigned to device (\w+)", err)
    assert found and found[1] == found[2], f"{name}: {found and found[0]}\n{err[-3000:]}"
    assert layers and all(d.startswith("CUDA") for d in layers), f"{name}: layers on {sorted(set(layers))}"
    print(f"{name}: {found[0]}")
EOF
  say "offload: $(paste -sd';' "$OUT_DIR/offload.txt")"
fi

# Every llama_cpp.Llama load of the tests and measures, with its n_gpu_layers, logged (never changed) by a
# hook in this venv only: the table counts the loads that were not on the GPU (a test that loads a model
# around the fixtures' switch shows up here).
site="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cat > "$site/gpu_check_loads.py" <<'EOF'
"""scripts/gpu_check.sh only: log each llama_cpp.Llama load and its n_gpu_layers to $GPU_CHECK_LOG."""
import os
import sys

LOG = os.environ.get("GPU_CHECK_LOG")


class _Finder:
    def find_spec(self, name, path, target=None):
        if name != "llama_cpp.llama":
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            init = module.Llama.__init__

            def logged(self, model_path, *args, **kwargs):
                init(self, model_path, *args, **kwargs)
                with open(LOG, "a") as log:
                    log.write(f"{os.getpid()} {os.path.basename(str(model_path))} "
                              f"n_gpu_layers={kwargs.get('n_gpu_layers', 0)}\n")

            module.Llama.__init__ = logged

        spec.loader.exec_module = exec_module
        return spec


if LOG:
    sys.meta_path.insert(0, _Finder())
EOF
echo "import gpu_check_loads" > "$site/gpu_check_loads.pth"

# 3. The measures, CPU then GPU. At 0 no device is visible: the CUDA build would otherwise still send large
#    batches' matrix products to the GPU (llama.cpp's op offload).
LOCOMO="$(realpath -m "$REAL_DATA/locomo-dev.json")"
[[ -f $LOCOMO ]] || say "no $LOCOMO: the dream and recall rows are left empty"
if [[ -n $QUICK ]]; then IMPORT_ARGS=(--conversations 40 --messages 2000 --sample 500)
else IMPORT_ARGS=(--conversations 200 --messages 10000 --sample 2000); fi
: > "$OUT_DIR/loads-measures.txt"
for layers in 0 -1; do
  hide=(); [[ $layers != 0 ]] || hide=(CUDA_VISIBLE_DEVICES=)
  say "measures at n_gpu_layers=$layers"
  env "${hide[@]}" LYRA_MODELS__CHAT__N_GPU_LAYERS=$layers LYRA_MODELS__EMBED__N_GPU_LAYERS=$layers \
    PYTHONUNBUFFERED=1 "$PY" scripts/bench_import.py "${IMPORT_ARGS[@]}" > "$OUT_DIR/import$layers.txt" 2>&1 \
    || say "bench_import at $layers failed: see $OUT_DIR/import$layers.txt"
  env "${hide[@]}" GPU_CHECK_LOG="$OUT_DIR/loads-measures.txt" "$PY" - "$layers" "$LOCOMO" "${QUICK:-0}" \
    > "$OUT_DIR/measures$layers.json" 2> "$OUT_DIR/measures$layers.log" <<'EOF' || say "the measures at $layers failed: see $OUT_DIR/measures$layers.log"
"""Chat, embedding, recall and a forced dream pass with every local role at n_gpu_layers = argv[1]: JSON out."""
import llama_cpp  # noqa: F401  first: see the libstdc++ note in gpu_check.sh
import json, statistics, sys, tempfile, time
from pathlib import Path

from lyra_local.config import load_settings
from lyra_local.llm.base import GenerationOptions
from lyra_local.llm.registry import Models
from lyra_local.memory import Memory
from lyra_local.memory.recall import RecallQuery
from lyra_local.mind import Dreamer
from lyra_local.store import Store
from lyra_local.transfer.importer import import_source
from lyra_local.transfer.sources import open_source

layers, locomo, quick = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "1"
out = {}
with tempfile.TemporaryDirectory() as tmp:
    env = {"LYRA_DATA_DIR": f"{tmp}/data", "LYRA_MODELS_DIR": "models", "LYRA_DREAM__SESSION_IDLE_S": "0"}
    env.update({f"LYRA_MODELS__{role}__N_GPU_LAYERS": layers for role in ("CHAT", "EMBED")})
    settings = load_settings(None, env=env)
    models = Models(settings)
    # Chat: streamed replies of up to 128 tokens (llama.cpp streams one token per piece), greedy.
    ttft, rates = [], []
    for i in range(3 if quick else 8):
        ask = [{"role": "user", "content": f"Tell me a short story about a lighthouse keeper called Ada, part {i}."}]
        start, first, pieces = time.perf_counter(), None, 0
        for delta in models.chat.stream(ask, GenerationOptions(max_tokens=128, temperature=0.0)):
            if delta.text:
                first = first or time.perf_counter()
                pieces += 1
        end = time.perf_counter()
        ttft.append((first - start) * 1000)
        rates.append((pieces - 1) / (end - first))
    out["chat_tokens_s"] = statistics.median(rates)
    out["ttft_ms"] = statistics.median(ttft)
    # Embeddings: 64 chat-length messages in one call, and one per call (a query, a turn, a gist).
    texts = [f"message {i}: we talked about the garden, the weather and the trip to Lisbon in June" for i in range(64)]
    models.embed.embed(texts[:8])
    repeats = 3 if quick else 10
    start = time.perf_counter()
    for _ in range(repeats):
        models.embed.embed(texts)
    out["embed_batch_s"] = 64 * repeats / (time.perf_counter() - start)
    start = time.perf_counter()
    for text in texts:
        models.embed.embed([text])
    out["embed_one_s"] = 64 / (time.perf_counter() - start)
    # LoCoMo's first conversation: imported, asked its own questions (each embedded here, one per call), dreamt.
    if locomo.is_file():
        sys.path.insert(0, "scripts")
        from recall_sets import locomo as read_locomo  # the conversion the recall evaluation uses

        first = next(read_locomo(locomo))
        if quick:
            first.sessions = first.sessions[:4]
        (Path(tmp) / "in.jsonl").write_text(first.jsonl(), encoding="utf-8")
        store = Store(Path(tmp) / "data")
        report, _ = import_source(store, models.embed, open_source(Path(tmp) / "in.jsonl", "lyra"))
        memory = Memory(store, models.embed)
        latencies = []
        for question in first.questions[: 20 if quick else 100]:
            start = time.perf_counter()
            memory.recall(RecallQuery(question.text))
            latencies.append((time.perf_counter() - start) * 1000)
        latencies.sort()
        out["recall_p50_ms"] = statistics.median(latencies)
        out["recall_p95_ms"] = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
        out["recall_queries"], out["recall_turns"] = len(latencies), report.messages
        start = time.perf_counter()
        passed = Dreamer(store, models.summary, models.embed, settings).run_pass(force=True)
        elapsed = time.perf_counter() - start
        gists = sum(1 for s in store.sessions.list(limit=1000) if store.derived.gist(s.id) is not None)
        out.update(dream_status=passed.status, dream_sessions=gists, dream_s=elapsed,
                   dream_sessions_min=gists / elapsed * 60)
        store.close()
    models.close()
print(json.dumps(out))
EOF
done

# 4. The tests marked `models`, every local role on the GPU. Left out, by need: the browser tests where this
#    box has no chromium, and llama.cpp's own llama-server tests where no LLAMA_SERVER binary is given (that
#    would be a second CUDA build of llama.cpp). TESTS="tests/a.py tests/b.py" runs those files only.
files=() left=()
for f in ${TESTS:-tests/test_*.py}; do
  if ! command -v chromium >/dev/null && grep -q -E "^(from|import) playwright" "$f"; then left+=("$f"); else files+=("$f"); fi
done
deselect=()
[[ -n ${LLAMA_SERVER:-} ]] || deselect=(
  --deselect tests/test_rerank.py::test_llama_server_scores_pairs_as_the_in_process_model_does
  --deselect tests/test_role_checks.py::test_a_server_backed_embedder_is_checked_the_same_way)
real=()
if [[ -f $LOCOMO && -z ${TESTS:-} ]]; then files+=(tests/real_data/test_grounded_dream.py); real=(LYRA_REAL_DATA="$(dirname "$LOCOMO")"); fi
layers=-1; [[ -n $GPU ]] || layers=0
say "pytest -m models --gpu-layers $layers (${#files[@]} files; left out: ${left[*]:-none})"
: > "$OUT_DIR/loads-tests.txt"
set +e
env "${real[@]}" GPU_CHECK_LOG="$OUT_DIR/loads-tests.txt" PYTHONUNBUFFERED=1 timeout -s INT -k 15 "${TEST_TIMEOUT:-3600}" \
  "$PY" -m pytest -m models --gpu-layers "$layers" -p no:cacheprovider -q "${deselect[@]}" "${files[@]}" \
  > "$OUT_DIR/pytest.txt" 2>&1
TESTS_RC=$?
set -e
tail -3 "$OUT_DIR/pytest.txt" >&2

# 5. The table.
{
  echo "# GPU check, $(date -u +%Y-%m-%d), lyra_local $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo
  if [[ -n $GPU ]]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader | sed 's/^/device: /'
    echo "CUDA $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), built for architecture $ARCH"
  else
    echo "device: none (--no-gpu: both columns on the CPU, a dry run of the script)"
  fi
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs"
  echo "setup${OFFLINE:+ from the offline bundle $OFFLINE}: ${SETUP_S} s; libstdc++ preloaded: ${PRELOAD:-no (not needed)}"
  echo
  "$PY" - "$OUT_DIR" "$TESTS_RC" "$layers" <<'EOF'
import json, re, sys
from pathlib import Path

out, tests_rc, layers = Path(sys.argv[1]), sys.argv[2], sys.argv[3]


def measures(n: str) -> dict:
    try:
        return json.loads((out / f"measures{n}.json").read_text())
    except (OSError, ValueError):
        return {}


def imported(n: str) -> float | None:
    try:
        text = (out / f"import{n}.txt").read_text()
    except OSError:
        return None
    row = next((line for line in text.splitlines() if line.startswith("| `lyra import` end to end")), None)
    return float(row.split("|")[4].replace(",", "")) if row else None


cpu, gpu = measures("0"), measures("-1")
cpu["import_s"], gpu["import_s"] = imported("0"), imported("-1")
turns = cpu.get("recall_turns") or gpu.get("recall_turns")
locomo = f"LoCoMo conv 1, {turns} turns" if turns else "no LoCoMo data"
dream = f"{locomo}, {cpu.get('dream_sessions') or gpu.get('dream_sessions')} sessions" if turns else locomo
rows = [
    ("chat tokens/s, streamed through Lyra (median)", "chat_tokens_s", "{:,.1f}", True),
    ("time to first token, ms (median)", "ttft_ms", "{:,.0f}", False),
    ("embeddings/s, 64 messages in one call", "embed_batch_s", "{:,.0f}", True),
    ("embeddings/s, one text per call", "embed_one_s", "{:,.0f}", True),
    ("`lyra import` messages/s (bench_import.py)", "import_s", "{:,.0f}", True),
    (f"recall p95 ms, query embedded each time ({locomo})", "recall_p95_ms", "{:,.1f}", False),
    (f"forced dream pass, sessions/min ({dream})", "dream_sessions_min", "{:,.1f}", True),
]
print("| measure | CPU | GPU | GPU / CPU |")
print("|---|---|---|---|")
for label, key, fmt, higher in rows:
    a, b = cpu.get(key), gpu.get(key)
    gain = "" if not a or not b else f"{(b / a if higher else a / b):.2f}x"
    print(f"| {label} | {fmt.format(a) if a is not None else 'n/a'} | {fmt.format(b) if b is not None else 'n/a'} | {gain} |")
measured = (out / "loads-measures.txt").read_text().splitlines() if (out / "loads-measures.txt").exists() else []
print(f"| model loads of the measures | {sum(line.endswith('n_gpu_layers=0') for line in measured)} at 0 | "
      f"{sum(line.endswith('n_gpu_layers=-1') for line in measured)} at -1 | "
      f"other: {sum(not line.endswith(('n_gpu_layers=0', 'n_gpu_layers=-1')) for line in measured)} |")
summary = (out / "pytest.txt").read_text().strip().splitlines()
loads = (out / "loads-tests.txt").read_text().splitlines() if (out / "loads-tests.txt").exists() else []
off = sum(1 for line in loads if not line.endswith(f"n_gpu_layers={layers}"))
last = summary[-1] if summary else "no output"
print(f"| tests marked `models`, --gpu-layers {layers} (rc {tests_rc}) | | {last.strip('= ')} | |")
print(f"| model loads in those tests: at n_gpu_layers={layers} / other | | {len(loads) - off} / {off} | |")
EOF
} | tee "$OUT_DIR/summary.md"
exit "$TESTS_RC"
