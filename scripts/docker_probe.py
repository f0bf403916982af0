"""Check a built Lyra image by running it: what ``scripts/docker_check.sh`` asks of the running container.

Starts the image with a token, a named volume for ``/data`` and its port
published on the host's loopback (as docs/install.md says to run it), then checks,
against the running container:

- ``/health`` answers, and how long the first start took;
- a request without the token is refused (401) and one with it served;
- a chat turn streams from the real default model (``/v1/chat/completions``);
- an import (``PUT /api/import`` of a Lyra JSON Lines file) finishes and its
  conversation is listed;
- a forced dream pass (``POST /api/dream``) runs to its end;
- the process runs as the image's non-root user, and the port is published on
  127.0.0.1 only (a connection to the host's other addresses is refused);
- after the container is stopped, removed and started again on the same
  volume, both conversations and their turns are still there.

Prints one line per check and a JSON summary (``--json`` writes it too);
exits 1 on the first failed check, after removing what it made (``--keep``
leaves the container and volume for a look).

    python scripts/docker_probe.py --engine podman --image localhost/lyra-local:cpu [--json out.json] [--keep]
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

START_TIMEOUT_S = 600
PASS_TIMEOUT_S = 900
MARKER = "harbourlantern"


class CheckFailed(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def host_addresses() -> list[str]:
    """The host's own non-loopback IPv4 addresses (where a port published on 0.0.0.0 would also answer)."""
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False).stdout.split()
    return [a for a in out if "." in a and not a.startswith("127.")]


class Probe:
    def __init__(self, engine: str, image: str) -> None:
        self.engine, self.image = engine, image
        self.token = secrets.token_hex(24)
        self.name = f"lyra-check-{secrets.token_hex(4)}"
        self.volume = f"{self.name}-data"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.results: dict[str, Any] = {"engine": engine, "image": image}

    def sh(self, *args: str, check: bool = True) -> str:
        done = subprocess.run([self.engine, *args], capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise CheckFailed(f"{self.engine} {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout.strip()

    def client(self, token: bool = True) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if token else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=120)

    def start(self) -> float:
        """Run the container and wait until ``/health`` answers; the seconds that took."""
        started = time.monotonic()
        self.sh("run", "-d", "--name", self.name, "-p", f"127.0.0.1:{self.port}:8000",
                "-e", f"LYRA_SERVER__API_TOKEN={self.token}", "-v", f"{self.volume}:/data", self.image)
        deadline = started + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.sh("inspect", "-f", "{{.State.Running}}", self.name, check=False) != "true":
                raise CheckFailed(f"the container stopped: {self.sh('logs', self.name, check=False)[-2000:]}")
            try:
                if httpx.get(f"{self.base}/health", timeout=5).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(2)
        raise CheckFailed(f"/health did not answer within {START_TIMEOUT_S}s")

    def remove(self) -> None:
        self.sh("rm", "-f", "-v", "-t", "30", self.name, check=False)  # -v: the image's anonymous /models too

    def check(self, what: str, run: Callable[[], str]) -> None:
        detail = run()
        print(f"ok   {what}: {detail}", flush=True)
        self.results.setdefault("checks", {})[what] = detail

    # -- the checks ------------------------------------------------------------------------------

    def token_required(self) -> str:
        with self.client(token=False) as bare, self.client() as api:
            refused = bare.get("/api/sessions").status_code
            served = api.get("/api/sessions").status_code
        if refused != 401 or served != 200:
            raise CheckFailed(f"without the token {refused}, with it {served} (want 401, 200)")
        return "401 without the token, 200 with it"

    def streamed_chat(self) -> str:
        body = {"model": "lyra", "stream": True, "user": "docker-check",
                "messages": [{"role": "user", "content": f"My lantern is called {MARKER}. Say hello."}]}
        pieces, done, started = [], False, time.monotonic()
        first: float | None = None
        with self.client() as api, api.stream("POST", "/v1/chat/completions", json=body, timeout=300) as r:
            if r.status_code != 200:
                raise CheckFailed(f"chat answered {r.status_code}: {r.read()[:300]!r}")
            for line in r.iter_lines():
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    done = True
                    break
                delta = json.loads(line[6:])["choices"][0].get("delta", {}).get("content") or ""
                if delta and first is None:
                    first = time.monotonic() - started
                pieces.append(delta)
        text = "".join(pieces).strip()
        if not done or not text:
            raise CheckFailed(f"the stream ended without [DONE] or said nothing ({len(pieces)} chunks)")
        self.results["chat_first_token_s"] = round(first or 0.0, 2)
        return f"{len([p for p in pieces if p])} chunks, first after {first:.1f}s: {text[:60]!r}"

    def an_import(self) -> str:
        turns = [{"role": "user", "content": f"The {MARKER} hangs by the back door.",
                  "created_at": "2026-01-05T09:00:00+00:00"},
                 {"role": "assistant", "content": "A good place for it.", "created_at": "2026-01-05T09:00:05+00:00"}]
        data = json.dumps({"id": "docker-check", "name": "imported by the check", "messages": turns}) + "\n"
        with self.client() as api:
            r = api.put("/api/import", params={"filename": "check.jsonl", "format": "lyra"}, content=data.encode())
            if r.status_code != 202:
                raise CheckFailed(f"PUT /api/import answered {r.status_code}: {r.text[:300]}")
            job = r.json()["job"]
            deadline = time.monotonic() + 300
            while (status := api.get(f"/api/import/{job}").json())["status"] == "running":
                if time.monotonic() > deadline:
                    raise CheckFailed("the import did not finish in 300 s")
                time.sleep(1)
            if status["status"] != "done":
                raise CheckFailed(f"the import ended {status['status']}: {status.get('error')}")
            names = [s["name"] for s in api.get("/api/sessions").json()["sessions"]]
        if "imported by the check" not in names:
            raise CheckFailed(f"the imported conversation is not listed: {names}")
        return f"job {job} done, {status['report']}"

    def dream_pass(self) -> str:
        with self.client() as api:
            before = (api.get("/api/dream").json().get("last_pass") or {}).get("id")
            started = time.monotonic()
            r = api.post("/api/dream")
            if r.status_code != 202:
                raise CheckFailed(f"POST /api/dream answered {r.status_code}: {r.text[:300]}")
            deadline = started + PASS_TIMEOUT_S
            while True:
                state = api.get("/api/dream").json()
                last = state.get("last_pass") or {}
                if last.get("id") not in (None, before) and not state["running"]:
                    break
                if time.monotonic() > deadline:
                    raise CheckFailed(f"the forced pass did not finish in {PASS_TIMEOUT_S}s")
                time.sleep(3)
        took = time.monotonic() - started
        self.results["dream_pass_s"] = round(took, 1)
        return f"pass {last['id']} finished in {took:.0f}s ({last.get('status') or 'done'})"

    def non_root(self) -> str:
        uid = self.sh("exec", self.name, "id", "-u")
        user = self.sh("exec", self.name, "id", "-un")
        if uid == "0":
            raise CheckFailed("the server runs as root")
        return f"uid {uid} ({user})"

    def loopback_only(self) -> str:
        published = self.sh("port", self.name)
        if f"127.0.0.1:{self.port}" not in published or "0.0.0.0" in published:
            raise CheckFailed(f"published as {published!r}, not on 127.0.0.1 only")
        others = host_addresses()
        reached = []
        for address in others:
            with socket.socket() as s:
                s.settimeout(3)
                if s.connect_ex((address, self.port)) == 0:
                    reached.append(address)
        if reached:
            raise CheckFailed(f"the port answers on {reached} too")
        return f"{published}; refused on {', '.join(others) or 'no other address'}"

    def survives_restart(self) -> str:
        with self.client() as api:
            before = {s["id"]: s["name"] for s in api.get("/api/sessions").json()["sessions"]}
            turns = {sid: len(api.get(f"/api/sessions/{sid}/messages").json()["messages"]) for sid in before}
        self.sh("stop", "-t", "30", self.name)
        self.sh("rm", "-v", self.name)  # the named /data volume stays; /models comes from the image again
        self.results["second_start_s"] = round(self.start(), 1)
        with self.client() as api:
            after = {s["id"]: s["name"] for s in api.get("/api/sessions").json()["sessions"]}
            again = {sid: len(api.get(f"/api/sessions/{sid}/messages").json()["messages"]) for sid in after}
            found = api.get("/api/search", params={"q": MARKER}).json()
        if after != before or again != turns or not turns:
            raise CheckFailed(f"before {before} {turns}, after {after} {again}")
        hits = found.get("results", found.get("hits", []))
        return f"{len(after)} conversations, {sum(again.values())} turns kept; search finds {len(hits)} hit(s)"

    def run(self) -> None:
        self.results["first_start_s"] = round(self.start(), 1)
        print(f"ok   started: /health after {self.results['first_start_s']}s", flush=True)
        self.check("token", self.token_required)
        self.check("streamed chat", self.streamed_chat)
        self.check("import", self.an_import)
        self.check("dream pass", self.dream_pass)
        self.check("non-root", self.non_root)
        self.check("loopback only", self.loopback_only)
        self.check("data kept across stop, rm and start", self.survives_restart)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", required=True)
    p.add_argument("--image", required=True)
    p.add_argument("--json", type=Path)
    p.add_argument("--keep", action="store_true", help="leave the container and its volume")
    args = p.parse_args()
    probe = Probe(args.engine, args.image)
    code = 0
    try:
        probe.run()
    except (CheckFailed, httpx.HTTPError, KeyError, ValueError) as e:
        print(f"FAIL {e}", flush=True)
        print(probe.sh("logs", "--tail", "40", probe.name, check=False), file=sys.stderr)
        probe.results["failed"] = str(e)
        code = 1
    finally:
        if not args.keep:
            probe.remove()
            probe.sh("volume", "rm", "-f", probe.volume, check=False)
    print(json.dumps(probe.results, indent=1))
    if args.json:
        args.json.write_text(json.dumps(probe.results, indent=1) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
