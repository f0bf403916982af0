"""What this machine has (modelfiles/devices.py): llama.cpp's own device list, NVML, nvidia-smi, RAM, and the
made-up device list (LYRA_GPU_DEVICES) for tests and a person's what-if."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lyra_local.config import settings_from_text
from lyra_local.modelfiles import devices
from lyra_local.modelfiles.devices import FAKE_DEVICES_ENV, GB, MIB, Gpu, Machine


def test_a_made_up_gpu_list_is_this_machine_for_planning_and_says_so() -> None:
    listed = [{"name": "RTX 4070", "total_mib": 12282, "free_mib": 11500},
              {"name": "RTX 3060", "total_mib": 12288}]
    machine = devices.probe({FAKE_DEVICES_ENV: json.dumps(listed)})
    assert machine.gpus == (Gpu("RTX 4070", 12282 * MIB, 11500 * MIB, 0), Gpu("RTX 3060", 12288 * MIB, 12288 * MIB, 1))
    assert machine.offload and "made up" in machine.source
    assert machine.vram_total == (12282 + 12288) * MIB and machine.vram_free == (11500 + 12288) * MIB
    assert machine.gpu_names() == "2 GPUs (RTX 4070, RTX 3060)"
    assert machine.describe().startswith("RTX 4070, 12 GB (11 GB free); RTX 3060, 12 GB (12 GB free) (from "
                                         "LYRA_GPU_DEVICES (made up")


def test_the_object_form_sets_ram_and_a_build_without_offload() -> None:
    text = json.dumps({"gpus": [{"name": "NVIDIA H200", "total_mib": 143771}], "ram_total_mib": 16384,
                       "ram_free_mib": 8192, "offload": False})
    machine = devices.probe({FAKE_DEVICES_ENV: text})
    assert (machine.ram_total, machine.ram_free, machine.offload) == (16 * GB, 8 * GB, False)
    assert machine.gpu_names() == "the NVIDIA H200"
    assert machine.describe().endswith("; this llama.cpp build has no GPU offload; 16 GB RAM (8.0 GB free)")


@pytest.mark.parametrize("text", ["[]", "not json", '[{"name": "x"}]', '{"gpus": 3}', "null", '[{"total_mib": "a"}]'])
def test_an_empty_or_unreadable_list_is_no_gpu_and_never_an_error(text: str) -> None:
    machine = devices.probe({FAKE_DEVICES_ENV: text})
    assert machine.gpus == () and machine.ram_total > 0
    assert machine.describe().startswith("no GPU (LYRA_GPU_DEVICES")
    assert ("unreadable" in machine.source) == (text != "[]")


def test_this_machine_is_probed_without_raising_and_says_where_from() -> None:
    machine = devices.probe({})
    assert machine is devices.probe({})  # asked once per process
    assert machine.offload == devices.offload_supported()
    assert machine.ram_total >= machine.ram_free > 0
    if machine.gpus:
        assert machine.source in ("llama.cpp", "NVML", "nvidia-smi")
        assert all(gpu.total >= gpu.free >= 0 and gpu.name for gpu in machine.gpus)
    else:
        assert machine.source == "llama.cpp's device list, NVML and nvidia-smi name none"


def test_llama_cpps_device_list_is_read_and_a_cpu_build_lists_no_gpu() -> None:
    gpus = devices._llama_cpp_gpus()  # the ctypes binding against the libggml llama-cpp-python ships
    assert isinstance(gpus, tuple)
    if not devices.offload_supported():
        assert gpus == ()  # its only device is the CPU


def test_ram_comes_from_proc_meminfo() -> None:
    total, free = devices.ram()
    meminfo = Path("/proc/meminfo").read_text(encoding="ascii")
    kib = int(next(line for line in meminfo.splitlines() if line.startswith("MemTotal:")).split()[1])
    assert total == kib * 1024 and 0 < free <= total


def test_nvidia_smi_is_read_when_it_is_the_only_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\necho '0, NVIDIA GeForce RTX 4090, 24564, 23000'\n"
                      "echo '1, NVIDIA GeForce RTX 4090, 24564, 24100'\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert devices._smi_gpus() == (Gpu("NVIDIA GeForce RTX 4090", 24564 * MIB, 23000 * MIB, 0),
                                   Gpu("NVIDIA GeForce RTX 4090", 24564 * MIB, 24100 * MIB, 1))


def test_sizes_read_as_cards_are_sold() -> None:
    assert [devices.gb(n) for n in (12282 * MIB, 143771 * MIB, int(5.1 * GB), 210 * MIB)] == [
        "12 GB", "140 GB", "5.1 GB", "210 MB"]


def test_the_made_up_list_is_not_a_setting() -> None:
    settings = settings_from_text(None, None, {FAKE_DEVICES_ENV: "[]", "LYRA_DATA_DIR": "/tmp/x"})
    assert settings.data_dir == Path("/tmp/x")  # not refused as an unknown key


def test_a_machine_without_gpus_describes_itself() -> None:
    machine = Machine((), 8 * GB, 4 * GB, False, "none here")
    assert machine.describe() == "no GPU (none here); 8.0 GB RAM (4.0 GB free)"
