"""Bad command lines against the real ``embodmem-run``: each must print one line, exit 2, fast, and leave nothing.

Every value runs as its own subprocess in its own empty temporary directory (the working directory,
where Hydra would create ``outputs/`` or ``multirun/``); the table shows the exit code, how many lines
went to stderr, the wall time, and whether anything was left in that directory. A secret put where a
variable NAME belongs must not appear in the output.

Then the same for 25 mistakes a newcomer makes (:data:`NEWCOMER_MISTAKES`) across embodmem-run,
embodmem-report and embodmem-replay.

    python probes/bad_inputs.py                 # markdown tables, then each value's message
    python probes/bad_inputs.py --out probes/results/bad_inputs.md
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
    ("embedder device name", ["embedder.device=gpu"]),
    ("a GPU the machine does not have", ["embedder.device=cuda:99"]),
    ("video range", ["video.fps=0"]),
    ("unwritable output dir", ["hydra.run.dir=/proc/embodmem/out"]),
    ("output dir under a non-directory", ["hydra.run.dir=/dev/null/out"]),
    ("API key instead of its variable name", ["agent=vlm", f"agent.vlm.api_key_env={SECRET}"]),
    ("unknown config group option", ["agent=octopus"]),
    ("override syntax", ["seed=["]),
    ("sweep value", ["-m", "seed=0,-1", "hydra/launcher=joblib"]),
    ("sweep group option", ["-m", "agent=memory,octopus"]),
    ("unknown EQA answerer", ["experiment=eqa", "experiment.eqa.answerers=[psychic]"]),
    ("missing EQA question file", ["experiment=eqa", "experiment.eqa.questions=/nonexistent/q.jsonl"]),
    ("EQA prior from the test split", ["experiment=eqa", "experiment.eqa.prior=test"]),
]
"""(what is wrong, the arguments): each one must be refused before any work."""

NEWCOMER_MISTAKES: list[tuple[str, str, list[str]]] = [
    # met by a new user following the getting-started page
    ("an option instead of an override", "embodmem-run", ["--seed", "1"]),
    ("a number where a list goes", "embodmem-run", ["experiment.world_seeds=1001"]),
    ("a schema entry as an agent", "embodmem-run", ["agent=base_agent"]),
    ("a file name as an experiment", "embodmem-run", ["experiment=wreck_then_barrel.yaml"]),
    ("the VLM agent with no server running", "embodmem-run", ["agent=vlm", "agent.vlm.base_url=http://127.0.0.1:9/v1"]),
    ("report on a path that does not exist", "embodmem-report", ["outputs/2026-12-01/12-00-00"]),
    ("replay a log that does not exist", "embodmem-replay", ["outputs/2026-12-01/12-00-00/episodes/memory-warm.json"]),
    ("a negative step budget", "embodmem-run", ["env.max_steps=-5"]),
    ("load a memory that was never saved", "embodmem-run", ["experiment.load_memory=outputs/old/memory/world1001"]),
    ("an agent that does not exist", "embodmem-run", ["agent=octopus"]),
    ("a condition that does not exist", "embodmem-run", ["experiment.conditions=[lukewarm]"]),
    ("a word where a number goes", "embodmem-run", ["seed=abc"]),
    ("a task that does not exist", "embodmem-run", ["experiment.tasks=[wreck,kraken]"]),
    ("a schema entry inside a sweep", "embodmem-run", ["-m", "agent=memory,base_agent"]),
    ("a key spelt as in the prose (singular)", "embodmem-run", ["+experiment.world_seed=3"]),
    ("an output directory that cannot be written", "embodmem-run", ["hydra.run.dir=/proc/embodmem/out"]),
    (
        "the API key itself where its variable name goes",
        "embodmem-run",
        ["agent=vlm_openai", f"agent.vlm.api_key_env={SECRET}"],
    ),
    ("an unclosed bracket", "embodmem-run", ["experiment.tasks=[wreck,barrel"]),
    ("a group chosen with an option", "embodmem-run", ["--agent", "memory"]),
    # six more of the same kinds
    ("an option with = instead of an override", "embodmem-run", ["--seed=1"]),
    ("one task where a list goes", "embodmem-run", ["experiment.tasks=wreck"]),
    ("a file name as a video setting", "embodmem-run", ["video=on.yaml"]),
    ("a schema entry as an env", "embodmem-run", ["env=base_env"]),
    ("a misspelt launcher", "embodmem-run", ["-m", "hydra/launcher=slurmm", "seed=0,1"]),
    ("report on a directory with no runs", "embodmem-report", ["."]),
]
"""(the mistake, the command, its arguments): what a newcomer types wrong, in the three commands.
Each must be one line on stderr, exit code 2, nothing on stdout and nothing left in the directory."""


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


def command(name: str = "embodmem-run") -> list[str]:
    """The installed console script beside this interpreter (what users run)."""
    script = Path(sys.executable).with_name(name)
    return [str(script)] if script.is_file() else [shutil.which(name) or name]


def run_one(args: list[str], timeout_s: float = 120.0, name: str = "embodmem-run") -> Outcome:
    with tempfile.TemporaryDirectory(prefix="embodmem-bad-") as tmp:
        start = time.perf_counter()
        proc = subprocess.run(command(name) + args, cwd=tmp, capture_output=True, text=True, timeout=timeout_s)
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


def newcomer_table(rows: list[tuple[str, str, Outcome]]) -> str:
    """The newcomer mistakes as docs/runs.md shows them: the mistake, the command line, the outcome."""
    lines = [
        "| # | mistake | command line | exit | stderr lines | output left | ok |",
        "|---:|---|---|---:|---:|---|---|",
    ]
    for k, (what, name, o) in enumerate(rows, start=1):
        value = " ".join([name, *o.args]).replace(SECRET, "sk-proj-...").replace("|", "\\|")
        left = ", ".join(o.left) or "none"
        lines.append(
            f"| {k} | {what} | `{value}` | {o.exit_code} | {o.stderr_lines} | {left} | {'yes' if o.ok else 'NO'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="also write the table and messages to this markdown file")
    opts = parser.parse_args()
    rows = [(what, run_one(args)) for what, args in BAD_VALUES]
    newcomer = [(what, name, run_one(args, name=name)) for what, name, args in NEWCOMER_MISTAKES]
    messages = "\n".join(f"- {what}: `{o.stderr.strip()}`" for what, o in rows)
    newcomer_messages = "\n".join(
        f"{k}. {what}: `{o.stderr.strip().replace(SECRET, 'sk-proj-...')}`"
        for k, (what, _, o) in enumerate(newcomer, start=1)
    )
    outcomes = [o for _, o in rows] + [o for _, _, o in newcomer]
    slowest = max(o.seconds for o in outcomes)
    over = sum(o.seconds >= TIME_BAR_S for o in outcomes)
    text = (
        f"## Bad values\n\n{table(rows)}\n\n{messages}\n\n"
        f"## Newcomer mistakes, in the three commands\n\n{newcomer_table(newcomer)}\n\n"
        f"{sum(o.ok for _, _, o in newcomer)} of {len(newcomer)} ok (exit 2, one line, nothing left)\n\n"
        f"{newcomer_messages}\n\n"
        f"slowest: {slowest:.2f} s; {over} of {len(outcomes)} at or over {TIME_BAR_S:g} s; "
        f"all ok apart from time: {all(o.ok for o in outcomes)}\n"
    )
    print(text)
    if opts.out is not None:
        atomic_write_text(opts.out, text)
    if not all(o.ok for o in outcomes):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
