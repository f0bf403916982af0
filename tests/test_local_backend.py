"""The in-process backend with the real tiny GGUF models."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from lyra_local.config import LocalModel
from lyra_local.errors import ModelFileMissing, ModelLoadError, ModelRequestError
from lyra_local.llm.base import GenerationOptions, background_call
from lyra_local.llm.local import LocalChatModel, LocalEmbedder

pytestmark = pytest.mark.slow

HELLO = [{"role": "user", "content": "Say hello to Ana."}]


def test_complete_returns_text_and_usage(chat_model: LocalChatModel) -> None:
    result = chat_model.complete(HELLO, GenerationOptions(max_tokens=12))
    assert result.text.strip()
    assert 0 < result.completion_tokens <= 12
    assert result.prompt_tokens > chat_model.count_tokens("Say hello to Ana.")
    assert result.finish_reason in ("stop", "length")


def test_stream_gives_the_same_reply_as_complete_at_temperature_zero(chat_model: LocalChatModel) -> None:
    options = GenerationOptions(max_tokens=16, temperature=0.0, seed=1)
    whole = chat_model.complete(HELLO, options).text
    deltas = list(chat_model.stream(HELLO, options))
    assert "".join(d.text for d in deltas) == whole
    assert deltas[-1].finish_reason in ("stop", "length")
    assert all(d.finish_reason is None for d in deltas[:-1])


def test_closing_a_stream_stops_generation_and_frees_the_model(chat_model: LocalChatModel) -> None:
    stream = chat_model.stream(HELLO, GenerationOptions(max_tokens=200))
    first = next(stream)
    assert first.text
    stream.close()
    # the lock is free again: another request goes through at once
    acquired = chat_model._model._lock.acquire(timeout=1)
    assert acquired
    chat_model._model._lock.release()


def test_a_caller_waiting_for_the_model_is_seen_as_contention(chat_model: LocalChatModel) -> None:
    import threading

    stream = chat_model.stream(HELLO, GenerationOptions(max_tokens=200))
    next(stream)  # we hold the model now
    assert not chat_model.contended()
    waiter = threading.Thread(target=chat_model.complete, args=(HELLO, GenerationOptions(max_tokens=2)))
    waiter.start()
    for _ in range(100):
        if chat_model.contended():
            break
        waiter.join(0.02)
    assert chat_model.contended()
    stream.close()
    waiter.join(30)
    assert not chat_model.contended()


def test_background_callers_do_not_yield_to_each_other(chat_model: LocalChatModel) -> None:
    """Two dream threads on one in-process model: each waits its turn; neither counts as a chat turn waiting."""
    def background() -> None:
        with background_call():
            chat_model.complete(HELLO, GenerationOptions(max_tokens=2))

    stream = chat_model.stream(HELLO, GenerationOptions(max_tokens=200))
    next(stream)
    waiter = threading.Thread(target=background)
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not chat_model.contended()
    stream.close()
    waiter.join(30)
    assert not waiter.is_alive()


def test_count_tokens_uses_the_models_tokenizer(chat_model: LocalChatModel) -> None:
    # SmolLM2's BPE: the same text counts differently from a whitespace split
    assert chat_model.count_tokens("") == 0
    assert chat_model.count_tokens("hello") == 1
    assert chat_model.count_tokens("antidisestablishmentarianism") > 1


def test_concurrent_requests_are_serialised_not_crashed(chat_model: LocalChatModel) -> None:
    results: list[str] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            results.append(chat_model.complete(HELLO, GenerationOptions(max_tokens=6)).text)
        except BaseException as exc:  # pragma: no cover - the assertion reports it
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 3 and all(results)


def test_embeddings_are_unit_length_and_batching_does_not_change_them(embedder: LocalEmbedder) -> None:
    texts = [f"memory number {i} about {'cats' if i % 2 else 'the sea'}" for i in range(20)]
    batched = embedder.embed(texts)
    single = np.vstack([embedder.embed([t]) for t in texts])
    assert batched.shape == (20, 384) and batched.dtype == np.float32
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-4)
    assert np.min(np.sum(batched * single, axis=1)) > 0.9999


def test_one_short_text_is_embedded_on_the_free_cores_and_the_threads_are_put_back(
        embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp

    from lyra_local.llm import local

    monkeypatch.setattr(local, "_threads_now", lambda loaded: 1)  # a busy machine: no core free but this one
    llm = embedder._model.llm()
    threads: list[int] = []
    real = llm.embed

    def embed(*args: object, **kwargs: object) -> object:
        threads.append(int(llama_cpp.llama_n_threads_batch(llm.ctx)))
        return real(*args, **kwargs)

    monkeypatch.setattr(llm, "embed", embed)
    one = embedder.embed(["what did Caroline paint?"])
    several = embedder.embed(["what did Caroline paint?", "a sunset"])
    assert threads == [1, llm.n_threads_batch]
    assert int(llama_cpp.llama_n_threads_batch(llm.ctx)) == llm.n_threads_batch
    assert np.array_equal(one[0], several[0]) or float(one[0] @ several[0]) > 0.9999
    monkeypatch.setattr(local, "_threads_now", lambda loaded: loaded)  # a quiet one: every thread
    assert np.array_equal(embedder.embed(["what did Caroline paint?"]), one)  # the same vector bit for bit
    assert threads[-1] == llm.n_threads_batch


@pytest.mark.parametrize(("loadavg", "cores", "loaded", "threads"), [
    ("0.10 0.20 0.30 1/312 4242", 2, 2, 2),     # only this thread runs: the other core is free
    ("0.90 1.00 1.10 2/312 4242", 2, 2, 1),     # something else runs too: no core to spare
    ("11.8 12.1 9.0 13/500 4242", 2, 2, 1),     # a busy box
    ("0.50 0.40 0.30 3/900 4242", 16, 8, 8),    # a GPU box: as many as loaded
    ("", 4, 4, 1), ("garbled", 4, 4, 1),        # unreadable: one thread
])
def test_one_short_text_takes_only_the_cores_nothing_else_wants(loadavg: str, cores: int, loaded: int,
                                                                threads: int) -> None:
    from lyra_local.llm.local import short_text_threads

    assert short_text_threads(loadavg, cores, loaded) == threads


def test_similar_texts_are_closer_than_unrelated_ones(embedder: LocalEmbedder) -> None:
    a, b, c = embedder.embed(["I adopted a kitten named Miso.", "My new cat is called Miso.",
                              "The bond market fell sharply today."])
    assert float(a @ b) > float(a @ c) + 0.2


def test_long_inputs_never_crash(embedder: LocalEmbedder) -> None:
    long_text = "lorem ipsum dolor sit amet " * 800  # ~4000 tokens, far past the context
    vectors = embedder.embed([long_text, "short", long_text[:900]])
    assert vectors.shape == (3, 384)
    assert np.all(np.isfinite(vectors))


def test_empty_input_list(embedder: LocalEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


def test_missing_file_names_path_and_fetch_command(tmp_path) -> None:
    spec = LocalModel(path="SmolLM2-135M-Instruct.Q4_1.gguf")
    model = LocalChatModel(tmp_path / spec.path, spec)
    with pytest.raises(ModelFileMissing) as err:
        model.count_tokens("hi")
    assert str(tmp_path) in str(err.value) and "lyra models fetch" in str(err.value)


def test_corrupt_file_is_a_clear_load_error(tmp_path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 100)
    model = LocalEmbedder(bad, LocalModel(path=bad))
    with pytest.raises(ModelLoadError, match="could not load"):
        model.embed(["x"])


def test_a_prompt_beyond_the_context_is_a_clear_error(chat_model: LocalChatModel) -> None:
    too_long = [{"role": "user", "content": "word " * 4000}]
    with pytest.raises(ModelRequestError, match="could not take this prompt"):
        list(chat_model.stream(too_long, GenerationOptions(max_tokens=8)))
    assert chat_model.complete(HELLO, GenerationOptions(max_tokens=4)).text  # and the model still works
