"""The OpenAI-compatible API: ``/v1/models`` and ``/v1/chat/completions``.

Chunks follow OpenAI's format exactly (role first, content deltas, a final chunk
with ``finish_reason``, then ``[DONE]``), so the ``openai`` client and Open WebUI
work unchanged. A client that disconnects mid-stream stops generation.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from ..errors import BadRequest, LyraError
from ..llm.base import ChatDelta, GenerationOptions, Message
from .deps import app_state
from .streaming import stream_in_thread

router = APIRouter(prefix="/v1")
MODEL_ID = "lyra"


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text or "" for part in self.content if part.type == "text")
        return self.content or ""


class ChatCompletionRequest(BaseModel):
    # OpenAI clients send many optional fields (n, logprobs, ...); we ignore what we do not use.
    model_config = ConfigDict(extra="ignore")
    model: str = MODEL_ID
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    user: str | None = None

    def options(self) -> GenerationOptions:
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return GenerationOptions(max_tokens=self.max_completion_tokens or self.max_tokens,
                                 temperature=self.temperature, top_p=self.top_p, stop=stop, seed=self.seed)

    def plain_messages(self) -> list[Message]:
        out: list[Message] = []
        for msg in self.messages:
            if msg.role in ("tool",):
                continue
            role = "system" if msg.role == "developer" else msg.role
            out.append({"role": role, "content": msg.text()})  # type: ignore[typeddict-item]
        if not any(m["role"] == "user" for m in out):
            raise BadRequest("the conversation has no user message")
        return out


@router.get("/models")
async def list_models(request: Request) -> dict[str, Any]:
    chat = app_state(request).models.chat
    return {"object": "list", "data": [
        {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "lyra", "root": chat.name},
    ]}


@router.post("/chat/completions", response_model=None)
async def chat_completions(body: ChatCompletionRequest, request: Request) -> dict[str, Any] | EventSourceResponse:
    model = app_state(request).models.chat
    messages = body.plain_messages()
    options = body.options()
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if not body.stream:
        result = await run_in_threadpool(model.complete, messages, options)
        return {
            "id": completion_id, "object": "chat.completion", "created": created, "model": MODEL_ID,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": result.text},
                         "finish_reason": result.finish_reason}],
            "usage": {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
                      "total_tokens": result.prompt_tokens + result.completion_tokens},
        }

    async def events() -> AsyncIterator[str]:
        def chunk(delta: dict[str, str], finish: str | None = None) -> str:
            return json.dumps({
                "id": completion_id, "object": "chat.completion.chunk", "created": created, "model": MODEL_ID,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            })

        yield chunk({"role": "assistant", "content": ""})
        finish = "stop"
        try:
            async for delta in stream_in_thread(lambda: model.stream(messages, options)):
                assert isinstance(delta, ChatDelta)
                if delta.text:
                    yield chunk({"content": delta.text})
                finish = delta.finish_reason or finish
        except LyraError as exc:
            yield json.dumps({"error": {"message": str(exc), "type": type(exc).__name__,
                                        "code": exc.status_code}})
        else:
            yield chunk({}, finish)
        yield "[DONE]"

    return EventSourceResponse(events(), ping=15)
