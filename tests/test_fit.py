"""What a model needs in memory and where it fits (modelfiles/fit.py): against llama.cpp's own figures for the
real tiny models' headers, and synthetic 8B/14B/70B shapes on made-up machines with and without a GPU."""

from __future__ import annotations

import dataclasses

import pytest

from lyra_local.modelfiles import fit
from lyra_local.modelfiles.catalog import CatalogModel, Shape
from lyra_local.modelfiles.devices import GB, MIB, Gpu, Machine
from lyra_local.modelfiles.gguf_header import read_gguf

from .conftest import CHAT_GGUF, EMBED_GGUF, require_file

# config.json of each model; sizes of the bartowski Q4_K_M files
LLAMA_8B = Shape(layers=32, embedding=4096, heads=32, kv_heads=8, key_length=128, value_length=128)
QWEN_14B = Shape(layers=48, embedding=5120, heads=40, kv_heads=8, key_length=128, value_length=128)
LLAMA_70B = Shape(layers=80, embedding=8192, heads=64, kv_heads=8, key_length=128, value_length=128)
SIZE_8B, SIZE_14B, SIZE_70B = 4_920_739_232, 8_988_110_976, 42_520_395_584


def machine(*gpus_gib: float, ram_gib: float = 64, offload: bool = True) -> Machine:
    """A made-up machine: GPUs of these sizes (all free), this much RAM."""
    gpus = tuple(Gpu(f"GPU {i}", int(size * GB), int(size * GB), i) for i, size in enumerate(gpus_gib))
    return Machine(gpus, int(ram_gib * GB), int(ram_gib * GB), offload, "test")


RTX_4070 = Machine((Gpu("RTX 4070", 12282 * MIB, 11500 * MIB, 0),), 32 * GB, 28 * GB, True, "test")


def test_the_kv_cache_is_llama_cpps_at_the_chosen_context() -> None:
    # llama.cpp's log: "KV self size = 1024.00 MiB" for Llama 3 8B at 8192 tokens, 2560 MiB for 70B
    assert fit.need(LLAMA_8B, SIZE_8B, 8192).kv_cache == 1024 * MIB
    assert fit.need(LLAMA_70B, SIZE_70B, 8192).kv_cache == 2560 * MIB
    assert fit.need(QWEN_14B, SIZE_14B, 32768).kv_cache == 6144 * MIB
    assert fit.need(LLAMA_8B, SIZE_8B, 2048).kv_cache == 256 * MIB  # linear in the context
    # flash attention shrinks the compute buffer (no n_ctx × n_ubatch score matrix), never the cache
    with_fa, without = fit.need(LLAMA_8B, SIZE_8B, 8192), fit.need(LLAMA_8B, SIZE_8B, 8192, flash_attn=False)
    assert with_fa.kv_cache == without.kv_cache and with_fa.compute_bytes < without.compute_bytes
    assert without.compute_bytes >= 512 * MIB  # llama.cpp: 560 MiB for Llama 3 8B at 8192 without it


@pytest.mark.models  # reads the default models' headers
def test_the_tiny_chat_models_header_gives_llama_cpps_own_figures() -> None:
    summary = read_gguf(require_file(CHAT_GGUF))
    assert fit.shape_of(summary) == Shape(layers=30, embedding=576, heads=9, kv_heads=3, key_length=64,
                                          value_length=64)
    assert summary.vocabulary == 49152
    need = fit.need_of_file(summary, 2048, role="chat")
    assert need is not None
    # llama.cpp 0.3.36 loading it at n_ctx 2048 (CPU): "KV buffer size = 45.00 MiB", "model buffer size =
    # 92.10 MiB", "compute buffer size = 102.51 MiB"
    assert need.kv_cache == 45 * MIB
    assert abs(need.weights - summary.size) < 2 * MIB and abs(need.weights / MIB - 92.10) < 2
    assert 102.5 * MIB <= need.compute_bytes <= 110 * MIB  # a little over: never under
    assert need.of_layers == 31  # llama.cpp's "offloaded 31/31 layers"
    # its output is tied to the token embeddings: llama.cpp puts a copy on the GPU first (n_gpu_layers 1)
    assert need.output_bytes > 28 * MIB and need.on_gpu(1) - need.compute_bytes == need.output_bytes  # first
    assert need.on_gpu(-1) == need.on_gpu(31) < need.total  # the token embeddings stay in RAM


@pytest.mark.models
def test_the_tiny_embedding_model_is_an_encoder_without_kv_cache_or_output_layer() -> None:
    summary = read_gguf(require_file(EMBED_GGUF))
    need = fit.need_of_file(summary, 512, role="embed", n_ubatch=256)
    assert need is not None
    assert fit.shape_of(summary) == Shape(layers=6, embedding=384, heads=12, kv_heads=12, key_length=32,
                                          value_length=32)
    assert need.kv_cache == 0 and need.output_bytes == 0  # llama.cpp gives a BERT no KV cache
    assert abs(need.compute_bytes / MIB - 3.00) < 0.5  # llama.cpp: "compute buffer size = 3.00 MiB"
    assert need.weights == summary.size


def test_an_8b_fits_a_12_gb_gpu_a_70b_partly_and_a_cpu_only_machine_runs_them_slowly() -> None:
    small = fit.place(fit.need(LLAMA_8B, SIZE_8B, 8192), RTX_4070)
    assert (small.kind, small.layers, small.of_layers, small.text) == ("gpu", 33, 33, "fits on the GPU")
    assert small.n_gpu_layers == -1
    big_need = fit.need(LLAMA_70B, SIZE_70B, 8192)
    big = fit.place(big_need, RTX_4070)
    assert big.kind == "partial" and 0 < big.layers < 81 and big.of_layers == 81
    assert big.text == f"partly on the GPU ({big.layers} of 81 layers)" and big.n_gpu_layers == big.layers
    left = fit.room(RTX_4070)
    assert big_need.on_gpu(big.layers) <= left < big_need.on_gpu(big.layers + 1)  # as many as fit, no more
    assert fit.place(big_need, machine(ram_gib=64)).text == "on the CPU"  # no bandwidth measured: no speed
    fast_ram = dataclasses.replace(machine(ram_gib=64), bandwidth=60e9)  # 60 GB/s over 40 GB of weights
    assert fit.place(big_need, fast_ram).text == "on the CPU, about 1 word a second"
    assert fit.place(fit.need(LLAMA_8B, SIZE_8B, 8192), fast_ram).text == "on the CPU, about 9 words a second"
    assert fit.place(big_need, machine(ram_gib=16)).text == "too big for this machine's memory"  # 45+ GB, 16 GB
    assert fit.place(big_need, machine(24, ram_gib=32)).kind == "partial"  # RAM + VRAM together hold it
    assert fit.place(big_need, machine(24, 24, ram_gib=32)).layers > big.layers  # two GPUs hold more
    assert fit.place(big_need, machine(80)).kind == "gpu"


def test_a_cpu_build_places_nothing_on_a_gpu_it_cannot_use() -> None:
    placed = fit.place(fit.need(LLAMA_8B, SIZE_8B, 8192), machine(24, offload=False))
    assert (placed.kind, placed.layers) == ("cpu", 0)


def test_the_context_decides_whether_a_14b_fits() -> None:
    assert fit.place(fit.need(QWEN_14B, SIZE_14B, 8192), RTX_4070).kind == "gpu"
    long = fit.place(fit.need(QWEN_14B, SIZE_14B, 32768), RTX_4070)  # its 6 GiB KV cache does not fit beside it
    assert long.kind == "partial" and long.layers < 49


def auto(role: str, need: fit.Need | None, setting: fit.Setting = "auto", shares: str | None = None) -> fit.Ask:
    return fit.Ask(role, setting, need, shares)


def test_a_second_role_on_the_same_gpu_gets_what_the_first_left() -> None:
    chat_need = fit.need(QWEN_14B, SIZE_14B, 8192)
    embed_need = fit.need(QWEN_14B, SIZE_14B, 512, generates=False)  # a big embedding model, to crowd the card
    alone = fit.auto_layers([auto("chat", chat_need)], RTX_4070)["chat"]
    assert alone.n_gpu_layers == -1 and alone.auto
    both = fit.auto_layers([auto("chat", chat_need), auto("embed", embed_need)], RTX_4070)
    embed, chat = both["embed"], both["chat"]
    assert embed.n_gpu_layers == -1  # embed is placed first: it runs on every turn
    assert chat.placement is not None and embed.placement is not None
    assert chat.placement.kind == "partial" and 0 < chat.n_gpu_layers < 49
    assert embed.placement.gpu_bytes + chat.placement.gpu_bytes <= fit.room(RTX_4070)
    assert chat.reason.startswith(f"auto → {chat.n_gpu_layers} of 49 layers on the RTX 4070 (")
    assert "8,192-token KV cache" in chat.reason


def test_a_fixed_setting_is_kept_and_its_memory_counted_before_auto() -> None:
    chat_need = fit.need(LLAMA_8B, SIZE_8B, 8192)
    plan = fit.auto_layers([auto("chat", chat_need, -1), auto("rerank", fit.need(LLAMA_70B, SIZE_70B, 512))],
                           RTX_4070)
    assert (plan["chat"].n_gpu_layers, plan["chat"].auto) == (-1, False)
    assert plan["chat"].reason == "set to -1: every layer on the GPU"
    alone = fit.auto_layers([auto("rerank", fit.need(LLAMA_70B, SIZE_70B, 512))], RTX_4070)["rerank"]
    assert 0 < plan["rerank"].n_gpu_layers < alone.n_gpu_layers  # the chat model's 6 GB came first
    zero = fit.auto_layers([auto("chat", chat_need, 0)], RTX_4070)["chat"]
    assert zero.n_gpu_layers == 0 and zero.placement is None


def test_a_summary_on_chats_model_takes_no_memory_of_its_own() -> None:
    chat_need = fit.need(LLAMA_8B, SIZE_8B, 8192)
    plan = fit.auto_layers([auto("summary", None, shares="chat"), auto("chat", chat_need),
                            auto("rerank", fit.need(LLAMA_70B, SIZE_70B, 512))], RTX_4070)
    assert plan["summary"].n_gpu_layers == plan["chat"].n_gpu_layers == -1
    assert plan["summary"].reason == f"chat's model: {plan['chat'].reason}"
    without_summary = fit.auto_layers([auto("chat", chat_need), auto("rerank", fit.need(LLAMA_70B, SIZE_70B, 512))],
                                      RTX_4070)
    assert plan["rerank"].n_gpu_layers == without_summary["rerank"].n_gpu_layers


def test_auto_on_a_cpu_build_or_without_a_gpu_chooses_0_and_says_why() -> None:
    need = fit.need(LLAMA_8B, SIZE_8B, 8192)
    cpu_build = fit.auto_layers([auto("chat", need)], machine(24, offload=False))["chat"]
    assert (cpu_build.n_gpu_layers, cpu_build.reason) == (0, "auto → 0: this llama.cpp build has no GPU offload")
    no_gpu = fit.auto_layers([auto("chat", need)], machine())["chat"]
    assert no_gpu.n_gpu_layers == 0 and no_gpu.reason.startswith("auto → 0: no GPU found")
    unreadable = fit.auto_layers([auto("chat", None)], RTX_4070)["chat"]
    assert unreadable.n_gpu_layers == 0 and "header" in unreadable.reason
    crowded = fit.auto_layers([auto("chat", need)], machine(0.9))["chat"]  # less than the margin: nothing fits
    assert crowded.n_gpu_layers == 0 and "not one layer fits" in crowded.reason


def entry(name: str, shape: Shape, size: int, parameters: int, *, thinking: bool = False) -> CatalogModel:
    return CatalogModel(name=name, role="chat", title=name, repo="x/y", file=f"{name}.gguf", revision="main",
                        size=size, size_exact=True, sha256=None, quantization="Q4_K_M", parameters=parameters,
                        context_length=32768, licence="apache-2.0", template="chatml", pooling=None, shape=shape,
                        source="test", thinking=thinking, note="")


CATALOG = (entry("small-8b", LLAMA_8B, SIZE_8B, 8_000_000_000), entry("mid-14b", QWEN_14B, SIZE_14B, 14_700_000_000),
           entry("think-14b", QWEN_14B, SIZE_14B - 1, 14_800_000_000, thinking=True),
           entry("big-70b", LLAMA_70B, SIZE_70B, 70_600_000_000))


def test_the_recommended_chat_model_is_the_largest_that_fits_whole() -> None:
    chosen = fit.recommend(CATALOG, RTX_4070)
    assert chosen is not None and chosen[0].name == "mid-14b" and chosen[1].kind == "gpu"  # never a thinking one
    crowded = fit.recommend(CATALOG, RTX_4070, gpu_used=4 * GB)  # other models took 4 GB
    assert crowded is not None and crowded[0].name == "small-8b"
    big = fit.recommend(CATALOG, machine(80))
    assert big is not None and big[0].name == "big-70b"
    cpu = fit.recommend(CATALOG, machine(ram_gib=32))  # no GPU: the smallest, on the CPU
    assert cpu is not None and (cpu[0].name, cpu[1].kind) == ("small-8b", "cpu")
    assert fit.recommend(CATALOG, machine(ram_gib=2)) is None


def test_a_model_whose_licence_restricts_its_use_is_never_suggested_unasked() -> None:
    """The real catalog: Qwen2.5 3B (non-commercial) is the fewest parameters, yet a CPU-only machine is told of
    the smallest model it may use for anything."""
    from lyra_local.modelfiles.catalog import load_catalog

    real = load_catalog()
    restricted = [e for e in real if e.licence in fit.NOT_SUGGESTED]
    assert [e.name for e in restricted] == ["qwen2.5-3b-instruct"]
    cpu = fit.recommend(real, machine(ram_gib=32))
    assert cpu is not None and cpu[0].licence not in fit.NOT_SUGGESTED
    assert cpu[0].parameters > restricted[0].parameters  # it would have been chosen but for its licence
