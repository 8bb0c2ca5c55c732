"""What ``video=on`` costs: the default job (``embodmem-run``'s ``run``, the same world list) with
and without videos, interleaved, several repeats; medians and the ratio of medians.

Each repeat runs the job in this process through ``embodmem.app.run`` (the function behind
``embodmem-run``, from model loading to the summary tables), so interpreter start-up and imports,
which would dilute the ratio, are not counted. One untimed warm-up of each variant comes first;
then the two alternate (off/on, on/off, ...) so that the load of a shared machine hits both alike.

    python benchmarks/bench_video.py                       # 5 repeats, default video settings
    python benchmarks/bench_video.py --repeats 9 video.format=webm
    python benchmarks/bench_video.py --out benchmarks/results/video.md

Extra arguments are Hydra overrides applied to both variants (``video.*`` ones matter to the video
run only).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from hydra import compose, initialize_config_module
from omegaconf import DictConfig

import embodmem.app as app
from embodmem.atomic import atomic_write_text


def compose_job(overrides: list[str]) -> DictConfig:
    """The default job's config with ``overrides`` (the same composition as ``embodmem-run``)."""
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        return compose("config", overrides=overrides)


def timed_run(cfg: DictConfig) -> tuple[float, int, int]:
    """Seconds for one run of the job into a fresh directory; its video count and bytes."""
    with tempfile.TemporaryDirectory(prefix="bench-video-") as tmp:
        out = Path(tmp) / "run"
        with contextlib.redirect_stdout(io.StringIO()):
            start = time.perf_counter()
            app.run(cfg, out)
            seconds = time.perf_counter() - start
        videos = sorted((out / "videos").glob("*")) if (out / "videos").is_dir() else []
        return seconds, len(videos), sum(v.stat().st_size for v in videos)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each variant (default 5)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table (Markdown) and a .json beside it")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for both runs, e.g. video.format=webm")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats} must be >= 1")

    base = ["logger.progress=false", *args.overrides]
    variants = {"video off": compose_job([*base, "video.enabled=false"]), "video=on": compose_job(["video=on", *base])}
    for cfg in variants.values():  # warm-up: imports, model files in the page cache
        timed_run(cfg)
    times: dict[str, list[float]] = {name: [] for name in variants}
    videos = (0, 0)
    for r in range(args.repeats):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            seconds, n, size = timed_run(variants[name])
            times[name].append(seconds)
            if name == "video=on":
                videos = (n, size)
            print(f"repeat {r + 1}/{args.repeats}  {name:9s} {seconds:6.2f} s", flush=True)

    off, on = (statistics.median(times[k]) for k in variants)
    ratio = on / off
    pairs = [b / a for a, b in zip(times["video off"], times["video=on"])]
    v = variants["video=on"].video
    settings = f"format {v.format}, size {v.size}, fps {v.fps}"
    lines = [
        f"Default job (wreck_then_barrel, world {list(variants['video off'].experiment.world_seeds)}), "
        f"{args.repeats} interleaved repeats after one warm-up each; video: {settings}; "
        f"{videos[0]} videos, {videos[1] / 1e6:.1f} MB.",
        "",
        "| run | median s | min s | max s |",
        "|---|---:|---:|---:|",
        *(f"| {k} | {statistics.median(t):.2f} | {min(t):.2f} | {max(t):.2f} |" for k, t in times.items()),
        "",
        f"ratio of medians (video=on / off): **{ratio:.2f}x**  (median of per-repeat ratios {statistics.median(pairs):.2f}x)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared with other jobs while measured), "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}.",
    ]
    text = "\n".join(lines)
    print()
    print(text)
    if args.out is not None:
        atomic_write_text(args.out, text + "\n")
        record = {
            "times_s": times,
            "ratio_of_medians": ratio,
            "per_repeat_ratios": pairs,
            "overrides": args.overrides,
            "video": settings,
        }
        atomic_write_text(args.out.with_suffix(".json"), json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
