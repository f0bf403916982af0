"""What a model needs in memory at a context, and where it fits on this machine: pure functions.

A model's memory is its weights, its KV cache and llama.cpp's compute buffer.
``n_gpu_layers`` counts the output layer too (which is why llama.cpp says
"offloaded 33/33 layers" of a 32-layer Llama), and takes it first: the vendored
llama.cpp (``llama-model.cpp``, ``i_gpu_start = n_layer + 1 - n_gpu_layers``)
puts the output layer on the GPU at 1, then the repeating layers from the last
one back, each with its share of the KV cache; the token embeddings stay in RAM.
The compute buffer sits on the GPU as soon as any layer does.

The estimate, checked against llama.cpp's own log of the tiny models (``tests/test_fit.py`` asserts it):
- weights: from the GGUF header, the bytes of each layer's ``blk.N.*`` tensors (a Q4_K_M keeps its last
  eighth at Q6_K, 30 MB a layer heavier on a 70B, and those go to the GPU first) and the output layer's; from
  a catalog entry (no header yet), the file's size in ``layers + 2`` equal parts (the layers, the output, the
  token embeddings: a Llama 3.1 8B Q4_K_M's real split is 131 MB a layer, 431 MB output);
- KV cache = layers × n_ctx × kv_heads × (key_length + value_length) × 2 bytes (f16, llama.cpp's default cache
  type; flash attention changes the compute buffer, not the cache). SmolLM2-135M at n_ctx 2048: 45.00 MiB,
  exactly llama.cpp's figure. Encoders (BERT) have no KV cache: llama.cpp gives them none;
- compute buffer ≈ the larger of the logits (n_ubatch × vocabulary × 4 bytes, for a model that generates) and,
  without flash attention, one layer's attention scores (n_ubatch × n_ctx × heads × 4 bytes), plus
  n_ubatch × embedding × ``ACTIVATION_BYTES`` of intermediates. llama.cpp's log says 102.5 MiB for SmolLM2
  (this: 105), 3.0 MiB for all-MiniLM-L6-v2 at n_ubatch 256 (this: 3.0), about 258 MiB for Llama 3 8B at
  n_ubatch 512 with flash attention (this: 314, on the safe side).

Every GPU keeps ``MARGIN`` free: the CUDA context and cuBLAS workspace of the process (a few hundred MiB that
NVML's free memory still counts) and the allocator's slack. Several GPUs are one pool, as llama.cpp splits the
layers over them by their free memory; the compute buffer each of them then holds is within its margin.

The roles are placed in ``ORDER``, each in what the ones before it left; a role with a number (-1, 0, N) keeps
it, and its memory is counted. Free memory is the first probe's (``devices.probe``, once per process, before
Lyra's models load), so a reload plans against the same memory as the start did.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ..roles import Role, runs
from .catalog import CatalogModel, Shape
from .devices import MIB, Machine, gb
from .gguf_header import GGUFSummary
from .roles import ENCODERS

KV_BYTES = 2  # f16 keys and values
LOGIT_BYTES = 4  # f32
ACTIVATION_BYTES = 32  # per token of a micro-batch per unit of embedding, for the intermediate tensors
DEFAULT_VOCABULARY = 152_064  # Qwen 2.5's, the widest of the catalog's families: an unknown one is not under-counted
MARGIN = 768 * MIB  # kept free on each GPU
ORDER = ("embed", "chat", "summary", "rerank")  # embed runs on every turn and is small; then chat, then the rest
RECOMMEND_CTX = 8192  # the context a recommended chat model is sized for (a long conversation, a few recalls)
Kind = Literal["gpu", "partial", "cpu", "too-big"]
Setting = int | Literal["auto"]


@dataclass(frozen=True)
class Need:
    """A model's memory at one context, in the parts that ``n_gpu_layers`` moves (bytes)."""

    layers: int  # repeating layers
    layer_bytes: int  # one layer's weights
    output_bytes: int  # the output layer, the first on the GPU (n_gpu_layers 1 is it alone)
    ram_bytes: int  # what stays in RAM whatever the offload (the token embeddings)
    kv_layer_bytes: int  # one layer's KV cache at n_ctx
    compute_bytes: int
    n_ctx: int
    # each repeating layer's weights from the header, the first first (empty: all ``layer_bytes``); a Q4_K_M's
    # last layers are its heaviest, and they are the ones offloaded first
    layer_sizes: tuple[int, ...] = ()
    generates: bool = True  # it writes text (chat, summary), token by token, not vectors

    @property
    def of_layers(self) -> int:
        """llama.cpp's count: the repeating layers and the output layer."""
        return self.layers + 1

    @property
    def weights(self) -> int:
        return self.layers * self.layer_bytes + self.output_bytes + self.ram_bytes

    @property
    def kv_cache(self) -> int:
        return self.layers * self.kv_layer_bytes

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.compute_bytes

    def on_gpu(self, layers: int) -> int:
        """Bytes on the GPU with ``layers`` of ``of_layers`` offloaded (-1: all): the output layer first (at 1,
        alone), then ``layers - 1`` repeating layers with their KV cache, as llama.cpp places them."""
        layers = self.of_layers if layers < 0 else min(layers, self.of_layers)
        if layers == 0:
            return 0
        blocks = layers - 1  # the last ones
        weights = sum(self.layer_sizes[self.layers - blocks:]) if self.layer_sizes else blocks * self.layer_bytes
        return self.output_bytes + weights + blocks * self.kv_layer_bytes + self.compute_bytes


@dataclass(frozen=True)
class Layout:
    """What a GGUF's header says of its bytes beyond the shape; a catalog entry, whose file is not here yet, has
    none of it. ``encoder``: a BERT-like model (no KV cache, no output layer); ``split``: (bytes of all repeating
    layers, bytes of the output layer), else the file is taken as ``layers + 2`` equal parts; ``layer_sizes``:
    each repeating layer's bytes, where they differ (used when there is one per layer)."""

    vocabulary: int | None = None
    encoder: bool = False
    split: tuple[int, int] | None = None
    layer_sizes: tuple[int, ...] = ()


def need(shape: Shape, weights: int, n_ctx: int, *, n_ubatch: int = 512, generates: bool = True,
         flash_attn: bool = True, layout: Layout = Layout()) -> Need:
    """The memory of a model of ``shape`` whose file is ``weights`` bytes, at ``n_ctx`` tokens of context.

    ``generates``: it computes logits (chat, summary), not pooled vectors; ``layout``: what its header says of
    its bytes, when it was read."""
    vocabulary, encoder, split, layer_sizes = layout.vocabulary, layout.encoder, layout.split, layout.layer_sizes
    layers = max(shape.layers, 1)
    if split is not None:
        layer_bytes, output_bytes = split[0] // layers, split[1]
    else:
        layer_bytes = weights // (layers + 2)
        output_bytes = 0 if encoder else layer_bytes
    ram_bytes = max(weights - layers * layer_bytes - output_bytes, 0)
    kv_layer = 0 if encoder else n_ctx * shape.kv_heads * (shape.key_length + shape.value_length) * KV_BYTES
    logits = n_ubatch * (vocabulary or DEFAULT_VOCABULARY) * LOGIT_BYTES if generates else 0
    scores = 0 if flash_attn else n_ubatch * n_ctx * shape.heads * LOGIT_BYTES
    compute = max(logits, scores) + n_ubatch * shape.embedding * ACTIVATION_BYTES
    return Need(layers, layer_bytes, output_bytes, ram_bytes, kv_layer, compute, n_ctx,
                layer_sizes if len(layer_sizes) == layers and split is not None else (), generates)


def shape_of(summary: GGUFSummary) -> Shape | None:
    """The architecture's shape from a GGUF header; None when it does not say (an unknown architecture's keys,
    or a shape given per layer)."""
    layers, embedding, heads = summary.block_count, summary.embedding_length, summary.head_count
    if not layers or not embedding or not heads:
        return None
    head_length = embedding // heads
    return Shape(layers=layers, embedding=embedding, heads=heads, kv_heads=summary.head_count_kv or heads,
                 key_length=summary.key_length or head_length, value_length=summary.value_length or head_length)


def need_of_file(summary: GGUFSummary, n_ctx: int, *, role: str, n_ubatch: int = 512,
                 flash_attn: bool = True) -> Need | None:
    """A GGUF's memory when it serves ``role`` at ``n_ctx``; None when its header gives no shape."""
    shape = shape_of(summary)
    if shape is None:
        return None
    encoder = summary.architecture in ENCODERS
    layout = Layout(vocabulary=summary.vocabulary, encoder=encoder, layer_sizes=summary.layer_bytes,
                    split=(summary.block_bytes, summary.output_bytes) if summary.block_bytes else None)
    return need(shape, summary.size, n_ctx, n_ubatch=n_ubatch, generates=runs(role) is Role.CHAT,
                flash_attn=flash_attn, layout=layout)


def need_of_entry(entry: CatalogModel, n_ctx: int) -> Need:
    """A catalog entry's memory at ``n_ctx``, estimated from its shape before the file is here (an encoder's
    KV cache is counted though llama.cpp gives it none: a few MB at an encoder's context, on the safe side)."""
    return need(entry.shape, entry.size, n_ctx, generates=entry.role == "chat")


@dataclass(frozen=True)
class Placement:
    """Where a model goes: all, some or none of its layers on the GPU, or nowhere."""

    kind: Kind
    layers: int  # on the GPU, of of_layers
    of_layers: int
    gpu_bytes: int
    text: str  # "fits on the GPU", "partly on the GPU (20 of 33 layers)", "on the CPU, about 3 words a second", …
    short: str = ""  # the same for a table's column: "GPU", "GPU 20/33", "CPU ~3 words/s", "too big"

    @property
    def n_gpu_layers(self) -> int:
        """What llama.cpp is given: -1 for every layer, so that nothing is left behind by a miscount."""
        return -1 if self.kind == "gpu" else self.layers


def room(machine: Machine, gpu_used: int = 0) -> int:
    """GPU memory left for one more model: the free memory of every GPU, less each one's margin and what the
    models placed before it take (llama.cpp splits layers over several GPUs by their free memory)."""
    if not machine.offload:
        return 0
    return max(sum(max(gpu.free - MARGIN, 0) for gpu in machine.gpus) - gpu_used, 0)


def place(need: Need, machine: Machine, *, gpu_used: int = 0) -> Placement:
    """Where ``need`` goes on ``machine`` after ``gpu_used`` bytes of other models: as many layers as fit."""
    if need.total > machine.ram_total + (machine.vram_total if machine.offload else 0):
        return Placement("too-big", 0, need.of_layers, 0, "too big for this machine's memory", "too big")
    left = room(machine, gpu_used)
    layers = 0
    while layers < need.of_layers and need.on_gpu(layers + 1) <= left:
        layers += 1
    if layers == need.of_layers:
        return Placement("gpu", layers, need.of_layers, need.on_gpu(layers), "fits on the GPU", "GPU")
    if layers:
        return Placement("partial", layers, need.of_layers, need.on_gpu(layers),
                         f"partly on the GPU ({layers} of {need.of_layers} layers)", f"GPU {layers}/{need.of_layers}")
    words = words_a_second(need, machine)
    if words is None:
        return Placement("cpu", 0, need.of_layers, 0, "on the CPU", "CPU")
    if words < 1:
        return Placement("cpu", 0, need.of_layers, 0, "on the CPU, under 1 word a second", "CPU <1 word/s")
    count = round(words)
    return Placement("cpu", 0, need.of_layers, 0, f"on the CPU, about {count} word{'s' * (count > 1)} a second",
                     f"CPU ~{count} word{'s' * (count > 1)}/s")


WORDS_A_TOKEN = 0.75  # English words a token, about (OpenAI's and llama.cpp's rule of thumb)


def words_a_second(need: Need, machine: Machine) -> float | None:
    """How fast a model that writes text would write on the CPU: each token reads all its weights from RAM,
    so at most RAM's bandwidth over the weights' bytes, in words; ``None`` for a model that makes vectors (it
    writes nothing) or where the bandwidth was not measured."""
    bandwidth = machine.bytes_a_second() if need.generates else 0.0
    if bandwidth <= 0 or need.weights <= 0:
        return None
    return bandwidth / need.weights * WORDS_A_TOKEN


@dataclass(frozen=True)
class Ask:
    """A local role as the settings give it: its ``n_gpu_layers`` and its model's memory (None: its file's
    header could not be read, or gives no shape), or the role whose model it shares."""

    role: str
    setting: Setting
    need: Need | None
    shares: str | None = None


@dataclass(frozen=True)
class Offload:
    """What a role's model is loaded with, and why, in words for `lyra doctor`, the log and Settings."""

    role: str
    n_gpu_layers: int
    auto: bool
    placement: Placement | None
    reason: str  # "auto → 33 of 33 layers on the NVIDIA H200 (5.1 GB of 139 GB)"
    shares: str | None = None  # the role whose model this is (its memory counted there)


def auto_layers(asks: Iterable[Ask], machine: Machine) -> dict[str, Offload]:
    """``n_gpu_layers`` for every local role, in ``ORDER``: a fixed setting is kept (and its memory counted),
    ``"auto"`` takes as many layers as fit in what the roles before it left; a shared model is its owner's."""
    chosen: dict[str, Offload] = {}
    used = 0
    for ask in sorted(asks, key=lambda a: ORDER.index(a.role) if a.role in ORDER else len(ORDER)):
        if ask.shares is not None and ask.shares in chosen:
            owner = chosen[ask.shares]
            chosen[ask.role] = replace(owner, role=ask.role, reason=f"{ask.shares}'s model: {owner.reason}",
                                       shares=ask.shares)
            continue
        offload = _decide(ask, machine, used)
        used += offload.placement.gpu_bytes if offload.placement else 0
        chosen[ask.role] = offload
    return chosen


def gpu_bytes(plan: dict[str, Offload]) -> int:
    """The GPU memory a plan's models take together (a shared model once)."""
    return sum(o.placement.gpu_bytes for o in plan.values() if o.placement is not None and o.shares is None)


def _decide(ask: Ask, machine: Machine, used: int) -> Offload:
    if ask.setting != "auto":
        layers = ask.setting
        fixed = None
        if ask.need is not None and machine.offload and machine.gpus and layers != 0:
            on = ask.need.of_layers if layers < 0 else min(layers, ask.need.of_layers)
            fixed = Placement("gpu" if on == ask.need.of_layers else "partial", on, ask.need.of_layers,
                              ask.need.on_gpu(on), "as set")
        words = "every layer" if layers < 0 else f"{layers} layer(s)"
        where = "" if machine.offload else " (this llama.cpp build has no GPU offload: it runs on the CPU)"
        return Offload(ask.role, layers, False, fixed, f"set to {layers}: {words} on the GPU{where}")
    if not machine.offload:
        return Offload(ask.role, 0, True, None, "auto → 0: this llama.cpp build has no GPU offload")
    if not machine.gpus:
        return Offload(ask.role, 0, True, None, f"auto → 0: no GPU found ({machine.source})")
    if ask.need is None:
        return Offload(ask.role, 0, True, None,
                       "auto → 0: its file is missing, unreadable, or its header does not say how big the model is")
    placement = place(ask.need, machine, gpu_used=used)
    return Offload(ask.role, placement.n_gpu_layers, True, placement, _why(ask.need, placement, machine, used))


def _why(need: Need, placement: Placement, machine: Machine, used: int) -> str:
    context = f"with its {need.n_ctx:,}-token KV cache" if need.kv_cache else "no KV cache"
    if placement.kind in ("gpu", "partial"):
        return (f"auto → {placement.layers} of {placement.of_layers} layers on {machine.gpu_names()} "
                f"({gb(placement.gpu_bytes)} of {gb(machine.vram_total)}; {context})")
    if placement.kind == "too-big":
        return (f"auto → 0: too big for this machine ({gb(need.total)} {context}, more than its RAM and GPU "
                "memory together)")
    others = f" after the other models' {gb(used)}" if used else ""
    return (f"auto → 0: not one layer fits in the {gb(room(machine, used))} left on {machine.gpu_names()}"
            f"{others} (the whole model needs {gb(need.on_gpu(-1))} there, {context}): it runs on the CPU")


# Licences that forbid some uses (Qwen's research licence: non-commercial only): such a model is listed and pulled
# when the person names it, never suggested unasked, since Lyra cannot know what its person uses it for.
NOT_SUGGESTED = frozenset({"qwen-research"})


def recommend(entries: Sequence[CatalogModel], machine: Machine, *, gpu_used: int = 0,
              n_ctx: int = RECOMMEND_CTX) -> tuple[CatalogModel, Placement] | None:
    """The chat model to suggest for this machine: the largest that fits on the GPU(s) whole at ``n_ctx`` after
    ``gpu_used``; with no GPU to use, the smallest that runs on the CPU; None when the catalog has neither.
    A model that writes a <think> block before each reply is never suggested (Lyra would show it), nor one whose
    licence restricts its use (``NOT_SUGGESTED``)."""
    chats = sorted((e for e in entries if e.role == "chat" and not e.thinking and e.licence not in NOT_SUGGESTED),
                   key=lambda e: (e.parameters, e.size))
    placed = [(entry, place(need_of_entry(entry, n_ctx), machine, gpu_used=gpu_used)) for entry in chats]
    whole = [pair for pair in placed if pair[1].kind == "gpu"]
    if whole:
        return whole[-1]
    runnable = [pair for pair in placed if pair[1].kind != "too-big"]
    return runnable[0] if runnable else None
