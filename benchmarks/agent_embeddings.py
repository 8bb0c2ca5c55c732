"""Real frame embeddings in the order an exploring agent sees them, for bench_memory.py --vectors.

The explorer (target recognition off, so it keeps exploring) runs in worlds 2000+ and every camera
frame it sees is embedded with the project's CLIP, in visiting order.

    python benchmarks/agent_embeddings.py --frames 10000 --out /tmp/agent_frames.npy
    python benchmarks/bench_memory.py --vectors /tmp/agent_frames.npy --sizes 10k
"""

from __future__ import annotations

import argparse

import numpy as np
from tqdm import tqdm

from embodmem.agents.explorer import ExplorerConfig, FrontierExplorer
from embodmem.atomic import atomic_write_with
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.underwater import UnderwaterEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--steps-per-world", type=int, default=400)
    parser.add_argument("--out", default="/tmp/agent_frames.npy")
    args = parser.parse_args()
    embedder = ClipEmbedder(threads=1)
    vectors: list[np.ndarray] = []
    world = 2000
    bar = tqdm(total=args.frames, desc="frames")
    while len(vectors) < args.frames:
        env = UnderwaterEnv(task="wreck", world_seed=world, max_steps=args.steps_per_world)
        agent = FrontierExplorer(embedder, ExplorerConfig(detect_probability=1.01))
        obs, _ = env.reset(seed=world)
        agent.reset(obs, env.sensor_spec)
        done = False
        while not done and len(vectors) < args.frames:
            obs, _, terminated, truncated, _ = env.step(agent.act(obs))
            vectors.append(agent.last_vector)
            bar.update(1)
            done = terminated or truncated
        world += 1
    atomic_write_with(args.out, lambda fh: np.save(fh, np.stack(vectors).astype(np.float32)))
    print(f"{len(vectors)} frames from worlds 2000-{world - 1} -> {args.out}")


if __name__ == "__main__":
    main()
