"""How much of the core suite's agent time is compiled work, and how much is Python around it.

``benchmarks/floor.py`` says where the suite's time beyond its floor goes, stage by stage (mapping,
memory write and query, planning, ...). This script asks what a stage's time is made of: it runs
one core-suite job (memory warm and cold, explorer, oracle; the same lanes) in this process, through
``embodmem.app.run``, with a timer around every call of the agents' compiled kernels, and splits the
profile's ``agent`` section (its µs per env step) into

- the Numba kernels of the occupancy map and the explorer (``embodmem.agents.map_kernels``: folding
  a sonar scan, marking the view, the goal search, ...), each timed where the agents call it;
- FAISS's searches and additions of the long-term memory (every index class's ``search`` and
  ``add_with_ids``);
- the CLIP passes the agents ask for themselves, beyond the frames the lockstep pass embedded
  (the image tower on ONNX Runtime: a crop of a frame's middle, a frame not cached);
- the rest: the agents' Python per lane, with the numpy calls on small arrays it makes.

The timers' own cost (about a third of a microsecond a call) lands in the ``agent`` section, so the
split slightly favours the rest. A faster kernel can only cut the first two rows; the third is what
batching the lanes' work, or compiling an agent whole, would have to remove.

    python benchmarks/agent_kernels.py                                   # 6 dev worlds
    python benchmarks/agent_kernels.py --worlds 6 --results benchmarks/results/agent_kernels_dev.md

Run it alone: a second busy process on a 2-core machine slows every row.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

from hydra import compose, initialize_config_module
from multirun import CORE_AGENTS, QUIET_LOGGER

import embodmem.agents.explorer
import embodmem.agents.map_kernels
import embodmem.agents.mapping
import embodmem.app as app
from embodmem.profiling import RunProfile
from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import SPLIT_NAMES, choose_worlds

ROOT = Path(__file__).resolve().parent.parent
CORE = ["experiment=suite", *CORE_AGENTS]

FAISS_METHODS = ("search", "add_with_ids")


@dataclass
class KernelTimes:
    """Seconds and calls per timed kernel."""

    seconds: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)

    def timed(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1

        return call


@contextlib.contextmanager
def kernels_timed(times: KernelTimes) -> Iterator[None]:
    """Wrap the agents' compiled kernels where the agents call them, FAISS's index methods and the
    embedder's uncached CLIP passes (the lockstep pass goes through another method)."""
    import faiss

    from embodmem.embedding.embedder import ClipEmbedder

    kernel_names = [n for n, v in vars(embodmem.agents.map_kernels).items() if hasattr(v, "py_func")]
    saved: list[tuple[object, str, Any]] = []
    for module in (embodmem.agents.mapping, embodmem.agents.explorer):
        for name in kernel_names:
            if name in vars(module):
                saved.append((module, name, getattr(module, name)))
                setattr(module, name, times.timed(f"numba: {name}", getattr(module, name)))
    for cls in {v for v in vars(faiss).values() if isinstance(v, type) and issubclass(v, faiss.Index)}:
        for method in FAISS_METHODS:
            if method in vars(cls):
                saved.append((cls, method, vars(cls)[method]))
                setattr(cls, method, times.timed(f"faiss: {method}", vars(cls)[method]))
    saved.append((ClipEmbedder, "_encode_images", ClipEmbedder._encode_images))
    ClipEmbedder._encode_images = times.timed("onnx: CLIP passes the agents ask for", ClipEmbedder._encode_images)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def run_job(split: str, worlds: list[int], lanes: int, extra: list[str]) -> RunProfile:
    """The profile of one core-suite job over ``worlds``, run in this process."""
    overrides = [
        *CORE,
        f"experiment.split={split}",
        f"experiment.world_seeds=[{','.join(map(str, worlds))}]",
        f"experiment.lanes={lanes}",
        *QUIET_LOGGER,
        *extra,
    ]
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    with tempfile.TemporaryDirectory(prefix="agent-kernels-") as tmp, contextlib.redirect_stdout(io.StringIO()):
        app.run(cfg, Path(tmp) / "run")
        profile: RunProfile = json.loads((Path(tmp) / "run" / "profile.json").read_text())
    return profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=SPLIT_NAMES)
    parser.add_argument("--worlds", type=int, default=6)
    parser.add_argument("--first", type=int, default=None)
    parser.add_argument("--lanes", type=int, default=32)
    parser.add_argument(
        "--results", type=Path, default=None, help="results file (default benchmarks/results/agent_kernels_<split>.md)"
    )
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides for the job")
    args = parser.parse_args()
    worlds = choose_worlds(args.split, args.worlds, args.first)
    run_job(args.split, worlds[:1], args.lanes, args.overrides)  # untimed: Numba's caches, the ONNX sessions
    times = KernelTimes()
    with kernels_timed(times):
        profile = run_job(args.split, worlds, args.lanes, args.overrides)
    steps = profile["steps"]
    sections = {row["section"]: row["seconds"] for row in profile["sections"]}
    agent_s = sections["agent"]

    def us(seconds: float) -> float:
        return seconds / steps * 1e6

    compiled_s = sum(times.seconds.values())
    lines = [
        f"One core-suite job (memory warm and cold, explorer, oracle) on {args.split} worlds "
        f"{worlds[0]}-{worlds[-1]} ({len(worlds)} worlds), {args.lanes} lanes, one thread, in one process: "
        f"{steps:,} env steps, the run's loop {profile['loop_s']:.1f} s."
        + (f" Overrides: {' '.join(args.overrides)}." if args.overrides else ""),
        "",
        f"- the agents' time (`profile.json`'s `agent` section): **{us(agent_s):.0f} µs per env step**",
        f"- of which compiled kernels (Numba, FAISS, ONNX Runtime): **{us(compiled_s):.0f} µs** ({compiled_s / agent_s:.0%})",
        f"- and the agents' Python around them, with numpy on small arrays: **{us(agent_s - compiled_s):.0f} µs** "
        f"({1 - compiled_s / agent_s:.0%})",
        "",
        "| part of the agents' time | calls | µs per call | µs per env step | share of the agents' time |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, seconds in times.seconds.most_common():
        calls = times.calls[name]
        lines.append(
            f"| {name} | {calls:,} | {seconds / calls * 1e6:.1f} | {us(seconds):.1f} | {seconds / agent_s:.1%} |"
        )
    lines.append(
        f"| the rest: Python per lane, numpy on small arrays | | | {us(agent_s - compiled_s):.1f} | "
        f"{1 - compiled_s / agent_s:.1%} |"
    )
    lines += [
        "",
        "The profile's agent stages of the same job (µs per env step; parts of the agents' time):",
        "",
        "| stage | µs per env step |",
        "|---|---:|",
        *(f"| {k.removeprefix('agent/')} | {us(v):.1f} |" for k, v in sections.items() if k.startswith("agent/")),
        "",
        f"Machine: {os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
        f"1-minute load average at the end {os.getloadavg()[0]:.1f}.",
    ]
    body = "\n".join(lines)
    print(body)
    results = args.results or ROOT / "benchmarks" / "results" / f"agent_kernels_{args.split}.md"
    write_results_markdown(results, "The agents' compiled kernels against their Python", body, Provenance.collect())
    print(f"\nwritten: {results}")


if __name__ == "__main__":
    main()
