"""The memory config group's files compose into valid MemoryConfigs (configs/memory/*.yaml)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from embodmem.app import CONFIG_DIR
from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig

GROUP = sorted(p.stem for p in (CONFIG_DIR / "memory").glob("*.yaml"))


@pytest.mark.parametrize("name", GROUP)
def test_memory_config_file_builds(name: str) -> None:
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"memory={name}"])
    fields = OmegaConf.to_container(cfg.memory, resolve=True)
    assert isinstance(fields, dict)
    MemoryConfig(**fields)  # type: ignore[arg-type]


def test_disk_config_is_the_benchmarked_one() -> None:
    """memory=disk: 64 B of code a frame in RAM, raw float16 vectors on disk, re-ranking; a small
    memory built from it stores, re-ranks and retrains."""
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["memory=disk", "memory.dim=16", "memory.train_min=500"])
    fields = OmegaConf.to_container(cfg.memory, resolve=True)
    assert isinstance(fields, dict)
    config = MemoryConfig(**(fields | {"dim": 128}))  # type: ignore[arg-type]
    assert config.bytes_hint == 64 and config.raw_vectors == "disk" and config.rerank == 128
    mem = AgentMemory(MemoryConfig(**(fields | {"index_factory": "IVF16,SQ4", "nprobe": 4})))  # type: ignore[arg-type]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1500, 16)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, v in enumerate(x):
            mem.observe(v, FrameMeta("r", "t", 0, i, float(i % 30), float(i // 30)))
        report = mem.sleep(retrain=True)
    assert mem.store.trained and report["retrained"] and mem.stats()["raw_disk_bytes"] == len(mem.store) * 32
    q = x[100] / np.linalg.norm(x[100])
    hits = mem.query(q, k=5, include_short_term=False)
    assert len(hits) == 5  # re-ranked from disk: the scores are exact on the stored raw vectors
    np.testing.assert_allclose([h.score for h in hits], mem.hit_vectors(hits) @ q, rtol=1e-5)
