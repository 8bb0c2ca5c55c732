"""How long the command-line tools take to start, and what they import, against an earlier commit.

Each command runs as a whole fresh process, the earlier commit's and this checkout's in turn
(A B A B ...), so that both see the same machine; the table gives each side's median wall and CPU
seconds and the median of the pair-by-pair ratios (this tree / the earlier one), with the load
average before and after. The earlier commit is checked out into a temporary git worktree and both
trees are laid out as installed (``embodmem.agents`` is ``agents/``: ``scripts/typecheck.py``'s
link tree), then run with Python's bytecode cache on (in a temporary folder), as an install runs.

    python benchmarks/startup.py                       # against a25acd8, 7 pairs per command
    python benchmarks/startup.py --before HEAD~3 --runs 11 --clip-runs 3

Writes ``benchmarks/results/startup.md`` (or ``--results``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import runpy
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from floor import JOB_START

from embodmem.provenance import Provenance, git_commit, write_results_markdown

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "open_clip", "timm", "wandb", "openai", "numba", "faiss", "cv2", "matplotlib", "minigrid", "networkx")
"""The libraries a start-up should not load before it needs them (the models, the index, the renderer)."""


@dataclass(frozen=True)
class Command:
    """One command as a user types it, and the Python that runs its console entry point in a tree."""

    shown: str
    code: str
    runs_key: str = "runs"
    """Which ``--runs`` option sets its number of pairs."""


def entry_point(module: str, argv: Sequence[str]) -> str:
    """What a console script does: set ``sys.argv``, call ``module:main``."""
    return f"import sys; sys.argv = {list(argv)!r}; from {module} import main; sys.exit(main())"


COMMANDS = (
    Command("embodmem-run --help", entry_point("embodmem.app", ["embodmem-run", "--help"])),
    Command("embodmem-run agent=nope", entry_point("embodmem.app", ["embodmem-run", "agent=nope"])),
    Command("embodmem-run env.max_steps=-5", entry_point("embodmem.app", ["embodmem-run", "env.max_steps=-5"])),
    Command("embodmem-bench --help", entry_point("embodmem.bench.cli", ["embodmem-bench", "--help"])),
    Command(
        "python -c 'import embodmem.embedding.model' (the CLIP)",
        "import embodmem.embedding.model",
        runs_key="clip_runs",
    ),
    Command("python -c 'import embodmem.api' (what a plug-in imports)", "import embodmem.api"),
    Command("a suite job's start: imports, then the embedder built (floor.py's JOB_START)", JOB_START, "clip_runs"),
    Command(
        "embodmem-run (the README's main job, whole)",
        entry_point("embodmem.app", ["embodmem-run", "hydra.run.dir=startup-main-job/${now:%H%M%S-%f}"]),
        "clip_runs",
    ),
    Command(
        "a job that implants 20 frames before task 2 (memory agent, 2 dev worlds, whole)",
        entry_point(
            "embodmem.app",
            [
                "embodmem-run",
                "experiment=suite",
                "experiment.variants=[memory]",
                "experiment.baselines=[]",
                "experiment.split=dev",
                "experiment.world_seeds=[1000,1001]",
                "experiment.sequences=[wreck_then_barrel]",
                "experiment.poison_k=20",
                "logger.progress=false",
                "logger.plots=false",
                "hydra.run.dir=startup-implant-job/${now:%H%M%S-%f}",
            ],
        ),
        "clip_runs",
    ),
)

LOADED_PROBE = (
    "import atexit, json, os, sys\n"
    "atexit.register(lambda: open(os.environ['STARTUP_LOADED'], 'w').write(json.dumps("
    f"[m for m in {HEAVY!r} if m in sys.modules])))\n"
)
"""Prepended to a command once per tree: which of :data:`HEAVY` it had imported when it exited."""


@contextmanager
def worktree(commit: str, where: Path) -> Iterator[Path]:
    """``commit`` checked out at ``where`` (a git worktree, removed afterwards)."""
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(where), commit], cwd=ROOT, check=True, capture_output=True
    )
    try:
        yield where
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, check=False, capture_output=True)


def short_commit(rev: str) -> str:
    """``rev`` as a 12-digit commit hash."""
    done = subprocess.run(["git", "rev-parse", "--short=12", rev], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def link_tree(dest: Path, source: Path) -> Path:
    """``source`` laid out as installed under ``dest`` (``scripts/typecheck.py``'s layout)."""
    layout = runpy.run_path(str(ROOT / "scripts" / "typecheck.py"))["link_tree"]
    return Path(layout(dest, source))


@dataclass
class Tree:
    """A source tree laid out as installed, with its own bytecode cache."""

    label: str
    layout: Path
    pycache: Path

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(self.pycache)
        return env

    def run(self, code: str, extra_env: dict[str, str] | None = None) -> tuple[float, float, int]:
        """Wall seconds, CPU seconds (user + system) and exit code of one fresh ``python -c code``."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=self.layout,
            env={**self.environment(), **(extra_env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu, done.returncode

    def loaded(self, code: str, scratch: Path) -> list[str]:
        out = scratch / f"loaded-{self.label}.json"
        self.run(LOADED_PROBE + code, {"STARTUP_LOADED": str(out)})
        return list(json.loads(out.read_text())) if out.is_file() else ["(not read)"]


@dataclass
class Row:
    command: str
    pairs: int
    wall: tuple[float, float]
    cpu: tuple[float, float]
    wall_ratio: float
    cpu_ratio: float
    codes: tuple[int, int]
    loaded: tuple[list[str], list[str]]


def measure(command: Command, before: Tree, after: Tree, pairs: int, scratch: Path) -> Row:
    """One warm-up each (fills the bytecode caches), then ``pairs`` runs of each in turn."""
    before.run(command.code)
    after.run(command.code)
    walls: tuple[list[float], list[float]] = ([], [])
    cpus: tuple[list[float], list[float]] = ([], [])
    codes = (0, 0)
    for _ in range(pairs):
        b_wall, b_cpu, b_code = before.run(command.code)
        a_wall, a_cpu, a_code = after.run(command.code)
        walls[0].append(b_wall)
        walls[1].append(a_wall)
        cpus[0].append(b_cpu)
        cpus[1].append(a_cpu)
        codes = (b_code, a_code)
    return Row(
        command=command.shown,
        pairs=pairs,
        wall=(statistics.median(walls[0]), statistics.median(walls[1])),
        cpu=(statistics.median(cpus[0]), statistics.median(cpus[1])),
        wall_ratio=statistics.median(a / b for b, a in zip(*walls)),
        cpu_ratio=statistics.median(a / b for b, a in zip(*cpus)),
        codes=codes,
        loaded=(before.loaded(command.code, scratch), after.loaded(command.code, scratch)),
    )


def table(rows: Sequence[Row], before: str, after: str) -> str:
    lines = [
        f"| command | pairs | wall s, {before} | wall s, {after} | wall ratio | CPU s, {before} | CPU s, {after} "
        f"| CPU ratio | exit codes | heavy modules loaded, {before} | heavy modules loaded, {after} |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| `{r.command}` | {r.pairs} | {r.wall[0]:.2f} | {r.wall[1]:.2f} | {r.wall_ratio:.2f} | {r.cpu[0]:.2f} "
            f"| {r.cpu[1]:.2f} | {r.cpu_ratio:.2f} | {r.codes[0]}, {r.codes[1]} | {', '.join(r.loaded[0]) or 'none'} "
            f"| {', '.join(r.loaded[1]) or 'none'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--before", default="a25acd8", help="the earlier commit (default: a25acd8)")
    parser.add_argument("--runs", type=int, default=7, help="pairs per command-line tool")
    parser.add_argument(
        "--clip-runs", type=int, default=3, help="pairs for the CLIP module's import and a job's start (slow)"
    )
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results" / "startup.md")
    args = parser.parse_args(argv)
    facts = Provenance.collect()
    before_commit = short_commit(args.before)
    after_commit = git_commit()
    scratch = Path(tempfile.mkdtemp(prefix="embodmem-startup-"))
    load = [os.getloadavg()[0]]
    try:
        with worktree(args.before, scratch / "before-src") as source:
            before = Tree("before", link_tree(scratch / "before", source), scratch / "pyc-before")
            after = Tree("after", link_tree(scratch / "after", ROOT), scratch / "pyc-after")
            rows = []
            for command in COMMANDS:
                rows.append(measure(command, before, after, getattr(args, command.runs_key), scratch))
                load.append(os.getloadavg()[0])
                print(table(rows[-1:], before_commit, after_commit).splitlines()[-1], flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    body = "\n\n".join(
        [
            f"Start-up of the command-line tools at `{after_commit}` against `{before_commit}`: each command a "
            "fresh process, the two trees in turn (A B A B), one warm-up each; medians of the runs and the median "
            "of the pair-by-pair ratios (this tree / the earlier one). Both trees laid out as installed and run "
            "with the bytecode cache on. CPU is user + system seconds of the process. Wall seconds follow the "
            "machine's load (other work on its cores slows both trees alike), so read the ratios and the CPU "
            f"seconds; 1-minute load average: {', '.join(f'{x:.1f}' for x in load)} (before the first command, then "
            "after each).",
            table(rows, before_commit, after_commit),
            f"Heavy modules: which of {', '.join(HEAVY)} the process had imported when it exited.",
        ]
    )
    write_results_markdown(args.results, "Start-up time of the command-line tools", body, facts)
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
