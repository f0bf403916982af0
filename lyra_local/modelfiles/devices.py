"""What this machine has to run models on: its GPUs with their total and free memory, its RAM, and whether this
llama.cpp build can offload to a GPU at all.

Asked in order, the first that answers wins:
1. ``LYRA_GPU_DEVICES``, a made-up device list (tests, and a person's what-if: "would a 12 GB card fit
   Qwen 2.5 14B?"). A JSON list of GPUs, ``[{"name": "RTX 4070", "total_mib": 12282, "free_mib": 11500}]``
   (``[]``: no GPU), or an object ``{"gpus": [...], "ram_total_mib": ..., "ram_free_mib": ..., "offload": true}``.
   Made-up GPUs count as offloadable unless ``offload`` says otherwise. Not a setting: ``config`` skips it.
2. llama.cpp's own device list (``ggml_backend_dev_*`` in the ``libggml`` that llama-cpp-python ships; the
   Python package binds none of it, so through ctypes): the devices llama.cpp will place layers on, named as
   it names them, with the free memory it will see.
3. NVML (``libnvidia-ml.so.1``, the driver's own library), through ctypes: a GPU that this build cannot use is
   still worth naming ("an RTX 4070 is here, but this llama.cpp has no GPU offload").
4. ``nvidia-smi``.
5. None: CPU only.

``probe`` never raises: a library missing or answering oddly is the next source's turn, and the answer says
which source it came from. It is asked once per process (the free memory measured before Lyra loaded its own
models, so that a reload plans against the same memory as the start did).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FAKE_DEVICES_ENV = "LYRA_GPU_DEVICES"
MIB = 1 << 20
GB = 1 << 30  # as cards are sold: a "12 GB" card has 12,282 MiB, an H200 "141 GB" shows 139
_GPU_TYPES = (1, 2)  # ggml_backend_dev_type: CPU 0, GPU 1, IGPU 2 (integrated, on host memory), ACCEL 3, META 4


@dataclass(frozen=True)
class Gpu:
    """One GPU as its driver reports it (bytes)."""

    name: str
    total: int
    free: int
    index: int


@dataclass(frozen=True)
class Machine:
    """Everything the placement of models depends on (bytes)."""

    gpus: tuple[Gpu, ...]
    ram_total: int
    ram_free: int
    offload: bool  # this llama.cpp build can offload layers to a GPU
    source: str  # where the GPU list came from: "llama.cpp", "NVML", "nvidia-smi", "LYRA_GPU_DEVICES (…)", or why none
    # RAM's bytes a second; None: this machine's, measured when first asked (``memory_bandwidth``: placing models on
    # the GPU at start-up needs none of it); 0: unknown
    bandwidth: float | None = 0.0

    def bytes_a_second(self) -> float:
        return memory_bandwidth() if self.bandwidth is None else self.bandwidth

    @property
    def vram_total(self) -> int:
        return sum(gpu.total for gpu in self.gpus)

    @property
    def vram_free(self) -> int:
        return sum(gpu.free for gpu in self.gpus)

    def gpu_names(self) -> str:
        """"the NVIDIA H200", "2 GPUs (RTX 4090, RTX 4090)", "no GPU"."""
        if not self.gpus:
            return "no GPU"
        if len(self.gpus) == 1:
            return f"the {self.gpus[0].name}"
        return f"{len(self.gpus)} GPUs ({', '.join(gpu.name for gpu in self.gpus)})"

    def describe(self) -> str:
        """One line for `lyra doctor` and the first-run guide."""
        ram = f"{gb(self.ram_total)} RAM ({gb(self.ram_free)} free)"
        if not self.gpus:
            return f"no GPU ({self.source}); {ram}"
        cards = "; ".join(f"{gpu.name}, {gb(gpu.total)} ({gb(gpu.free)} free)" for gpu in self.gpus)
        build = "" if self.offload else "; this llama.cpp build has no GPU offload"
        return f"{cards} (from {self.source}){build}; {ram}"


def gb(size: int) -> str:
    """Bytes as a person reads a card's memory: "12 GB", "139 GB", "5.1 GB", "210 MB"."""
    value = size / GB
    if value < 1:
        return f"{size / MIB:.0f} MB"
    return f"{value:.0f} GB" if value >= 10 else f"{value:.1f} GB"


def probe(env: Mapping[str, str] | None = None) -> Machine:
    """This machine (or the made-up one in ``LYRA_GPU_DEVICES``); asked once per process, per made-up list."""
    env = os.environ if env is None else env
    return _probe(env.get(FAKE_DEVICES_ENV))


@functools.lru_cache(maxsize=8)
def _probe(fake: str | None) -> Machine:
    ram_total, ram_free = ram()
    if fake is not None:
        return _made_up(fake, ram_total, ram_free)
    offload = offload_supported()
    for source, read in (("llama.cpp", _llama_cpp_gpus), ("NVML", _nvml_gpus), ("nvidia-smi", _smi_gpus)):
        try:
            gpus = read()
        except Exception:  # noqa: BLE001 - any failure of a driver library is the next source's turn
            continue
        if gpus:
            return Machine(gpus, ram_total, ram_free, offload, source, None)
    return Machine((), ram_total, ram_free, offload, "llama.cpp's device list, NVML and nvidia-smi name none", None)


BANDWIDTH_BYTES = 64 * MIB  # copied to measure RAM's speed: larger than any CPU cache, a few tens of ms


@functools.cache
def memory_bandwidth() -> float:
    """RAM's bytes a second, measured once per process by copying ``BANDWIDTH_BYTES`` (the best of three; a copy
    reads and writes each byte). On a CPU a model writes each token by reading all its weights, so this bounds
    how fast it can talk (``fit.words_a_second``)."""
    import time

    import numpy as np

    source = np.ones(BANDWIDTH_BYTES, dtype=np.uint8)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - started)
    return 2 * BANDWIDTH_BYTES / max(best, 1e-6)


def offload_supported() -> bool:
    """Whether this llama-cpp-python build can offload layers to a GPU (False when it cannot be imported)."""
    try:
        import llama_cpp

        return bool(llama_cpp.llama_supports_gpu_offload())
    except (ImportError, OSError, AttributeError):
        return False


def ram() -> tuple[int, int]:
    """Total and available RAM in bytes (/proc/meminfo; else sysconf, free unknown: taken as total)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in handle if line.count(":") == 1
                      and len(line.split()) >= 2 and line.split()[1].isdigit()}
        return fields["MemTotal"], fields.get("MemAvailable", fields.get("MemFree", fields["MemTotal"]))
    except (OSError, KeyError, ValueError):
        pass
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        try:
            free = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (ValueError, OSError):
            free = total
        return total, free
    except (ValueError, OSError, AttributeError):
        return 0, 0


def _made_up(text: str, ram_total: int, ram_free: int) -> Machine:
    """The machine ``LYRA_GPU_DEVICES`` describes; one that cannot be read is said so as its source."""
    try:
        data: Any = json.loads(text)
        if isinstance(data, list):
            data = {"gpus": data}
        gpus = tuple(Gpu(str(item["name"]), int(item["total_mib"]) * MIB,
                         int(item.get("free_mib", item["total_mib"])) * MIB, index)
                     for index, item in enumerate(data["gpus"]))
        return Machine(gpus, int(data.get("ram_total_mib", ram_total // MIB)) * MIB,
                       int(data.get("ram_free_mib", ram_free // MIB)) * MIB,
                       bool(data.get("offload", bool(gpus))), f"{FAKE_DEVICES_ENV} (made up, not this machine)",
                       float(data["bandwidth_gbs"]) * 1e9 if "bandwidth_gbs" in data else None)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return Machine((), ram_total, ram_free, False, f"{FAKE_DEVICES_ENV} unreadable ({exc!r}), so no GPU")


def _llama_cpp_gpus() -> tuple[Gpu, ...]:
    """The GPUs in llama.cpp's device registry (the same list and free memory its layer split will use)."""
    from llama_cpp._ggml import libggml

    lib: Any = libggml
    lib.ggml_backend_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_dev_count.argtypes = []
    lib.ggml_backend_dev_get.restype = ctypes.c_void_p
    lib.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    for function in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
        getattr(lib, function).restype = ctypes.c_char_p
        getattr(lib, function).argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_type.restype = ctypes.c_int
    lib.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_memory.restype = None
    lib.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                                            ctypes.POINTER(ctypes.c_size_t)]
    gpus: list[Gpu] = []
    for index in range(int(lib.ggml_backend_dev_count())):
        device = lib.ggml_backend_dev_get(index)
        if not device or lib.ggml_backend_dev_type(device) not in _GPU_TYPES:
            continue
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        lib.ggml_backend_dev_memory(device, ctypes.byref(free), ctypes.byref(total))
        name = bytes(lib.ggml_backend_dev_description(device) or lib.ggml_backend_dev_name(device) or b"GPU")
        gpus.append(Gpu(name.decode("utf-8", "replace"), int(total.value), int(free.value), len(gpus)))
    return tuple(gpus)


class _NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def _nvml_gpus() -> tuple[Gpu, ...]:
    """NVIDIA GPUs through the driver's NVML library (present wherever the driver is, CUDA toolkit or not)."""
    nvml: Any = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() != 0:
        return ()
    try:
        count = ctypes.c_uint(0)
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return ()
        gpus = []
        for index in range(count.value):
            handle = ctypes.c_void_p()
            memory = _NvmlMemory()
            name = ctypes.create_string_buffer(96)
            if (nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0
                    or nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)) != 0):
                continue
            nvml.nvmlDeviceGetName(handle, name, ctypes.c_uint(len(name)))
            gpus.append(Gpu(name.value.decode("utf-8", "replace") or f"GPU {index}", int(memory.total),
                            int(memory.free), index))
        return tuple(gpus)
    finally:
        nvml.nvmlShutdown()


def _smi_gpus() -> tuple[Gpu, ...]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ()
    done = subprocess.run([smi, "--query-gpu=index,name,memory.total,memory.free", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, timeout=10, check=True)
    gpus = []
    for line in done.stdout.splitlines():
        index, name, total, free = (part.strip() for part in line.split(","))
        gpus.append(Gpu(name, int(total) * MIB, int(free) * MIB, int(index)))
    return tuple(gpus)
