"""Size and speed of the offline dataset: ``embodmem-bench export`` and its reader, measured in one sitting.

Exports the spec's category sequences on the first ``--worlds`` dev worlds with the memory agent into a
temporary directory, then reads it back twice (the raw Parquet batches, and every episode decoded to
arrays). Beside it, the same episodes run with nothing recorded (the runner's own loop, same agent and
seeds). The export times its own recording (PNG, Parquet) apart from the episodes it records, so its
cost reads as a ratio measured in the same process. Reports frames/s, bytes per frame (all Parquet
files, and the frame files alone) and the ratio, into
``benchmarks/results/bench_export.md``.

    python benchmarks/bench_export.py --worlds 2

Other work on the machine moves the rates more than the ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from embodmem.provenance import Provenance, write_results_markdown

ROOT = Path(__file__).resolve().parent.parent


def plain_run_seconds(worlds: int) -> tuple[float, int]:
    """Seconds and steps of the same episodes run with nothing recorded (CLIP loaded before timing)."""
    from embodmem.agents.base import MemoryCarrier
    from embodmem.app import build_agent, build_embedder, build_env, experiment_plan
    from embodmem.bench.agents import resolve_agent
    from embodmem.bench.run import job_config
    from embodmem.bench.spec import load_spec
    from embodmem.condition import Condition
    from embodmem.runner import run_sequence

    spec = load_spec(1)
    seeds = spec.world_seeds("dev", worlds)
    cfg = job_config(spec, resolve_agent("memory"), "open", "dev", "category", seeds, [])
    plan = experiment_plan(cfg, Path("plain"))
    embedder = build_embedder(cfg)
    started, steps = time.perf_counter(), 0
    for sequence, tasks in plan.sequences:
        for world in seeds:
            env = build_env(cfg, tasks, world)
            agent = build_agent("memory", cfg, embedder, env, plan.seed)
            condition = Condition.warm if isinstance(agent, MemoryCarrier) else Condition.single
            results = run_sequence(env, agent, plan.sequence_spec(sequence, tasks, world, condition), "plain")
            steps += sum(r.record.steps or 0 for r in results)
    return time.perf_counter() - started, steps


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_export.md")
    args = parser.parse_args(argv)
    facts = Provenance.collect()
    from embodmem.bench.dataset import OfflineDataset
    from embodmem.bench.export import ExportRequest, export_dataset

    with tempfile.TemporaryDirectory(prefix="embodmem-export-") as tmp:
        root = Path(tmp) / "dev"
        command = ["embodmem-bench", "export", "--split", "dev", "--worlds", str(args.worlds), "--agent", "memory"]
        info = export_dataset(ExportRequest(split="dev", out=root, worlds=args.worlds, agent="memory"), argv=command)
        data_bytes = sum((root / name).stat().st_size for name in info.files)
        ds = OfflineDataset(root)
        t0 = time.perf_counter()
        raw_frames = sum(batch.num_rows for batch in ds.iter_batches())
        t1 = time.perf_counter()
        decoded = sum(len(e.actions) for e in ds.episodes())
        t2 = time.perf_counter()
        assert raw_frames == decoded == info.total_frames, (raw_frames, decoded, info.total_frames)
    plain_s, plain_steps = plain_run_seconds(args.worlds)
    episodes_s = info.seconds - info.setup_seconds - info.recording_seconds
    assert plain_steps == info.total_frames, (plain_steps, info.total_frames)
    rows = [
        ("episodes", f"{info.total_episodes}"),
        ("frames", f"{info.total_frames:,}"),
        ("dataset size (all Parquet files)", f"{info.bytes / 2**20:.2f} MiB"),
        ("bytes per frame (all files)", f"{info.bytes / info.total_frames:,.0f}"),
        (
            "bytes per frame (frame files: PNG image, poses, sonar, mission, action)",
            f"{data_bytes / info.total_frames:,.0f}",
        ),
        ("raw 64x64x3 frame, for comparison", f"{64 * 64 * 3:,}"),
        (
            "export, end to end (CLIP load, agent, recording)",
            f"{info.seconds:.1f} s, {info.total_frames / info.seconds:,.0f} frames/s",
        ),
        ("of which loading CLIP", f"{info.setup_seconds:.1f} s"),
        (
            "of which recording (PNG encode, Parquet write, episode and object rows)",
            f"{info.recording_seconds:.1f} s, {info.total_frames / info.recording_seconds:,.0f} frames/s, "
            f"{1000 * info.recording_seconds / info.total_frames:.2f} ms/frame",
        ),
        (
            "episodes inside the export (end to end minus CLIP load and recording)",
            f"{episodes_s:.1f} s, {info.total_frames / episodes_s:,.0f} frames/s",
        ),
        (
            "the same episodes run again, nothing recorded (CLIP loaded before timing)",
            f"{plain_s:.1f} s, {plain_steps / plain_s:,.0f} frames/s",
        ),
        ("recording / episodes inside the export (what recording adds)", f"{info.recording_seconds / episodes_s:.2f}"),
        ("read back: Parquet batches", f"{raw_frames / (t1 - t0):,.0f} frames/s"),
        ("read back: episodes decoded to arrays (PNG decode)", f"{decoded / (t2 - t1):,.0f} frames/s"),
    ]
    body = (
        f"`embodmem-bench export` of the spec v1 category group (5 sequences, warm memory agent) on dev worlds "
        f"1000-{999 + args.worlds}. One sitting; other work on the machine makes the "
        "rates noisy and the ratio of recording to episodes (same process, same minutes) is the steadier figure.\n\n"
        "| measure | value |\n|---|---:|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
    )
    path = write_results_markdown(args.out, "Offline dataset: size and export speed", body, facts)
    print(path.read_text())


if __name__ == "__main__":
    main()
