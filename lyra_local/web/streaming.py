"""Bridge a blocking token stream into async code without blocking the event loop.

The whole stream runs in one worker thread (a ``Llama`` generator must not hop
between threads mid-step), handing items to the event loop through a queue.
When the consumer goes away (a client disconnects), the producer is told to
stop and closes the stream after the token in flight, which stops generation.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
_END = object()


async def stream_in_thread(make_stream: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[Any, BaseException | None]] = asyncio.Queue()
    stop = threading.Event()

    def hand_over(item: Any, error: BaseException | None = None) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, (item, error))
        except RuntimeError:  # the loop is gone: nobody is listening any more
            stop.set()

    def produce() -> None:
        try:
            stream = make_stream()
            try:
                for item in stream:
                    if stop.is_set():
                        break
                    hand_over(item)
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
        except BaseException as exc:  # re-raised on the consumer's side
            hand_over(_END, exc)
            return
        hand_over(_END)

    producer = loop.run_in_executor(None, contextvars.copy_context().run, produce)  # ASKER: whose turn at a model
    try:
        while True:
            item, error = await queue.get()
            if item is _END:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        # Let the producer finish in the background; it stops after one more token.
        producer.add_done_callback(lambda f: f.exception())
