"""Throughput of the two floor costs on this machine's device: batched env steps and embedded frames.

    python benchmarks/throughput.py                       # the CPU here (Numba rays and torch rays on the CPU)
    python benchmarks/throughput.py --device cuda         # on a GPU: torch rays and float16 CLIP batches there

For each batch size B, ``B`` worlds (seeds 0..B-1) in one :class:`~embodmem.envs.vector.UnderwaterVectorEnv`
are stepped ``--steps`` times with random actions after one untimed step; steps/s counts world steps
(B per call), once per ray path (``EMBODMEM_RAY_DEVICE``: ``numba`` and the torch device). Then the
CLIP embeds batches of real frames from those worlds (the cache off: every frame goes through the
network): on the CPU through the ONNX batch graph a CPU job runs, and through torch in float32 and
float16. The float16 vectors are compared with the float32 ones: the largest cosine distance, the
share of frames whose recognition answer (the best of the twelve missions' text vectors) is the
same, and the share of query frames whose nearest stored frame is the same (retrieval from the other
frames). Writes ``benchmarks/results/throughput_<device>.md``.

Never a timed test: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from embodmem.embedding.embedder import HALF_COSINE_TOLERANCE, ClipEmbedder
from embodmem.envs.tasks import MISSIONS
from embodmem.envs.torch_kernels import RAY_DEVICE_VARIABLE
from embodmem.envs.vector import UnderwaterVectorEnv
from embodmem.provenance import Provenance, write_results_markdown

ROOT = Path(__file__).resolve().parent.parent
ACTION_SHARES = [0.15, 0.15, 0.4, 0.02, 0.1, 0.09, 0.09]


def env_steps_per_s(batch: int, steps: int, ray: str) -> tuple[float, np.ndarray]:
    """World steps per second of ``batch`` worlds stepped together with ray path ``ray``; the last frames."""
    os.environ[RAY_DEVICE_VARIABLE] = ray
    envs = UnderwaterVectorEnv(batch, world_seeds=list(range(batch)), task="wreck")
    envs.reset(seed=list(range(batch)))
    rng = np.random.default_rng(0)
    envs.step(rng.choice(7, size=batch, p=ACTION_SHARES))  # untimed: compiles, fills the device's tables
    started = time.perf_counter()
    for _ in range(steps):
        obs, *_ = envs.step(rng.choice(7, size=batch, p=ACTION_SHARES))
    seconds = time.perf_counter() - started
    envs.close()
    return batch * steps / seconds, np.asarray(obs["image"])


def frames_per_s(encode: Callable[[np.ndarray], np.ndarray], frames: np.ndarray, batch: int, repeats: int) -> float:
    """Frames per second through ``encode`` (an embedder's network, no cache) in batches of ``batch``."""
    chunk = frames[:batch] if len(frames) >= batch else np.resize(frames, (batch, *frames.shape[1:]))
    encode(chunk)  # untimed warm-up
    started = time.perf_counter()
    for _ in range(repeats):
        encode(chunk)
    return batch * repeats / (time.perf_counter() - started)


def agreement(full: np.ndarray, half: np.ndarray, texts: np.ndarray) -> tuple[float, float, float, float]:
    """Largest 1 - cosine between matching rows; share of equal best missions; share of equal nearest
    other frames (each frame a query against the rest); share whose float16 nearest frame is, in
    float32, within the cosine tolerance of the float32 nearest (an equally good answer: frames of
    one place are near-copies, and which of two ties comes first may flip)."""
    cos = np.sum(full * half, axis=1) / (np.linalg.norm(full, axis=1) * np.linalg.norm(half, axis=1))
    same_answer = float(np.mean(np.argmax(full @ texts.T, axis=1) == np.argmax(half @ texts.T, axis=1)))
    nearest = []
    for vectors in (full, half):
        scores = vectors @ vectors.T
        np.fill_diagonal(scores, -np.inf)
        nearest.append(np.argmax(scores, axis=1))
    exact = full @ full.T
    np.fill_diagonal(exact, -np.inf)
    rows = np.arange(len(full))
    as_good = exact[rows, nearest[1]] >= exact[rows, nearest[0]] - HALF_COSINE_TOLERANCE
    return float(np.max(1 - cos)), same_answer, float(np.mean(nearest[0] == nearest[1])), float(np.mean(as_good))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", default="auto", help="torch device for the torch rays and the CLIP (auto: CUDA if any)"
    )
    parser.add_argument("--batches", default="64,256,1024,4096", help="env batch sizes")
    parser.add_argument("--steps", type=int, default=5, help="timed batched steps per batch size")
    parser.add_argument("--embed-batches", default="64,256,1024", help="CLIP batch sizes")
    parser.add_argument("--repeats", type=int, default=3, help="timed CLIP batches per size")
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args()
    device = (
        "cuda"
        if args.device == "auto" and torch.cuda.is_available()
        else ("cpu" if args.device == "auto" else args.device)
    )
    if device == "cpu":
        torch.set_num_threads(1)  # as the app runs (embedder.threads=1): more threads only spin on a busy machine
    rays = ["numba", device] if device == "cpu" else [device]
    load = [os.getloadavg()[0]]
    lines = [
        f"Device: {torch.cuda.get_device_name(0) if device.startswith('cuda') else 'CPU'} (torch {torch.__version__}, "
        f"{torch.get_num_threads()} torch thread(s)). Other work on the machine shows in the load "
        "average at the end.",
        "",
        "### Batched env steps (task wreck, 64 px camera, 24 sonar beams; random actions)",
        "",
        "| B | " + " | ".join(f"steps/s, rays on {'Numba' if r == 'numba' else 'torch ' + r}" for r in rays) + " |",
        "|---:|" + "---:|" * len(rays),
    ]
    frames = None
    for batch in [int(b) for b in args.batches.split(",")]:
        cells = []
        for ray in rays:
            rate, images = env_steps_per_s(batch, args.steps, ray)
            frames = images if frames is None or len(images) > len(frames) else frames
            cells.append(f"{rate:,.0f}")
            print(f"B={batch} rays={ray}: {rate:,.0f} steps/s", flush=True)
        lines.append(f"| {batch} | " + " | ".join(cells) + " |")
    assert frames is not None
    full = ClipEmbedder(device=device, cache_size=0, runtime="torch", precision="fp32")
    half = ClipEmbedder(device=device, cache_size=0, runtime="torch", precision="fp16")
    embedders = [full, half]
    paths = {"torch float32": full._encode_torch, "torch float16": half._encode_torch}
    if device == "cpu":  # what a CPU job runs: the batch graph exported from the checkpoint
        embedders.append(onnx := ClipEmbedder(cache_size=0))
        paths = {"ONNX Runtime batch graph (a CPU job's path)": onnx._encode_batch, **paths}
    lines += [
        "",
        f"### CLIP frames embedded (the project's checkpoint, {frames.shape[1]} px frames, no cache)",
        "",
        "| batch | " + " | ".join(f"frames/s, {name}" for name in paths) + " |",
        "|---:|" + "---:|" * len(paths),
    ]
    for batch in [int(b) for b in args.embed_batches.split(",")]:
        for embedder in embedders:
            embedder.batch_size = batch
        rates = [frames_per_s(encode, frames, batch, args.repeats) for encode in paths.values()]
        print(f"embed batch {batch}: " + ", ".join(f"{r:,.0f} {n}" for n, r in zip(paths, rates)), flush=True)
        lines.append(f"| {batch} | " + " | ".join(f"{r:,.0f}" for r in rates) + " |")
    sample = frames[:1024]
    full.batch_size = half.batch_size = 256
    texts = full.embed_texts(list(MISSIONS))
    worst, same_answer, same_nearest, as_good = agreement(full._encode_torch(sample), half._encode_torch(sample), texts)
    load.append(os.getloadavg()[0])
    lines += [
        "",
        f"### float16 against float32 ({len(sample)} frames of the worlds above, on {device})",
        "",
        f"- largest 1 - cosine: {worst:.2e} (tolerance stated in embodmem/embedding/embedder.py: 1e-3)",
        f"- recognition answer (best of the {len(MISSIONS)} missions' text vectors) the same: {same_answer:.1%}",
        f"- nearest other frame (retrieval) the same: {same_nearest:.1%}; float16's nearest frame within "
        f"{HALF_COSINE_TOLERANCE:g} cosine of float32's best (in float32): {as_good:.1%}",
        "",
        f"1-minute load average: {load[0]:.1f} at the start, {load[1]:.1f} at the end, on {os.cpu_count()} cores.",
    ]
    body = "\n".join(lines)
    print(body)
    results = args.results or ROOT / "benchmarks" / "results" / f"throughput_{device.split(':')[0]}.md"
    write_results_markdown(
        results, f"Floor throughput on {device}: batched env steps and CLIP frames", body, Provenance.collect()
    )
    print(f"\nwritten: {results}")


if __name__ == "__main__":
    main()
