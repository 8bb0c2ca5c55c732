"""How far away the recogniser finds each target kind, in clear and deep water (calibration worlds).

For every target instance of calibration worlds 500-529 (embodmem/splits.py), the robot is placed 1-6
cells from one of its cells, facing it with nothing between (straight ahead, or one cell to the
side), and the recogniser scores the frame against the mission; the table gives the share of frames
at or above ``detect_probability`` (0.5). Deep water is measured for the kinds that have deep tasks.
The farthest distance with at least 90% on both bearings is a kind's detection range, the table
``DETECTION_RANGE_CELLS`` in agents/recognizer.py that the ``coverage_by_kind``,
``seen_within_detection_range`` and ``clean_background_stop`` switches read. The farthest distance
with at least 10% on either bearing ("found up to"; "6+" when still found at 6 cells) is the table
``FOUND_UP_TO_CELLS`` that ``recall_within_found_range`` reads.

    python tools/detection_range.py
    python tools/detection_range.py --out tools/results/detection_range.md
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import numpy as np

from embodmem.agents.config import ExplorerConfig
from embodmem.agents.recognizer import DETECTION_RANGE_CELLS, FOUND_UP_TO_CELLS, TargetRecognizer
from embodmem.atomic import atomic_write_text
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.spec import DIR_TO_VEC
from embodmem.envs.tasks import TASKS
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.splits import get_split

DISTANCES = (1, 2, 3, 4, 5, 6)
SHARE = 0.9
"""Share of frames a kind must be found in for a distance to count as within its range."""
FOUND_SHARE = 0.1
"""Share of frames on either bearing at which a kind still counts as found from that far."""


def measure(worlds: list[int]) -> dict[tuple[str, bool, int, int], list[int]]:
    """(kind, deep, distance, side offset) -> [frames found, frames]."""
    embedder = ClipEmbedder(threads=1)
    recognizer = TargetRecognizer(embedder)
    threshold = ExplorerConfig().detect_probability
    tasks = [name for name, t in TASKS.items() if not t.instance_goal]
    found: dict[tuple[str, bool, int, int], list[int]] = collections.defaultdict(lambda: [0, 0])
    for world in worlds:
        env = UnderwaterEnv(tasks=tuple(tasks), world_seed=world, max_steps=50)
        for task in tasks:
            obs, _ = env.reset(seed=0, options={"task": task})
            recognizer.set_mission(obs["mission"])
            assert env.world is not None and env.task is not None
            kinds, kind = env.world.kinds, env.task.target
            n = kinds.shape[0]
            frames, keys = [], []
            for part in env.world.instance_cells(kind):
                tx, ty = (int(v) for v in part[0])
                for d in DISTANCES:
                    for side in (0, 1):
                        for heading, (dx, dy) in enumerate(DIR_TO_VEC):
                            rx, ry = tx - d * dx - side * dy, ty - d * dy + side * dx
                            if not (0 <= rx < n and 0 <= ry < n) or kinds[ry, rx] != 0:
                                continue
                            if any(kinds[ry + k * dy, rx + k * dx] != 0 for k in range(1, d)):
                                continue  # something between: not a clear view
                            env.agent_pos, env.agent_dir = (rx, ry), heading
                            frames.append(env.gen_obs()["image"])
                            keys.append((kind, env.task.deep, d, side))
            if frames:
                p = recognizer.probability(embedder.embed_images(np.stack(frames)))
                for key, prob in zip(keys, p):
                    found[key][0] += int(prob >= threshold)
                    found[key][1] += 1
    return found


def table(found: dict[tuple[str, bool, int, int], list[int]], worlds: list[int]) -> str:
    lines = [
        f"Recogniser detection rate (P >= detect_probability) by distance in cells, calibration worlds "
        f"{worlds[0]}-{worlds[-1]}; each cell: share (frames), straight ahead / one cell to the side. "
        f"Range: the farthest distance with >= {SHARE:.0%} on both; `DETECTION_RANGE_CELLS` holds it. "
        f"Found up to: the farthest with >= {FOUND_SHARE:.0%} on either ({DISTANCES[-1]}+: still found at "
        f"{DISTANCES[-1]}); `FOUND_UP_TO_CELLS` holds it.",
        "",
        "| kind | water | " + " | ".join(f"{d} cells" for d in DISTANCES) + " | range | table | found up to | table |",
        "|---|---|" + "---:|" * (len(DISTANCES) + 4),
    ]
    for deep in (False, True):
        for kind in sorted({k[0] for k in found if k[1] == deep}):
            cells, reach, found_to = [], 0, 0
            for d in DISTANCES:
                a, b = found.get((kind, deep, d, 0), [0, 0]), found.get((kind, deep, d, 1), [0, 0])
                ra, rb = a[0] / max(a[1], 1), b[0] / max(b[1], 1)
                cells.append(f"{ra:.2f} ({a[1]}) / {rb:.2f} ({b[1]})")
                if reach == d - 1 and ra >= SHARE and rb >= SHARE:
                    reach = d
                if max(ra, rb) >= FOUND_SHARE:
                    found_to = d
            listed = DETECTION_RANGE_CELLS[kind][1 if deep else 0]
            farthest = f"{DISTANCES[-1]}+" if found_to == DISTANCES[-1] else str(found_to)
            found_listed = FOUND_UP_TO_CELLS[kind][1 if deep else 0]
            found_table = f"{DISTANCES[-1]}+" if found_listed is None else str(found_listed)
            water = "deep" if deep else "clear"
            lines.append(
                f"| {kind} | {water} | " + " | ".join(cells) + f" | {reach} | {listed} | {farthest} | {found_table} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="also write the table (Markdown)")
    args = parser.parse_args()
    worlds = get_split("calibration").worlds()
    text = table(measure(worlds), worlds)
    print(text)
    if args.out is not None:
        atomic_write_text(args.out, text + "\n")


if __name__ == "__main__":
    main()
