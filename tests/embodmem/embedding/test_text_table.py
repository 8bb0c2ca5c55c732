"""The text table beside a checkpoint: the same vectors as the text tower, ignored when stale, and a
CPU embedder that needs torch for nothing the project's own runs ask of it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from embodmem.devices import gpu_driver_present
from embodmem.embedding.checkpoints import DEFAULT_CHECKPOINT, DEFAULT_MODEL, NAMED_CHECKPOINTS
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.embedding.texts import load_text_table, project_texts, text_table_path, write_text_table


@pytest.mark.parametrize("name", sorted(NAMED_CHECKPOINTS))
def test_the_shipped_table_holds_what_the_text_tower_gives(name: str) -> None:
    checkpoint = NAMED_CHECKPOINTS[name]
    table = load_text_table(DEFAULT_MODEL, checkpoint)
    assert table is not None, f"no current text table for {checkpoint.name}: run python -m embodmem.embedding.export"
    texts = project_texts()
    assert list(table.vectors) == texts, "the project's texts changed: run python -m embodmem.embedding.export"
    tower = ClipEmbedder(DEFAULT_MODEL, checkpoint, runtime="torch", threads=1)
    np.testing.assert_allclose(np.stack([table.vectors[t] for t in texts]), tower.embed_texts(texts), rtol=0, atol=1e-6)
    assert table.logit_scale == tower.logit_scale and table.dim == tower.dim


def test_a_text_the_table_lacks_goes_through_the_tower() -> None:
    embedder = ClipEmbedder(threads=1)
    mission = "find a purple submarine"
    assert mission not in project_texts()
    np.testing.assert_array_equal(
        embedder.embed_texts([mission, "open water"]),
        ClipEmbedder(runtime="torch", threads=1).embed_texts([mission, "open water"]),
    )


def test_a_table_from_another_checkpoint_or_architecture_is_ignored(tmp_path: Path) -> None:
    from embodmem.embedding.model import create, save_checkpoint

    checkpoint = tmp_path / DEFAULT_CHECKPOINT.name
    shutil.copy(DEFAULT_CHECKPOINT, checkpoint)
    shutil.copy(text_table_path(DEFAULT_CHECKPOINT), text_table_path(checkpoint))
    assert load_text_table(DEFAULT_MODEL, checkpoint) is not None
    assert load_text_table("ViT-B-32", checkpoint) is None
    save_checkpoint(create(DEFAULT_MODEL, None), checkpoint)  # retrained: the table is stale now
    assert load_text_table(DEFAULT_MODEL, checkpoint) is None
    retrained = ClipEmbedder(DEFAULT_MODEL, checkpoint, threads=1)
    texts = ["open water", "a reef"]
    np.testing.assert_array_equal(
        retrained.embed_texts(texts),
        ClipEmbedder(DEFAULT_MODEL, checkpoint, runtime="torch", threads=1).embed_texts(texts),
    )
    assert not np.allclose(retrained.embed_texts(texts), ClipEmbedder(threads=1).embed_texts(texts), atol=1e-3)


def test_a_table_that_cannot_be_read_is_ignored(tmp_path: Path) -> None:
    checkpoint = tmp_path / DEFAULT_CHECKPOINT.name
    shutil.copy(DEFAULT_CHECKPOINT, checkpoint)
    table = text_table_path(checkpoint)
    whole = text_table_path(DEFAULT_CHECKPOINT).read_bytes()
    for broken in (whole[: len(whole) // 2], b"not a table"):
        table.write_bytes(broken)
        assert load_text_table(DEFAULT_MODEL, checkpoint) is None
    np.savez(table, model_name=np.array(DEFAULT_MODEL))  # its fields missing
    assert load_text_table(DEFAULT_MODEL, checkpoint) is None


def test_a_table_needs_one_vector_per_distinct_text(tmp_path: Path) -> None:
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"weights")
    with pytest.raises(ValueError, match="texts: 2 strings"):
        write_text_table(DEFAULT_MODEL, checkpoint, ["a", "b"], np.zeros((3, 4), np.float32), 1.0)
    with pytest.raises(ValueError, match="distinct: 1"):
        write_text_table(DEFAULT_MODEL, checkpoint, ["a", "a"], np.zeros((2, 4), np.float32), 1.0)
    assert list(tmp_path.iterdir()) == [checkpoint]


PROBE = """
import json, sys
import numpy as np
from embodmem.devices import device_refusal, resolve_device
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.embedding.texts import project_texts
assert device_refusal("cuda") is not None and device_refusal("cpu") is None  # the config's check
device = resolve_device("auto")
embedder = ClipEmbedder(device=device, threads=1)
frames = np.random.default_rng(0).integers(0, 255, (9, 64, 64, 3), dtype=np.uint8)
embedder.cache_frames(frames[:8])  # the lockstep runner's batch
embedder.embed_images(frames[8:])  # an agent's one frame
embedder.embed_texts(project_texts())
print(json.dumps([device, embedder.dim, embedder.logit_scale, sorted({"torch", "open_clip"} & set(sys.modules))]))
"""


@pytest.mark.skipif(gpu_driver_present(), reason="with a GPU driver, device=auto asks torch whether it sees a GPU")
def test_a_cpu_job_embeds_frames_and_the_projects_texts_without_torch(tmp_path: Path) -> None:
    """In a fresh interpreter: what a suite job asks of its embedder, and the config's check of the
    device, import neither torch nor open_clip (seconds of every job's start)."""
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, check=True)
    device, dim, logit_scale, imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert (device, dim, imported) == ("cpu", 128, [])
    assert logit_scale == ClipEmbedder(threads=1).logit_scale
    assert list(tmp_path.iterdir()) == []
