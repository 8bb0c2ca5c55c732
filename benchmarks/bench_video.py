"""What ``video=on`` costs: the default job (``embodmem-run``'s ``run``, the same world list) with
and without videos, interleaved, several repeats; medians and the ratio of medians.

Each repeat runs the job in this process through ``embodmem.app.run`` (the function behind
``embodmem-run``, from model loading to the summary tables), so interpreter start-up and imports,
which would dilute the ratio, are not counted. One untimed warm-up of each variant comes first;
then the two alternate (off/on, on/off, ...) so that the load of a shared machine hits both alike.
Besides the wall time, each run's process CPU time (all threads) is kept: the wall-time cost of
video falls below its CPU cost only as far as the encoder thread finds a free core, so the table
also gives the machine's load average before and after.

    python benchmarks/bench_video.py                       # 5 repeats, default video settings
    python benchmarks/bench_video.py --repeats 9 video.format=webm
    python benchmarks/bench_video.py --out benchmarks/results/video.md
    python benchmarks/bench_video.py --codecs --out benchmarks/results/video.md   # and the H.264 settings table

Extra arguments are Hydra overrides applied to both variants (``video.*`` ones matter to the video
run only).

``--codecs`` adds a table of H.264 settings: the frames of the job's longest memory-agent episode,
re-simulated from its log and drawn by the replay tool's path (camera, map, caption, legend; the
recalls without thumbnails, which logs do not keep), encoded with each setting (interleaved
repeats): the encoder's CPU per frame (colour conversion and x264, all threads), the file size,
and the mean absolute error of the decoded frames against the drawn ones.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import av
import numpy as np
from hydra import compose, initialize_config_module
from omegaconf import DictConfig

import embodmem.app as app
from embodmem.atomic import atomic_write_text
from embodmem.provenance import Provenance, write_results_markdown
from embodmem.replay import load_log, simulate
from embodmem.video import CODECS, render_frames, write_video
from embodmem.video.encoding import Codec

H264_SETTINGS: dict[str, dict[str, str]] = {
    "ultrafast, crf 23 (the default before)": {"preset": "ultrafast", "crf": "23"},
    "ultrafast, qp 18 (the default)": dict(CODECS["mp4"].options),
    "ultrafast, qp 23": {"preset": "ultrafast", "qp": "23"},
    "ultrafast, crf 23, tune zerolatency": {"preset": "ultrafast", "crf": "23", "tune": "zerolatency"},
}


def compose_job(overrides: list[str]) -> DictConfig:
    """The default job's config with ``overrides`` (the same composition as ``embodmem-run``)."""
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        return compose("config", overrides=overrides)


def timed_run(cfg: DictConfig) -> tuple[float, float, int, int]:
    """Wall and process CPU seconds for one run of the job into a fresh directory; its video count and bytes."""
    with tempfile.TemporaryDirectory(prefix="bench-video-") as tmp:
        out = Path(tmp) / "run"
        with contextlib.redirect_stdout(io.StringIO()):
            start, cpu = time.perf_counter(), time.process_time()
            app.run(cfg, out)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        videos = sorted((out / "videos").glob("*")) if (out / "videos").is_dir() else []
        return seconds, cpu, len(videos), sum(v.stat().st_size for v in videos)


def replayed_frames(cfg: DictConfig) -> list[np.ndarray]:
    """The frames of the job's longest memory-agent episode, re-simulated from its episode log."""
    with tempfile.TemporaryDirectory(prefix="bench-video-") as tmp:
        out = Path(tmp) / "run"
        with contextlib.redirect_stdout(io.StringIO()):
            app.run(cfg, out)
        sims = [simulate(load_log(log), log) for log in sorted((out / "episodes").glob("*agent=memory*.json"))]
    sim = max(sims, key=lambda s: len(s.steps))
    summary = dataclasses.asdict(sim.summary)
    return list(render_frames(sim.scene, sim.steps, int(cfg.video.size), summary, int(cfg.video.fps)))


def codec_table(frames: list[np.ndarray], fps: int, repeats: int) -> dict[str, dict[str, float]]:
    """Each H.264 setting's encoder CPU ms per frame (median of interleaved repeats), file kB and
    mean absolute error of the decoded frames."""
    cpu: dict[str, list[float]] = {name: [] for name in H264_SETTINGS}
    table: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-video-") as tmp:
        path = Path(tmp) / "v.mp4"
        for r in range(repeats):
            for name in H264_SETTINGS if r % 2 == 0 else reversed(H264_SETTINGS):
                start = time.process_time()
                write_video(path, frames, fps, Codec("mp4", "libx264", H264_SETTINGS[name]))
                cpu[name].append((time.process_time() - start) / len(frames))
                if name not in table:
                    with av.open(str(path)) as container:
                        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
                    error = np.mean([np.abs(d.astype(np.int16) - f).mean() for d, f in zip(decoded, frames)])
                    table[name] = {"kB": path.stat().st_size / 1e3, "mean_abs_error": float(error)}
    for name in H264_SETTINGS:
        table[name]["cpu_ms_per_frame"] = statistics.median(cpu[name]) * 1e3
    return table


def codec_lines(table: dict[str, dict[str, float]], frames: list[np.ndarray], repeats: int) -> list[str]:
    return [
        f"H.264 settings on the {len(frames)} frames of one episode ({frames[0].shape[1]} x {frames[0].shape[0]}, "
        f"replayed from its log), {repeats} interleaved repeats:",
        "",
        "| libx264 | CPU ms / frame (conversion + encoding) | file kB | mean abs error (0-255) |",
        "|---|---:|---:|---:|",
        *(
            f"| {name} | {row['cpu_ms_per_frame']:.2f} | {row['kB']:.0f} | {row['mean_abs_error']:.2f} |"
            for name, row in table.items()
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each variant (default 5)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="also write the table (Markdown, with the command, commit and machine) and a .json beside it",
    )
    parser.add_argument("--codecs", action="store_true", help="also compare H.264 settings on one episode's frames")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for both runs, e.g. video.format=webm")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats} must be >= 1")

    base = ["logger.progress=false", *args.overrides]
    variants = {"video off": compose_job([*base, "video.enabled=false"]), "video=on": compose_job(["video=on", *base])}
    for cfg in variants.values():  # warm-up: imports, model files in the page cache
        timed_run(cfg)
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu_times: dict[str, list[float]] = {name: [] for name in variants}
    videos = (0, 0)
    load_before = os.getloadavg()
    for r in range(args.repeats):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            seconds, cpu, n, size = timed_run(variants[name])
            times[name].append(seconds)
            cpu_times[name].append(cpu)
            if name == "video=on":
                videos = (n, size)
            print(f"repeat {r + 1}/{args.repeats}  {name:9s} {seconds:6.2f} s  (CPU {cpu:5.2f} s)", flush=True)
    load_after = os.getloadavg()

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
        "| run | median s | min s | max s | median CPU s (all threads) |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {k} | {statistics.median(t):.2f} | {min(t):.2f} | {max(t):.2f} | {statistics.median(cpu_times[k]):.2f} |"
            for k, t in times.items()
        ),
        "",
        f"ratio of medians (video=on / off): **{ratio:.2f}x**  (median of per-repeat ratios {statistics.median(pairs):.2f}x)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; load average (1, 5, 15 min) "
        f"{_load(load_before)} before the timed runs, {_load(load_after)} after.",
    ]
    codecs: dict[str, dict[str, float]] = {}
    if args.codecs:
        frames = replayed_frames(variants["video off"])
        codecs = codec_table(frames, int(v.fps), args.repeats)
        lines += ["", *codec_lines(codecs, frames, args.repeats)]
    text = "\n".join(lines)
    print()
    print(text)
    if args.out is not None:
        facts = Provenance.collect()
        write_results_markdown(args.out, "What video=on costs", text, facts)
        record = {
            "provenance": facts.as_dict(),
            "times_s": times,
            "cpu_s": cpu_times,
            "load_before": load_before,
            "load_after": load_after,
            "ratio_of_medians": ratio,
            "per_repeat_ratios": pairs,
            "overrides": args.overrides,
            "video": settings,
            "h264_settings": codecs,
        }
        atomic_write_text(args.out.with_suffix(".json"), json.dumps(record, indent=2) + "\n")


def _load(avg: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.2f}" for x in avg)


if __name__ == "__main__":
    main()
