"""What each replay check costs: ``embodmem-replay LOG --check`` with and without the agent re-run.

Runs the default job (``embodmem-run``: wreck then barrel on world 1001, memory agent warm and cold,
explorer) into a temporary directory, then for each of its six logs, interleaved, ``repeats`` times:

* the console script as users run it (a fresh process: imports included), agent check and
  ``--no-agent``;
* in one process after the imports: the agent re-run (memo cleared) and the environment check alone.

Prints medians (seconds) as a Markdown table. Timings on a shared machine are noisy: give ``uptime``.

    OMP_NUM_THREADS=1 python benchmarks/bench_replay.py --repeats 3
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def write_run(out: Path) -> list[Path]:
    from hydra import compose, initialize_config_dir

    from embodmem.app import CONFIG_DIR, run

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["logger.progress=false", "logger.plots=false"])
    with contextlib.redirect_stdout(io.StringIO()):
        run(cfg, out)
    return sorted((out / "episodes").glob("*.json"))


def cli_seconds(log: Path, agent: bool) -> float:
    cmd = ["embodmem-replay", str(log), "--check", *([] if agent else ["--no-agent"])]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{log.name} did not replay: {proc.stderr.strip()}")
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="also write the table here with the command, commit and machine (e.g. benchmarks/results/replay.md)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    import embodmem.app  # what the agent check imports: the app, the embedder, torch
    import embodmem.embedding.embedder  # noqa: F401

    imports = time.perf_counter() - started
    import embodmem.rerun as rerun
    from embodmem.replay import replay

    with tempfile.TemporaryDirectory() as tmp:
        logs = write_run(Path(tmp))
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeats):
            for log in logs:
                times.setdefault((log.name, "cli agent"), []).append(cli_seconds(log, True))
                times.setdefault((log.name, "cli env"), []).append(cli_seconds(log, False))
                rerun._memo.clear()  # a fresh re-run, not the memoised one
                t0 = time.perf_counter()
                replay(log, video=False)
                t1 = time.perf_counter()
                replay(log, video=False, agent=False)
                t2 = time.perf_counter()
                times.setdefault((log.name, "rerun"), []).append(t1 - t0)
                times.setdefault((log.name, "env"), []).append(t2 - t1)
        lines = [
            f"In-process imports of the agent check: {imports:.1f} s (once per process).\n",
            "| log | steps | episodes re-run | CLI, agent check | CLI, --no-agent | agent check | env check |",
            "|---|---|---|---|---|---|---|",
        ]
        for log in logs:
            raw = json.loads(log.read_text())
            cells = [statistics.median(times[(log.name, k)]) for k in ("cli agent", "cli env", "rerun", "env")]
            lines.append(
                f"| {log.stem} | {len(raw['actions'])} | {raw['task_index']} | "
                + " | ".join(f"{c:.2f}" for c in cells)
                + " |"
            )
    text = "\n".join(lines)
    print(text)
    if args.results is not None:
        from embodmem.provenance import Provenance, write_results_markdown  # after the timed imports

        facts = Provenance.collect(None if argv is None else ["python", "benchmarks/bench_replay.py", *argv])
        write_results_markdown(args.results, "What each replay check costs", text, facts)


if __name__ == "__main__":
    main()
