"""The CLIP embedder: offline default model, cache, standard architectures, and its quality bars."""

from __future__ import annotations

import numpy as np
import open_clip
import pytest
import torch

from embodmem.embedding.embedder import ClipEmbedder
from embodmem.embedding.frames import TEST_WORLDS, render_frames
from embodmem.embedding.model import DEFAULT_CHECKPOINT, create
from embodmem.embedding.quality import evaluate


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedder(threads=1)


def test_default_model_ships_and_is_small() -> None:
    assert DEFAULT_CHECKPOINT.is_file()
    assert DEFAULT_CHECKPOINT.stat().st_size < 20 * 2**20


def test_images_and_texts_become_unit_vectors(embedder: ClipEmbedder) -> None:
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 255, (5, 64, 64, 3), dtype=np.uint8)
    v = embedder.embed_images(imgs)
    t = embedder.embed_texts(["find a sunken ship", "open water"])
    assert v.shape == (5, embedder.dim) and t.shape == (2, embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, atol=1e-5)
    # other sizes are resized to the model's input
    assert embedder.embed_images(rng.integers(0, 255, (2, 96, 96, 3), dtype=np.uint8)).shape == (2, embedder.dim)


def test_identical_frames_are_embedded_once(embedder: ClipEmbedder) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 255, (2, 64, 64, 3), dtype=np.uint8)
    before = embedder.frames_embedded
    first = embedder.embed_images(np.stack([a, a, b]))
    assert embedder.frames_embedded - before == 2  # a once, b once
    again = embedder.embed_images(np.stack([b, a]))
    assert embedder.frames_embedded - before == 2  # both from the cache
    np.testing.assert_array_equal(again, first[[2, 0]])
    uncached = ClipEmbedder(cache_size=0, threads=1).embed_images(np.stack([a]))
    np.testing.assert_allclose(uncached[0], first[0], atol=1e-5)


def test_bad_inputs_are_refused(embedder: ClipEmbedder) -> None:
    with pytest.raises(ValueError, match="uint8"):
        embedder.embed_images(np.zeros((1, 64, 64, 3), np.float32))
    with pytest.raises(ValueError, match="list of strings"):
        embedder.embed_texts("a string")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown open_clip architecture 'ViT-Q-99'"):
        ClipEmbedder("ViT-Q-99", None)
    with pytest.raises(ValueError, match="does not exist"):
        ClipEmbedder(pretrained="/nonexistent/weights.pt")


def test_standard_architecture_loads_from_a_local_checkpoint(tmp_path) -> None:
    """A user with real CLIP weights switches by config: model=ViT-B-32 pretrained=PATH."""
    torch.manual_seed(0)
    model = open_clip.create_model("ViT-B-32", pretrained=None)
    path = tmp_path / "vit_b_32.pt"
    torch.save(model.state_dict(), path)
    emb = ClipEmbedder("ViT-B-32", path, batch_size=4, threads=1)
    assert emb.image_size == 224 and emb.dim == 512
    img = np.random.default_rng(0).integers(0, 255, (1, 64, 64, 3), dtype=np.uint8)
    got = emb.embed_images(img)[0]
    x = emb._preprocess(img)
    with torch.inference_mode():
        want = model.eval().encode_image(x, normalize=True)[0].numpy()
    np.testing.assert_allclose(got, want, atol=1e-4)  # the weights on disk are the ones used


def test_quality_bars_on_unseen_worlds(embedder: ClipEmbedder) -> None:
    """Precision@5 of mission-text retrieval >= 0.9 per kind and light; zero-shot accuracy >= 0.9.

    A CI-sized version of benchmarks/bench_embedder.py: worlds the model never saw in training.
    """
    frames = render_frames(TEST_WORLDS[:12], 120, seed=123, progress=False)
    vectors = embedder.embed_images(frames.images)
    res = evaluate(vectors, frames, embedder.embed_texts)
    assert res["min_p@5"] >= 0.9, {k: v for k, v in res.items() if k.startswith("p@5")}
    assert res["min_acc"] >= 0.9, {k: v for k, v in res.items() if k.startswith("acc")}


def test_random_weights_fail_the_quality_bars() -> None:
    """The quality test can fail: an untrained model of the same architecture does."""
    emb = ClipEmbedder(pretrained=None, threads=1)
    frames = render_frames(TEST_WORLDS[:4], 60, seed=5, progress=False)
    res = evaluate(emb.embed_images(frames.images), frames, emb.embed_texts)
    assert res["min_acc"] < 0.9
