"""The CLIP embedder: offline default model, cache, standard architectures, and its quality bars."""

from __future__ import annotations

import numpy as np
import open_clip
import pytest
import torch
import torch.nn.functional as F

from embodmem.embedding.checkpoints import DEFAULT_CHECKPOINT, DEFAULT_MODEL, VARIANTS_CHECKPOINT
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.embedding.export import export_frame_encoder, frame_graph_path, load_frame_session
from embodmem.embedding.frames import TEST_WORLDS, render_frames
from embodmem.embedding.model import CLIP_MEAN, CLIP_STD
from embodmem.embedding.quality import evaluate, evaluate_variants


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


def test_a_texts_vector_depends_on_the_text_alone(embedder: ClipEmbedder) -> None:
    """Not on the strings embedded with it or before it: a batch's matrix products round the last bits
    differently for each batch size (8 strings at once differ from one at a time in most of their
    components), so a mission's vector, and a decision on a threshold, would depend on what the
    process had embedded before."""
    texts = [
        "find a sunken ship", "open water", "the empty seabed", "a photo of red oil drums underwater",
        "a reef", "rocks", "a mining robot", "find an aircraft wreck in deep water",
    ]  # fmt: skip
    together = ClipEmbedder(threads=1).embed_texts(texts)
    embedder.embed_texts(texts[3:5])  # some cached first, by another call
    one_by_one = np.stack([embedder.embed_text(t) for t in reversed(texts)])[::-1]
    np.testing.assert_array_equal(together, one_by_one)


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


def test_single_frames_run_on_onnx_runtime_and_agree_with_torch(embedder: ClipEmbedder) -> None:
    """The shipped ONNX graph belongs to the shipped checkpoint and gives torch's vectors."""
    assert frame_graph_path(DEFAULT_CHECKPOINT, 64).is_file()
    assert embedder._frame_session(64, 64) is not None
    imgs = np.random.default_rng(2).integers(0, 255, (4, 64, 64, 3), dtype=np.uint8)
    one_at_a_time = np.concatenate([embedder.embed_images(img[None]) for img in imgs])
    with torch.inference_mode():
        batched = embedder.encoder(torch.from_numpy(imgs)).numpy()
    np.testing.assert_allclose(one_at_a_time, batched, atol=1e-5)
    torch_only = ClipEmbedder(threads=1, runtime="torch", cache_size=0)
    np.testing.assert_allclose(torch_only.embed_images(imgs[:1]), batched[:1], atol=1e-5)
    with pytest.raises(ValueError, match="runtime='tensorrt' is not one of auto, onnx, torch"):
        ClipEmbedder(runtime="tensorrt")


def test_a_frames_vector_does_not_depend_on_its_batch() -> None:
    """On the CPU several frames take the batch graph, as the lockstep's cache pass does: a frame
    embeds to the same bits alone in the cache pass, with one other frame or with four."""
    imgs = np.random.default_rng(3).integers(0, 255, (5, 64, 64, 3), dtype=np.uint8)
    embedder = ClipEmbedder(threads=1, cache_size=0)
    five = embedder.embed_images(imgs)
    assert np.array_equal(embedder.embed_images(imgs[[4, 1]]), five[[4, 1]])
    cached = ClipEmbedder(threads=1)
    cached.cache_frames(imgs[2:3])
    assert np.array_equal(cached.embed_images(imgs[2:3]), five[2:3])


def test_a_graph_exported_from_another_checkpoint_is_refused(tmp_path) -> None:
    """Retraining changes the checkpoint; the old graph must then never run. (96-px frames: the graph resizes.)"""
    ckpt = tmp_path / "tiny.pt"
    ckpt.write_bytes(DEFAULT_CHECKPOINT.read_bytes())
    export_frame_encoder(DEFAULT_MODEL, ckpt, frame_size=96)
    img = np.random.default_rng(3).integers(0, 255, (1, 96, 96, 3), dtype=np.uint8)
    fresh = ClipEmbedder(pretrained=ckpt, threads=1, runtime="onnx", cache_size=0)
    assert fresh._frame_session(96, 96) is not None
    with torch.inference_mode():
        np.testing.assert_allclose(fresh.embed_images(img), fresh.encoder(torch.from_numpy(img)).numpy(), atol=1e-5)
    state = torch.load(ckpt)
    state["visual.proj"] = state["visual.proj"].flip(1)
    torch.save(state, ckpt)  # "retrained"
    assert load_frame_session(ckpt, 96) is None
    with pytest.raises(ValueError, match="no ONNX graph for .*tiny.pt"):
        ClipEmbedder(pretrained=ckpt, threads=1, runtime="onnx").embed_images(img)
    auto = ClipEmbedder(pretrained=ckpt, threads=1, cache_size=0)  # falls back to torch, new weights
    with torch.inference_mode():
        want = auto.encoder(torch.from_numpy(img)).numpy()
    np.testing.assert_allclose(auto.embed_images(img), want, atol=1e-6)
    assert not np.allclose(fresh.embed_images(img), want, atol=1e-3)


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
    x = torch.from_numpy(img).permute(0, 3, 1, 2).float() / 255.0
    x = F.interpolate(x, size=(224, 224), mode="bilinear", align_corners=False, antialias=True)
    x = (x - torch.tensor(CLIP_MEAN).view(1, 3, 1, 1)) / torch.tensor(CLIP_STD).view(1, 3, 1, 1)
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


def test_variant_quality_bars_on_unseen_worlds() -> None:
    """Per appearance variant, on worlds with variants the variants CLIP never saw: the
    description mission's precision@5 >= 0.9 in shallow and deep water, and zero-shot accuracy among
    the kind's three variants >= 0.9 over each variant's frames. A CI-sized bench_embedder.py."""
    embedder = ClipEmbedder(pretrained=VARIANTS_CHECKPOINT, threads=1)
    frames = render_frames(TEST_WORLDS[:12], 120, seed=123, progress=False, variants=True)
    res = evaluate_variants(embedder.embed_images(frames.images), frames, embedder.embed_texts)
    assert res["min_vp@5"] >= 0.9, {k: v for k, v in res.items() if k.startswith("vp@5") and v < 0.9}
    low = {k: v for k, v in res.items() if k.startswith("vacc/") and res["vn/" + k[5:]] >= 20 and v < 0.9}
    assert not low, low


def test_random_weights_fail_the_quality_bars() -> None:
    """The quality test can fail: an untrained model of the same architecture does."""
    emb = ClipEmbedder(pretrained=None, threads=1)
    frames = render_frames(TEST_WORLDS[:4], 60, seed=5, progress=False)
    res = evaluate(emb.embed_images(frames.images), frames, emb.embed_texts)
    assert res["min_acc"] < 0.9
