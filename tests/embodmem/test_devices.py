"""The devices ``embedder.device`` accepts: torch's names, and only GPUs this machine has."""

from __future__ import annotations

import pytest

from embodmem.devices import DEVICE_FORMS, device_refusal, gpu_driver_present, usable_devices


@pytest.mark.parametrize("name", ["gpu", "GPU", "cuda:", "cuda:x", "cpu0", "", "tpu", "auto "])
def test_a_name_torch_does_not_use_is_refused_with_the_forms(name: str) -> None:
    assert device_refusal(name) == DEVICE_FORMS


@pytest.mark.parametrize("name", ["auto", "cpu", "cpu:0"])
def test_the_cpu_and_auto_are_always_usable(name: str) -> None:
    assert device_refusal(name) is None


def test_a_gpu_is_usable_exactly_when_this_machine_has_it() -> None:
    usable = usable_devices()
    assert usable[:2] == ["auto", "cpu"]
    for name in ["cuda", "cuda:0", "cuda:1", "cuda:99", "mps"]:
        refusal = device_refusal(name)
        assert (refusal is None) == (name in usable), (name, refusal)
        if refusal is not None:
            assert refusal.startswith(", ".join(usable))


@pytest.mark.skipif(gpu_driver_present(), reason="a machine with a GPU driver may have the GPU")
def test_without_a_gpu_driver_a_gpu_is_refused_naming_why() -> None:
    assert usable_devices() == ["auto", "cpu"]
    assert device_refusal("cuda") == "auto, cpu (this machine has no GPU that torch can use)"
