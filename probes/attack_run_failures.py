"""Failures inside a run, and values that cannot be carried out, against ``embodmem-run``.

Each case runs the CLI as a user would (a subprocess; a memory agent, warm, tasks wreck then barrel,
world 1000, ``env.max_steps=40``, ``experiment.save_memory=true``) with one thing broken:

- ``no snapshot at the load path``: ``experiment.load_memory`` names an empty directory;
- ``permission denied``: the memory directory is read-only (mode 555) and the run has no
  CAP_DAC_OVERRIDE (``setpriv`` drops it: root ignores file modes otherwise);
- ``disk full``: the memory directory is a 64 kB tmpfs (``mount -t tmpfs -o size=64k``; needs root;
  where mounting is refused the case is reported as not run);
- ``episode log write failure``: the second episode's log path is a directory;
- ``second writer``: this script holds the memory directory's writer lock while the run saves;
- ``EMBODMEM_DEBUG=1``: the disk-full case again, which must show the traceback;
- ``poison_k=10**9`` and ``world_seeds=[2**32]``: refused before any work, within 5 s.

Bars: one line on stderr, a distinct non-zero exit per kind, the records written before the failure
kept (counted in metrics.jsonl), no run directory for the up-front refusals.

    python probes/attack_run_failures.py      # writes probes/results/run_failures_attack.md
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
import time
from pathlib import Path

from cli_runs import REPO, WARM_ONLY, cli_env, nonblank_lines, run_cli, write_results

from embodmem.memory.persistence import writer_lock

RESULTS = REPO / "probes" / "results" / "run_failures_attack.md"
RUN = [
    "experiment.tasks=[wreck,barrel]",
    "experiment.world_seeds=[1000]",
    *WARM_ONLY,
    "env.max_steps=40",
]
NO_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]


def cli(
    out: Path, *args: str, prefix: list[str] | None = None, env_extra: dict[str, str] | None = None
) -> tuple[int, float, list[str]]:
    env = cli_env(drop=("EMBODMEM_DEBUG",), **(env_extra or {}))
    t0 = time.monotonic()
    proc = run_cli(*RUN, f"hydra.run.dir={out}", *args, timeout=1200, prefix=prefix or [], env=env)
    return proc.returncode, time.monotonic() - t0, nonblank_lines(proc.stderr)


def records(out: Path) -> int:
    path = out / "metrics.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def main() -> None:
    rows: list[tuple[str, int, float, int, int, str]] = []  # case, exit, seconds, stderr lines, records, line

    def add(case: str, out: Path, result: tuple[int, float, list[str]]) -> None:
        rc, secs, lines = result
        rows.append(
            (
                case,
                rc,
                secs,
                len(lines),
                records(out),
                (lines[-1] if lines else "").replace(str(out), "<run>").replace(str(out.parent), "<tmp>"),
            )
        )
        print(rows[-1], flush=True)

    with tempfile.TemporaryDirectory(prefix="run-failures-") as tmp_s:
        tmp = Path(tmp_s)

        empty = tmp / "empty"
        empty.mkdir()
        add("no snapshot at the load path", tmp / "a", cli(tmp / "a", f"experiment.load_memory={empty}"))

        out = tmp / "perm"
        (out / "memory").mkdir(parents=True)
        (out / "memory").chmod(0o555)
        add(
            "permission denied (memory dir mode 555, no CAP_DAC_OVERRIDE)",
            out,
            cli(out, "experiment.save_memory=true", prefix=NO_DAC),
        )

        full_ok = True
        for case, env_extra in (
            ("disk full (64 kB tmpfs as the memory dir)", None),
            ("disk full, EMBODMEM_DEBUG=1", {"EMBODMEM_DEBUG": "1"}),
        ):
            out = tmp / ("full" if env_extra is None else "full-debug")
            (out / "memory").mkdir(parents=True)
            mount = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(out / "memory")], capture_output=True, text=True
            )
            if mount.returncode != 0:
                full_ok = False
                rows.append((case + ": not run, mount refused: " + mount.stderr.strip()[:80], -1, 0.0, 0, 0, ""))
                continue
            try:
                add(case, out, cli(out, "experiment.save_memory=true", env_extra=env_extra))
            finally:
                subprocess.run(["umount", str(out / "memory")], check=False)

        out = tmp / "log"
        (out / "episodes" / "seq=wreck+barrel-world=1000-seed=0-task=2-agent=memory-cond=warm.json").mkdir(parents=True)
        add("episode log write failure (its path is a directory)", out, cli(out))

        out = tmp / "lock"
        (out / "memory" / "world1000").mkdir(parents=True)
        held = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with writer_lock(out / "memory" / "world1000"):
                held.set()
                release.wait(1200)

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        held.wait(30)
        try:
            add("a second writer of the memory directory", out, cli(out, "experiment.save_memory=true"))
        finally:
            release.set()
            holder.join(10)

        for case, args in (
            ("experiment.poison_k=10**9", ["experiment.poison_k=1000000000"]),
            ("experiment.world_seeds=[2**32]", ["experiment.world_seeds=[4294967296]", "experiment.split=custom"]),
        ):
            out = tmp / case.split("=")[0]
            result = cli(out, *args)
            add(case + (" (no run directory made)" if not out.exists() else " (RUN DIRECTORY MADE)"), out, result)

    codes = [
        r[1] for r in rows if not r[0].startswith(("experiment.", "no snapshot")) and r[1] >= 0 and "DEBUG" not in r[0]
    ]
    table = [
        "# Failures inside a run",
        "",
        "`python probes/attack_run_failures.py` (memory agent, warm, tasks wreck then barrel, world 1000, "
        "`env.max_steps=40`, `experiment.save_memory=true` where a memory directory is involved).",
        "",
        "| case | exit | seconds | stderr lines | records kept | the line |",
        "|---|---|---|---|---|---|",
        *(f"| {c} | {rc} | {s:.1f} | {n} | {k} | {ln.replace('|', '/')[:240]} |" for c, rc, s, n, k, ln in rows),
        "",
        f"In-run exit codes distinct: {len(set(codes)) == len(codes)} ({codes}); exit 2 = bad input, refused before any work.",
        "" if full_ok else "Disk full: mounting a tmpfs was refused here; run the script as root to measure it.",
        "",
    ]
    write_results(RESULTS, table)


if __name__ == "__main__":
    main()
