"""fit.py from a big model's own GGUF header: synthetic Llama 3.1 8B, Qwen2.5 14B and Llama 3.1 70B Q4_K_M files.

``test_fit.py`` checks the estimate against the tiny models' real headers and against ``Shape`` objects for the
big ones; this file takes the path a downloaded 5-40 GB model takes: ``read_gguf`` → ``fit.shape_of`` /
``fit.need_of_file`` (per-layer bytes from the tensor infos, the output layer, the token embeddings kept in RAM)
→ ``fit.place`` and the settings' ``offload_plan``.

Each file is written by the ``gguf`` package's own ``GGUFWriter`` (the writer llama.cpp's converters use): the
architecture's metadata, a vocabulary of the real size, and the real tensor names and shapes with the types a
Q4_K_M quantization gives them, approximately (llama.cpp's ``llama-quant.cpp``: Q4_K everywhere, Q6_K for the
output and for ``attn_v``/``ffn_down`` of the layers ``use_more_bits`` picks, Q5_K for the other ``attn_v`` of
a 70B; F32 norms and biases; the real files come within 0.2 % of these sizes). No tensor data is written: the
file is extended to its full size as a sparse file (``truncate``), so a "42 GB" model takes a few MB of disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import pytest

from lyra_local.config import LocalModel, Settings, settings_from_text
from lyra_local.llm.registry import offload_plan
from lyra_local.modelfiles import devices, fit
from lyra_local.modelfiles.catalog import Shape
from lyra_local.modelfiles.devices import MIB
from lyra_local.modelfiles.gguf_header import GGUFSummary, read_gguf

from .conftest import EMBED_GGUF, MODELS_DIR, require_file

Q4_K, Q5_K, Q6_K, F32 = (gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q5_K,
                         gguf.GGMLQuantizationType.Q6_K, gguf.GGMLQuantizationType.F32)
ALIGNMENT = 32  # GGUF's default general.alignment


@dataclass(frozen=True)
class Model:
    """A real model as its config.json describes it, and its bartowski Q4_K_M file."""

    name: str
    arch: str
    shape: Shape
    vocabulary: int
    ffn: int
    context_length: int
    parameters: int  # the real count (safetensors metadata)
    file_size: int  # the real Q4_K_M file's size
    biases: bool = False  # Qwen2 has q/k/v biases
    rope_freqs: bool = False  # Llama 3.1's rope scaling factors, one small F32 tensor
    seventy: bool = False  # llama.cpp's LLM_TYPE_70B: attn_v one step wider

    def tensors(self) -> list[tuple[str, tuple[int, ...], gguf.GGMLQuantizationType]]:
        """(name, GGUF dimensions (innermost first), type) of every tensor, in the converter's order."""
        s = self.shape
        q, kv = s.heads * s.key_length, s.kv_heads * s.key_length
        out: list[tuple[str, tuple[int, ...], gguf.GGMLQuantizationType]] = [
            ("token_embd.weight", (s.embedding, self.vocabulary), Q4_K)]
        if self.rope_freqs:
            out.append(("rope_freqs.weight", (s.key_length // 2,), F32))
        for i in range(s.layers):
            more = use_more_bits(i, s.layers)
            v_type = Q6_K if more else Q5_K if self.seventy else Q4_K
            p = f"blk.{i}."
            out += [(p + "attn_norm.weight", (s.embedding,), F32),
                    (p + "attn_q.weight", (s.embedding, q), Q4_K), (p + "attn_k.weight", (s.embedding, kv), Q4_K),
                    (p + "attn_v.weight", (s.embedding, kv), v_type),
                    (p + "attn_output.weight", (q, s.embedding), Q4_K),
                    (p + "ffn_norm.weight", (s.embedding,), F32),
                    (p + "ffn_gate.weight", (s.embedding, self.ffn), Q4_K),
                    (p + "ffn_up.weight", (s.embedding, self.ffn), Q4_K),
                    (p + "ffn_down.weight", (self.ffn, s.embedding), Q6_K if more else Q4_K)]
            if self.biases:
                out += [(p + "attn_q.bias", (q,), F32), (p + "attn_k.bias", (kv,), F32),
                        (p + "attn_v.bias", (kv,), F32)]
        return out + [("output_norm.weight", (s.embedding,), F32), ("output.weight", (s.embedding, self.vocabulary),
                                                                    Q6_K)]


def use_more_bits(layer: int, layers: int) -> bool:
    """llama-quant.cpp's choice of the layers whose attn_v and ffn_down a Q4_K_M keeps at Q6_K."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def nbytes(dims: tuple[int, ...], kind: gguf.GGMLQuantizationType) -> int:
    block, size = gguf.GGML_QUANT_SIZES[kind]
    return int(np.prod(dims)) // block * size


LLAMA_8B = Model("Llama 3.1 8B Instruct", "llama", Shape(32, 4096, 32, 8, 128, 128), 128_256, 14_336, 131_072,
                 8_030_261_248, 4_920_739_232, rope_freqs=True)
QWEN_14B = Model("Qwen2.5 14B Instruct", "qwen2", Shape(48, 5120, 40, 8, 128, 128), 152_064, 13_824, 32_768,
                 14_770_033_664, 8_988_110_976, biases=True)
LLAMA_70B = Model("Llama 3.1 70B Instruct", "llama", Shape(80, 8192, 64, 8, 128, 128), 128_256, 28_672, 131_072,
                  70_553_706_496, 42_520_395_584, rope_freqs=True, seventy=True)
MODELS = {"8b": LLAMA_8B, "14b": QWEN_14B, "70b": LLAMA_70B}


def write_sparse_gguf(path: Path, model: Model) -> Path:
    """The model's header as GGUFWriter writes it, then the file extended, sparse, to where its last tensor ends."""
    writer = gguf.GGUFWriter(path, model.arch)
    writer.add_name(model.name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.add_context_length(model.context_length)
    writer.add_block_count(model.shape.layers)
    writer.add_embedding_length(model.shape.embedding)
    writer.add_feed_forward_length(model.ffn)
    writer.add_head_count(model.shape.heads)
    writer.add_head_count_kv(model.shape.kv_heads)
    writer.add_rope_freq_base(500_000.0 if model.arch == "llama" else 1_000_000.0)
    writer.add_layer_norm_rms_eps(1e-5 if model.arch == "llama" else 1e-6)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"t{i}" for i in range(model.vocabulary)])
    writer.add_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}")
    end = 0
    for name, dims, kind in model.tensors():
        # GGUFWriter takes numpy's order (outermost first) and writes it reversed, as GGUF keeps it
        writer.add_tensor_info(name, tuple(reversed(dims)), np.dtype(np.float32), nbytes(dims, kind), raw_dtype=kind)
        end = gguf.GGUFWriter.ggml_pad(end, ALIGNMENT) + nbytes(dims, kind)  # the writer's offsets, padded
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    assert writer.fout is not None
    start = gguf.GGUFWriter.ggml_pad(writer.fout[0].tell(), ALIGNMENT)  # the tensor data starts here, aligned
    writer.close()
    with path.open("r+b") as handle:
        handle.truncate(start + end)  # a hole: no disk used
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("big-headers")
    return {key: write_sparse_gguf(folder / f"{key}.gguf", model) for key, model in MODELS.items()}


@pytest.fixture(scope="module")
def summaries(files: dict[str, Path]) -> dict[str, GGUFSummary]:
    return {key: read_gguf(path) for key, path in files.items()}


def made_up(gpus: list[tuple[str, int]], *, ram_gib: int = 64, offload: bool | None = None) -> devices.Machine:
    """A machine from ``LYRA_GPU_DEVICES``, as a person's what-if gives it: GPUs (name, MiB, all free), RAM."""
    data: dict[str, object] = {"gpus": [{"name": name, "total_mib": mib} for name, mib in gpus],
                               "ram_total_mib": ram_gib * 1024, "ram_free_mib": ram_gib * 1024}
    if offload is not None:
        data["offload"] = offload
    return devices.probe({devices.FAKE_DEVICES_ENV: json.dumps(data)})


RTX_4070 = [("RTX 4070", 12_282)]  # a "12 GB" card
RTX_4090 = [("RTX 4090", 24_564)]  # a "24 GB" card


def test_read_gguf_reads_the_big_headers_of_sparse_files(files: dict[str, Path],
                                                         summaries: dict[str, GGUFSummary]) -> None:
    for key, model in MODELS.items():
        summary, path = summaries[key], files[key]
        assert path.stat().st_blocks * 512 < 16 * MIB  # sparse: the header only
        assert (summary.architecture, summary.quantization, summary.name) == (model.arch, "Q4_K_M", model.name)
        assert abs(summary.parameters - model.parameters) / model.parameters < 0.01, key
        assert abs(summary.size - model.file_size) / model.file_size < 0.005, key  # Q4_K_M's types, approximately
        assert (summary.context_length, summary.vocabulary, summary.chat_template) == (
            model.context_length, model.vocabulary, True)
        tensors = model.tensors()
        assert summary.tensors == len(tensors)
        assert summary.block_bytes == sum(nbytes(d, k) for n, d, k in tensors if n.startswith("blk."))
        assert summary.output_bytes == sum(nbytes(d, k) for n, d, k in tensors if n.startswith("output"))


def test_the_reference_reader_agrees_the_file_ends_where_its_last_tensor_does(files: dict[str, Path]) -> None:
    """The gguf package's own reader (llama.cpp's layout) accepts the sparse 70B and finds every tensor whole."""
    reader = gguf.GGUFReader(files["70b"])
    last = reader.tensors[-1]
    assert (last.name, len(reader.tensors)) == ("output.weight", len(LLAMA_70B.tensors()))
    assert last.data_offset + last.n_bytes == files["70b"].stat().st_size
    assert all(t.data_offset % ALIGNMENT == 0 for t in reader.tensors)


def test_the_shape_is_config_jsons_and_the_kv_cache_llama_cpps(summaries: dict[str, GGUFSummary]) -> None:
    for key, model in MODELS.items():
        assert fit.shape_of(summaries[key]) == model.shape, key

    def kv_mib(key: str, n_ctx: int) -> float:
        need = fit.need_of_file(summaries[key], n_ctx, role="chat")
        assert need is not None
        return need.kv_cache / MIB

    # llama.cpp's "KV self size" (f16 K and V)
    assert kv_mib("8b", 8192) == 1024 and kv_mib("8b", 32768) == 4096
    assert kv_mib("70b", 8192) == 2560 and kv_mib("70b", 32768) == 10240
    assert kv_mib("14b", 8192) == 1536 and kv_mib("14b", 32768) == 6144


def test_the_weights_are_the_files_size_split_as_llama_cpp_loads_them(summaries: dict[str, GGUFSummary]) -> None:
    for key, model in MODELS.items():
        summary = summaries[key]
        need = fit.need_of_file(summary, 8192, role="chat")
        assert need is not None and need.layers == model.shape.layers and need.of_layers == model.shape.layers + 1
        assert abs(need.weights - summary.size) <= 1 * MIB, key
        # what stays in RAM is the token embeddings (and the header, rope_freqs): never on the GPU
        embeddings = nbytes((model.shape.embedding, model.vocabulary), Q4_K)
        assert embeddings <= need.ram_bytes <= embeddings + 8 * MIB, key
        assert need.layer_sizes == tuple(sum(nbytes(d, k) for n, d, k in model.tensors() if n.startswith(f"blk.{i}."))
                                         for i in range(model.shape.layers)), key
        assert abs(need.on_gpu(-1) - (need.total - need.ram_bytes)) < need.layers, key  # all but the RAM part
    eight = fit.need_of_file(summaries["8b"], 8192, role="chat")
    assert eight is not None  # fit.py's docstring: 131 MB a layer, 431 MB output
    assert round(eight.layer_bytes / 1e6) == 131 and round(eight.output_bytes / 1e6) == 431


def test_where_each_fits_on_made_up_machines_with_and_without_a_gpu(summaries: dict[str, GGUFSummary]) -> None:
    def placed(key: str, n_ctx: int, machine: devices.Machine) -> fit.Placement:
        need = fit.need_of_file(summaries[key], n_ctx, role="chat")
        assert need is not None
        return fit.place(need, machine)

    twelve, twenty_four = made_up(RTX_4070), made_up(RTX_4090)
    assert twelve.source.startswith(devices.FAKE_DEVICES_ENV) and twelve.offload
    eight = placed("8b", 8192, twelve)
    assert (eight.kind, eight.layers, eight.of_layers, eight.text) == ("gpu", 33, 33, "fits on the GPU")
    assert placed("14b", 32768, twenty_four).kind == "gpu"
    partly = placed("14b", 32768, twelve)  # its 6 GiB KV cache does not fit beside 8.4 GB of weights
    assert partly.kind == "partial" and 30 <= partly.layers < 49 and partly.of_layers == 49
    assert partly.text == f"partly on the GPU ({partly.layers} of 49 layers)"
    big = placed("70b", 8192, twenty_four)  # about 0.55 GB a layer with its KV cache, in about 23 GB
    assert big.kind == "partial" and big.of_layers == 81 and 36 <= big.layers <= 46
    assert big.text == f"partly on the GPU ({big.layers} of 81 layers)" and big.n_gpu_layers == big.layers
    assert placed("70b", 8192, twelve).layers < big.layers
    # no GPU (an empty device list): the CPU, or nowhere when RAM cannot hold it either
    assert placed("70b", 8192, made_up([], ram_gib=16)).kind == "too-big"
    assert placed("70b", 8192, made_up([], ram_gib=64)).text.startswith("on the CPU")
    assert placed("8b", 8192, made_up([], ram_gib=16)).text.startswith("on the CPU")
    assert placed("8b", 8192, made_up(RTX_4090, offload=False)).kind == "cpu"  # a GPU this build cannot use


def on_gpu_as_llama_cpp_loads(model: Model, need: fit.Need, n_gpu_layers: int) -> int:
    """The bytes the vendored llama.cpp puts on the GPU for ``n_gpu_layers``, from the tensor list itself:
    ``i_gpu_start = n_layer + 1 - n_gpu_layers`` (``llama-model.cpp``), the output layer at ``il = n_layer``,
    so the output first, then the repeating layers from the last one back, each with its KV cache."""
    first = model.shape.layers + 1 - n_gpu_layers  # i_gpu_start
    weights = sum(nbytes(d, k) for n, d, k in model.tensors()
                  if n.startswith("output") or (n.startswith("blk.") and int(n.split(".")[1]) >= first))
    return weights + (model.shape.layers - first) * need.kv_layer_bytes + need.compute_bytes


def test_every_n_gpu_layers_counts_what_llama_cpp_puts_on_the_gpu(summaries: dict[str, GGUFSummary]) -> None:
    """``n_gpu_layers`` N puts the output layer (0.4-0.9 GB at Q6_K) and the last N - 1 repeating layers (a Q4_K_M's
    heaviest: Q6_K ffn_down) on the GPU. Counting N average layers and no output instead under-counted by
    0.3-0.6 GB (a 70B, a 14B), most of the margin kept free for the CUDA context."""
    for key, model in MODELS.items():
        need = fit.need_of_file(summaries[key], 8192, role="chat")
        assert need is not None
        assert [need.on_gpu(n) for n in range(1, need.of_layers + 1)] == [
            on_gpu_as_llama_cpp_loads(model, need, n) for n in range(1, need.of_layers + 1)], key
        assert need.on_gpu(1) == need.output_bytes + need.compute_bytes  # the output layer alone


@pytest.mark.parametrize(("key", "n_ctx", "gpus"), [("70b", 8192, RTX_4090), ("70b", 8192, RTX_4070),
                                                     ("14b", 32768, RTX_4070), ("8b", 32768, [("RTX 3050", 6144)])])
def test_a_partial_placement_fits_as_llama_cpp_loads_it(summaries: dict[str, GGUFSummary], key: str, n_ctx: int,
                                                        gpus: list[tuple[str, int]]) -> None:
    model, machine = MODELS[key], made_up(gpus)
    need = fit.need_of_file(summaries[key], n_ctx, role="chat")
    assert need is not None
    placement = fit.place(need, machine)
    assert placement.kind == "partial", placement
    real = on_gpu_as_llama_cpp_loads(model, need, placement.layers)
    assert placement.gpu_bytes == real <= fit.room(machine) < on_gpu_as_llama_cpp_loads(model, need,
                                                                                       placement.layers + 1)


@pytest.mark.models  # reads the tiny embedding model's header
def test_two_roles_through_the_settings_embed_first_chat_in_what_is_left(files: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    require_file(EMBED_GGUF)
    twelve = made_up(RTX_4070)

    def settings_at(n_ctx: int) -> Settings:
        toml = f'[models.chat]\npath = "{files["8b"]}"\nn_ctx = {n_ctx}\n'  # embed: the default, the real tiny model
        return settings_from_text(toml, tmp_path / "lyra.toml", {"LYRA_DATA_DIR": str(tmp_path / "data"),
                                                                 "LYRA_MODELS_DIR": str(MODELS_DIR)})

    for n_ctx, kind in ((16384, "gpu"), (65536, "partial")):  # a 2 GiB KV cache fits beside 4.9 GB; 8 GiB does not
        chosen = settings_at(n_ctx)
        spec = chosen.models.chat
        assert isinstance(spec, LocalModel) and chosen.model_path(spec) == files["8b"]
        plan = offload_plan(chosen, twelve)
        assert set(plan) == {"chat", "summary", "embed"}
        embed, chat = plan["embed"], plan["chat"]
        assert embed.placement is not None and chat.placement is not None
        assert (embed.n_gpu_layers, embed.placement.kind) == (-1, "gpu")  # placed first, whole
        need = fit.need_of_file(read_gguf(files["8b"]), n_ctx, role="chat", n_ubatch=spec.n_ubatch,
                                flash_attn=spec.flash_attn)
        assert need is not None and need.kv_cache == n_ctx // 8192 * 1024 * MIB
        assert chat.placement == fit.place(need, twelve, gpu_used=embed.placement.gpu_bytes)  # in what embed left
        assert chat.placement.kind == kind
        assert f"{n_ctx:,}-token KV cache" in chat.reason and "on the RTX 4070" in chat.reason
        assert fit.gpu_bytes(plan) == embed.placement.gpu_bytes + chat.placement.gpu_bytes <= fit.room(twelve)
        if kind == "gpu":
            assert chat.placement.gpu_bytes == need.on_gpu(-1) > need.kv_cache  # the whole KV cache counted
        else:
            assert chat.reason.startswith(f"auto → {chat.placement.layers} of 33 layers on the RTX 4070 (")
            beside = embed.placement.gpu_bytes + need.on_gpu(chat.placement.layers + 1)
            assert beside > fit.room(twelve)  # one more layer would not fit beside the embedding model
        assert plan["summary"].reason == f"chat's model: {chat.reason}"  # the summary shares chat's model
