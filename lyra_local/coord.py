"""Core memory and coordination as one service: world state, instances, locks, sitrep, recall, remember.

The HTTP API and the MCP server both call this, so a local agent gets the same
behaviour whichever way it comes in. What an agent writes is attributed to it
(``agent:<name>``): its memories go to its own session, its world-state
changes are proposals until someone accepts them.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

from .config import Settings
from .errors import BadRequest, NotFound
from .memory import Memory, RecallQuery
from .store import Store
from .store.db import from_iso, to_iso
from .store.exchanges import NewExchange

AGENT_SOURCE = "agent"


def agent_name(name: str) -> str:
    name = " ".join(str(name).split())[:60]
    if not name:
        raise BadRequest("an agent needs a name")
    return name if name.startswith("agent:") else f"agent:{name}"


class Coordinator:
    def __init__(self, store: Store, settings: Settings, memory: Memory | None = None) -> None:
        self.store = store
        self.settings = settings
        self.memory = memory  # recall and remember need the embedder; the rest does not

    # -- sitrep ---------------------------------------------------------------------------

    def sitrep(self, *, now: datetime | None = None) -> dict[str, Any]:
        """World state, instances (running, stale, recently done), held locks, open proposals, what changed."""
        now = now or datetime.now(timezone.utc)
        coord = self.store.coord
        instances = self.instances(now=now)
        day = to_iso(now - timedelta(days=1))
        week = to_iso(now - timedelta(days=7))
        world = coord.world()
        last_pass = self.store.dreams.last()
        return {
            "at": to_iso(now),
            "world": world.content if world else None,
            "world_proposals": [{"id": p.id, "author": p.author, "reason": p.reason} for p in coord.proposals()],
            "instances": instances,
            "locks": [dataclasses.asdict(lease) for lease in coord.leases()],
            "recent": {
                "sessions": [{"id": s.id, "name": s.name, "updated_at": s.updated_at}
                             for s in self.store.sessions.active_since(day, limit=5)],
                "facts": [{"key": f.key, "value": f.value, "author": f.author, "created_at": f.created_at}
                          for f in self.store.derived.facts_since(week, limit=5)],
                "world_edits": coord.world_edits_since(day),
                "last_dream": None if last_pass is None else {
                    "finished_at": last_pass["finished_at"], "status": last_pass["status"],
                    "actions": len(last_pass["actions"] or [])},
            },
        }

    def instances(self, *, now: datetime | None = None) -> list[dict[str, Any]]:
        """Running, stale (silent past ``stale_after_s``) and recently completed instances, newest first."""
        now = now or datetime.now(timezone.utc)
        stale_after = self.settings.coordination.stale_after_s
        out = []
        for i in self.store.coord.instances():
            silent = (now - from_iso(i["heartbeat_at"])).total_seconds()
            state = i["status"] if i["completed_at"] else ("stale" if silent > stale_after else "running")
            out.append({"id": i["id"], "kind": i["kind"], "summary": i["summary"], "state": state,
                        "heartbeat_at": i["heartbeat_at"], "last_message": i["last_message"], "result": i["result"]})
        return out

    def sitrep_text(self, *, now: datetime | None = None) -> str:
        return render_sitrep(self.sitrep(now=now), self.settings.coordination.sitrep_chars)

    # -- world state --------------------------------------------------------------------------

    def world(self) -> dict[str, Any]:
        version = self.store.coord.world()
        return {"world": None if version is None else dataclasses.asdict(version),
                "proposals": [dataclasses.asdict(p) for p in self.store.coord.proposals()]}

    def propose_world(self, agent: str, content: str, reason: str) -> dict[str, Any]:
        if not reason.strip():
            raise BadRequest("a proposed world-state change needs a reason")
        version = self.store.coord.write_world(content, agent_name(agent), reason.strip(), status="proposed")
        return dataclasses.asdict(version)

    # -- instances ------------------------------------------------------------------------------

    def register(self, kind: str, summary: str, instance_id: str | None = None) -> dict[str, Any]:
        instance_id = instance_id or f"{kind}-{uuid.uuid4().hex[:8]}"
        self.store.coord.register(instance_id, kind, summary)
        return {"id": instance_id, "stale_after_s": self.settings.coordination.stale_after_s}

    def heartbeat(self, instance_id: str, message: str | None = None) -> dict[str, Any]:
        self._instance(instance_id)
        self.store.coord.heartbeat(instance_id, message)
        return {"id": instance_id, "ok": True}

    def complete(self, instance_id: str, result: str, status: str = "done") -> dict[str, Any]:
        self._instance(instance_id)
        self.store.coord.complete(instance_id, result, status)
        return {"id": instance_id, "status": status}

    # -- locks -----------------------------------------------------------------------------------

    def acquire(self, resource: str, holder: str, ttl_s: float, note: str | None = None) -> dict[str, Any]:
        return _lease(self.store.coord.acquire(resource, holder, _ttl(ttl_s), note))

    def renew(self, resource: str, holder: str, ttl_s: float) -> dict[str, Any]:
        return _lease(self.store.coord.renew(resource, holder, _ttl(ttl_s)))

    def release(self, resource: str, holder: str) -> dict[str, Any]:
        return {"released": self.store.coord.release(resource, holder)}

    def check(self, resource: str) -> dict[str, Any]:
        lease = self.store.coord.lease(resource)
        return {"held": lease is not None, "lease": None if lease is None else dataclasses.asdict(lease)}

    # -- memory -------------------------------------------------------------------------------------

    def recall(self, query: str, k: int = 8) -> list[dict[str, Any]]:
        hits = self._memory().recall(RecallQuery(query, k=max(1, min(k, 50))))
        return [{"content": h.content, "kind": h.kind, "role": h.role, "created_at": h.created_at,
                 "session_id": h.session_id, "score": round(h.score, 4), "stages": list(h.stages)} for h in hits]

    def remember(self, agent: str, content: str) -> dict[str, Any]:
        """Store a note from an agent in that agent's own session, attributed to it."""
        if not content.strip():
            raise BadRequest("nothing to remember")
        name = agent_name(agent)
        store = self.store
        session = store.sessions.find_or_create(AGENT_SOURCE, name, f"Notes from {name}")  # two at once: one
        memory = self._memory()
        vector = memory.embedder.embed([content])[0]
        exchange = store.exchanges.add(NewExchange(session.id, "user", content),  # its session names the agent
                                       vector=vector, model=memory.embedder.name)
        return {"id": exchange.id, "session_id": session.id, "author": name}

    # -- internals --------------------------------------------------------------------------------------

    def _memory(self) -> Memory:
        if self.memory is None:
            raise BadRequest("this process has no embedding model for recall")
        return self.memory

    def _instance(self, instance_id: str) -> None:
        if self.store.coord.instance(instance_id) is None:
            raise NotFound(f"no instance {instance_id}", hint="register first; its id comes back")


def _ttl(ttl_s: float) -> float:
    if not 0 < ttl_s <= 86400:
        raise BadRequest("ttl_s must be between 0 and 86400 seconds")
    return float(ttl_s)


def _lease(result: Any) -> dict[str, Any]:
    return {"ok": result.ok, "lease": dataclasses.asdict(result.lease),
            **({} if result.ok else {"held_by": result.lease.holder, "until": result.lease.expires_at})}


def render_sitrep(data: dict[str, Any], max_chars: int = 3000) -> str:
    """A short plain-text report, cut to ``max_chars`` so it is safe to put in any context."""
    lines = [f"SITREP {data['at'][:16].replace('T', ' ')} UTC"]
    world = (data["world"] or "(no core memory yet)").strip()
    lines += ["", "World state:", world if len(world) <= max_chars // 2 else world[: max_chars // 2] + " …"]
    if data["world_proposals"]:
        lines.append("Proposed changes waiting for review: " + ", ".join(
            f"#{p['id']} by {p['author']} ({p['reason']})" for p in data["world_proposals"][:5]))
    lines += ["", "Instances:"]
    shown = [i for i in data["instances"] if i["state"] in ("running", "stale")] or []
    lines += [f"- [{i['state']}] {i['kind']} {i['id']}: {i['summary']}"
              + (f" — {i['last_message']}" if i["last_message"] else "") for i in shown] or ["- none running"]
    done = [i for i in data["instances"] if i["state"] not in ("running", "stale")][:3]
    lines += [f"- [done] {i['kind']} {i['id']}: {i['result'] or i['summary']}" for i in done]
    lines += ["", "Locks held:"]
    lines += [f"- {lease['resource']} by {lease['holder']} until {lease['expires_at'][11:19]}"
              + (f" ({lease['note']})" if lease["note"] else "") for lease in data["locks"]] or ["- none"]
    recent = data["recent"]
    lines += ["", "Recently:"]
    if recent["sessions"]:
        lines.append("- conversations: " + "; ".join(s["name"] for s in recent["sessions"]))
    if recent["facts"]:
        lines.append("- learnt: " + "; ".join(f"{f['key']}: {f['value']}" for f in recent["facts"]))
    if recent["world_edits"]:
        lines.append(f"- {recent['world_edits']} world-state version(s) in the last day")
    if recent["last_dream"]:
        d = recent["last_dream"]
        lines.append(f"- last dream pass {d['status']} at {(d['finished_at'] or '')[:16]}, {d['actions']} action(s)")
    if lines[-1] == "Recently:":
        lines.append("- nothing in the last day")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars - 2] + " …"
