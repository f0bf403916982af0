#!/usr/bin/env bash
# Build docker/Dockerfile and prove the image by running it (`make docker-check`; not part of `make test`).
#
# 1. The engine: Docker when its daemon answers, else Podman (Debian's podman with runc; on a machine whose
#    cgroups or ulimits crun refuses, runc and an empty default_ulimits in containers.conf: see
#    podman_conf below). ENGINE=docker|podman picks one.
# 2. The base image: the Dockerfile's python:3.11-slim-bookworm when it can be pulled; else one built from
#    Debian's own packages (debootstrap + python3, the host's trust store and apt settings), imported as
#    localhost/lyra-python-base:bookworm and passed as the PYTHON_IMAGE build argument. Made once, reused.
# 3. The build: the engine's layer cache makes a second run reuse every layer.
# 4. The running container, checked by scripts/docker_probe.py: /health, the token, a streamed chat turn
#    with the real default model, an import, a forced dream pass, the non-root user, loopback only, and
#    the data kept across stop, rm and start on the same volume.
# 5. The compose file's `cpu` profile, brought up with `docker compose` or podman-compose, until healthy.
#
# Writes docker-check/summary.json (engine, image size, build and start times). Exit 0 when all pass.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/docker-check
PY=${PY:-$ROOT/.venv/bin/python}
IMAGE=${IMAGE:-localhost/lyra-local:cpu}
BASE=localhost/lyra-python-base:bookworm
UPSTREAM_BASE=python:3.11-slim-bookworm
mkdir -p "$OUT"
say() { printf '== %s\n' "$*"; }
need() { command -v "$1" >/dev/null 2>&1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

pick_engine() {
  if [ -n "${ENGINE:-}" ]; then echo "$ENGINE"; return; fi
  if need docker && docker info >/dev/null 2>&1; then echo docker; return; fi
  echo podman
}

podman_install() {
  # Debian's podman, with runc: crun 1.8 cannot set the rlimits this kind of machine's sandbox forbids.
  need podman && need runc && return
  say "installing podman (Debian's packages)"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    podman runc slirp4netns fuse-overlayfs uidmap netavark aardvark-dns debootstrap
}

podman_conf() {
  # A container of image $1 that cannot start is told why; the one cause known here is fixed.
  local why
  if ! why=$(podman run --rm "$1" true 2>&1); then
    case "$why" in *rlimit*) ;; *) printf '%s\n' "$why"; say "FAIL: podman cannot run a container"; exit 1 ;; esac
    as_root mkdir -p /etc/containers
    if ! grep -qs 'default_ulimits' /etc/containers/containers.conf; then
      say "containers.conf: runc, and no default ulimits (this machine refuses to set them)"
      printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' |
        as_root tee -a /etc/containers/containers.conf >/dev/null
    fi
    podman run --rm "$1" true || { say "FAIL: podman cannot run a container"; exit 1; }
  fi
}

debian_base() {
  # A python3 image from Debian's own packages, when the upstream Python image cannot be pulled.
  local root
  root=$(mktemp -d)
  need debootstrap || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
  say "building $BASE with debootstrap (bookworm, python3)"
  as_root debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$root" \
    "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$OUT/debootstrap.log"
  # the host's trust store (pip inside the build reaches PyPI as the host does) and its apt settings
  as_root cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  for conf in /etc/apt/apt.conf.d/99*; do [ -f "$conf" ] && as_root cp "$conf" "$root/etc/apt/apt.conf.d/"; done
  as_root rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/*
  as_root tar -C "$root" -c . | "$ENGINE" import --change 'CMD ["python3"]' - "$BASE" >/dev/null
  as_root rm -rf "$root"
}

ENGINE=$(pick_engine)
say "engine: $ENGINE ($("$ENGINE" --version))"
[ "$ENGINE" = podman ] && podman_install

PYTHON_IMAGE=${PYTHON_IMAGE:-}
if [ -z "$PYTHON_IMAGE" ]; then
  if "$ENGINE" image exists "$BASE" 2>/dev/null || "$ENGINE" image inspect "$BASE" >/dev/null 2>&1; then
    PYTHON_IMAGE=$BASE
  elif timeout 120 "$ENGINE" pull -q "$UPSTREAM_BASE" >/dev/null 2>&1; then
    PYTHON_IMAGE=$UPSTREAM_BASE
  else
    say "$UPSTREAM_BASE cannot be pulled here"
    debian_base
    PYTHON_IMAGE=$BASE
  fi
fi
[ "$ENGINE" = podman ] && podman_conf "$PYTHON_IMAGE"
say "base image: $PYTHON_IMAGE"

say "building $IMAGE from docker/Dockerfile (log: docker-check/build.log)"
started=$(date +%s)
if ! "$ENGINE" build -f docker/Dockerfile --build-arg "PYTHON_IMAGE=$PYTHON_IMAGE" -t "$IMAGE" . \
    >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; say "FAIL: the build"; exit 1
fi
build_s=$(( $(date +%s) - started ))
size=$("$ENGINE" image inspect -f '{{.Size}}' "$IMAGE")
say "built in ${build_s}s; image $(( size / 1024 / 1024 )) MiB"

say "running the image and checking it"
"$PY" scripts/docker_probe.py --engine "$ENGINE" --image "$IMAGE" --json "$OUT/probe.json"

say "the compose file's cpu profile"
if [ "$ENGINE" = docker ]; then
  compose=(docker compose)
else
  test -x .venv-tools/bin/podman-compose || {
    test -x .venv-tools/bin/python || python3 -m venv .venv-tools
    .venv-tools/bin/pip install --disable-pip-version-check -q 'podman-compose==1.6.0'
  }
  compose=(.venv-tools/bin/podman-compose)
fi
env_file=$(mktemp)
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'LYRA_API_TOKEN=%s\nLYRA_PORT=%s\n' "$("$PY" -c 'import secrets; print(secrets.token_hex(24))')" "$port" >"$env_file"
project=lyra-check-compose
cleanup() { "${compose[@]}" --env-file "$env_file" -p "$project" -f docker/compose.yml --profile cpu down -v \
  >/dev/null 2>&1 || true; rm -f "$env_file"; }
trap cleanup EXIT
started=$(date +%s)
"${compose[@]}" --env-file "$env_file" -p "$project" -f docker/compose.yml --profile cpu up -d >"$OUT/compose.log" 2>&1 || {
  tail -30 "$OUT/compose.log"; say "FAIL: compose up"; exit 1; }
for _ in $(seq 1 150); do
  if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
  sleep 2
done
curl -fsS "http://127.0.0.1:$port/health" >/dev/null || { say "FAIL: the cpu profile never answered /health"; exit 1; }
compose_s=$(( $(date +%s) - started ))
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/sessions")
[ "$code" = 401 ] || { say "FAIL: the cpu profile answered $code without its token"; exit 1; }
say "cpu profile: /health after ${compose_s}s, 401 without the token"

"$PY" - "$OUT" "$ENGINE" "$("$ENGINE" --version)" "$PYTHON_IMAGE" "$size" "$build_s" "$compose_s" <<'EOF'
import json, sys
from pathlib import Path
out, engine, version, base, size, build_s, compose_s = sys.argv[1:]
probe = json.loads((Path(out) / "probe.json").read_text())
summary = {"engine": version, "base_image": base, "image_mib": int(size) // 2**20, "build_s": int(build_s),
           "compose_cpu_healthy_s": int(compose_s), **{k: v for k, v in probe.items() if k.endswith("_s")}}
(Path(out) / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps(summary, indent=1))
EOF
say "PASS"
