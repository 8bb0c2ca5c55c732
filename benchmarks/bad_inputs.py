"""Bad command lines against the real ``embodmem-run``: each must print one line, exit 2, fast, and leave nothing.

Every value runs as its own subprocess in its own empty temporary directory (the working directory,
where Hydra would create ``outputs/`` or ``multirun/``); the table shows the exit code, how many lines
went to stderr, the wall time, and whether anything was left in that directory. A secret put where a
variable NAME belongs must not appear in the output.

    python benchmarks/bad_inputs.py                 # markdown table, then each value's message
    python benchmarks/bad_inputs.py --out benchmarks/results/bad_inputs.md
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from embodmem.atomic import atomic_write_text

SECRET = "sk-proj-Zq3xT9vLm2Np8RkW4yHc6Jd1"
"""A made-up API key; it must never be echoed."""

TIME_BAR_S = 3.0
"""Seconds a refusal may take (reported, not enforced: wall time depends on the machine's load)."""

BAD_VALUES: list[tuple[str, list[str]]] = [
    ("choice", ["experiment.conditions=[lukewarm]"]),
    ("unknown key added with +", ["+experiment.world_seed=3"]),
    ("unknown key", ["experiment.world_seed=3"]),
    ("type", ["seed=abc"]),
    ("negative seed", ["seed=-1"]),
    ("negative world seed", ["experiment.world_seeds=[-5]"]),
    ("env size", ["env.size=-3"]),
    ("camera size", ["env.image_size=4096"]),
    ("range", ["agent.detect_probability=1.5"]),
    ("cross-field range", ["env.success_distance_m=1"]),
    ("stop range beyond the success radius", ["env.success_distance_m=5"]),
    ("enum", ["agent.name=octopus"]),
    ("unknown task", ["experiment.tasks=[wreck,kraken]"]),
    ("unknown sequence", ["experiment.sequence=atlantis"]),
    ("unknown goal modality", ["experiment.tasks=[video.barrel.red]", "env.instance_goals=true"]),
    ("unknown instance variant", ["experiment.tasks=[description.barrel.blue]", "env.instance_goals=true"]),
    ("instance goals without the world with variants", ["experiment.sequence=goat_wreck_barrel"]),
    ("empty task list", ["experiment.tasks=[]"]),
    ("missing load_memory (cold only)", ["experiment.load_memory=/nonexistent", "experiment.conditions=[cold]"]),
    ("memory index", ["memory.index_factory=XYZ"]),
    ("video range", ["video.fps=0"]),
    ("unwritable output dir", ["hydra.run.dir=/proc/embodmem/out"]),
    ("output dir under a non-directory", ["hydra.run.dir=/dev/null/out"]),
    ("API key instead of its variable name", ["agent=vlm", f"agent.vlm.api_key_env={SECRET}"]),
    ("unknown config group option", ["agent=octopus"]),
    ("override syntax", ["seed=["]),
    ("sweep value", ["-m", "seed=0,-1", "hydra/launcher=joblib"]),
    ("sweep group option", ["-m", "agent=memory,octopus"]),
]
"""(what is wrong, the arguments): each one must be refused before any work."""


@dataclass
class Outcome:
    args: list[str]
    exit_code: int
    stderr: str
    stdout: str
    seconds: float
    left: list[str]

    @property
    def stderr_lines(self) -> int:
        return len(self.stderr.splitlines())

    @property
    def ok(self) -> bool:
        """The bar: exit 2, one line on stderr, nothing on stdout, nothing left, no secret shown."""
        return (
            self.exit_code == 2
            and self.stderr_lines == 1
            and not self.stdout
            and not self.left
            and SECRET not in self.stderr + self.stdout
        )


def command() -> list[str]:
    """The installed console script beside this interpreter (what users run)."""
    script = Path(sys.executable).with_name("embodmem-run")
    return [str(script)] if script.is_file() else [shutil.which("embodmem-run") or "embodmem-run"]


def run_one(args: list[str], timeout_s: float = 120.0) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="embodmem-bad-") as tmp:
        start = time.perf_counter()
        proc = subprocess.run(command() + args, cwd=tmp, capture_output=True, text=True, timeout=timeout_s)
        seconds = time.perf_counter() - start
        left = sorted(p.name for p in Path(tmp).iterdir())
    return Outcome(args, proc.returncode, proc.stderr, proc.stdout, seconds, left)


def table(rows: list[tuple[str, Outcome]]) -> str:
    lines = [
        "| what | value | exit | stderr lines | seconds | < 3 s | output dir left | ok (all but time) |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    for what, o in rows:
        value = " ".join(o.args).replace(SECRET, "sk-proj-...").replace("|", "\\|")
        left = ", ".join(o.left) or "none"
        lines.append(
            f"| {what} | `{value}` | {o.exit_code} | {o.stderr_lines} | {o.seconds:.2f} | {'yes' if o.seconds < TIME_BAR_S else 'NO'} | {left} | {'yes' if o.ok else 'NO'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="also write the table and messages to this markdown file")
    opts = parser.parse_args()
    rows = [(what, run_one(args)) for what, args in BAD_VALUES]
    messages = "\n".join(f"- {what}: `{o.stderr.strip()}`" for what, o in rows)
    slowest = max(o.seconds for _, o in rows)
    over = sum(o.seconds >= TIME_BAR_S for _, o in rows)
    text = (
        f"{table(rows)}\n\nslowest: {slowest:.2f} s; {over} of {len(rows)} at or over {TIME_BAR_S:g} s; "
        f"all ok apart from time: {all(o.ok for _, o in rows)}\n\n{messages}\n"
    )
    print(text)
    if opts.out is not None:
        atomic_write_text(opts.out, text)
    if not all(o.ok for _, o in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
