"""Tamper with a real episode log and count how ``embodmem-replay --check`` receives each change.

The log is the memory agent's warm task-1 log of a real run (``embodmem-run`` with the default job on
one world, 25 steps: ``env.max_steps=25``, memory agent warm only), its ``config.yaml`` beside
``episodes/``; it holds two real memory queries (1 and 5 hits). Three sweeps over every field (leaf
and container) of it, each changed in value or type, or removed:

* ``fields``: the digest left as written, as an edit or corruption would leave it. All must be refused.
* ``resealed-env``: the digest recomputed, as a deliberate forger could, checked with ``--no-agent``
  (the environment replay): the schema, the cross-checks and the re-simulation must refuse what they
  recompute; the agent's own output (retrievals, agent statistics) is covered by the digest only.
* ``resealed-agent``: the same, checked with the agent re-run from ``config.yaml`` (the default):
  only what nothing recomputes may pass (measured times; ``run_id``, which the config leaves to the
  output directory's name).

Outcomes: ``refused`` (exit 1, one line naming the field), ``accepted`` (exit 0), ``traceback``,
``other`` (any other exit or more than one line).

    python probes/attack_episode_log.py            # the table in probes/results/episode_log_attack.md
    python probes/attack_episode_log.py --stride 10  # every 10th change only (quicker)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "probes"))

from attack_snapshot import _REMOVE, _paths, _variants  # noqa: E402  (one mutation generator for both sweeps)

from embodmem.episode_log import seal  # noqa: E402
from embodmem.replay import main as replay_main  # noqa: E402

OVERRIDES = [
    "env.max_steps=25",
    "experiment.conditions=[warm]",
    "experiment.baselines=[]",
    "logger.progress=false",
    "logger.plots=false",
]
LOG_NAME = "seq=wreck_then_barrel-world=1001-seed=0-task=1-agent=memory-cond=warm.json"
SWEEPS = ("fields", "resealed-env", "resealed-agent")


def write_run(run_dir: Path) -> Path:
    """A real run (the app, as ``embodmem-run`` runs it) into ``run_dir``; returns the attacked log."""
    from hydra import compose, initialize_config_dir

    from embodmem.app import CONFIG_DIR, run

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=OVERRIDES)
    with contextlib.redirect_stdout(io.StringIO()):
        run(cfg, run_dir)
    return run_dir / "episodes" / LOG_NAME


def mutations(log: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(label, changed log) for every field: value and type changes, removal."""
    for path in _paths(log):
        if path in ((), ("digest",)):
            continue
        value = log
        for p in path:
            value = value[p]
        changes = [(repr(v), v) for v in _variants(value)] + (
            [("removed", _REMOVE)] if isinstance(path[-1], str) else []
        )
        for what, new in changes:
            m = json.loads(json.dumps(log))
            parent = m
            for p in path[:-1]:
                parent = parent[p]
            if new is _REMOVE:
                del parent[path[-1]]
            else:
                parent[path[-1]] = new
            if m == log:  # no change (e.g. 0 where 0 was)
                continue
            yield f"{'.'.join(map(str, path))} -> {what}"[:90], m


def attack(
    sweep: str, work: Path, stride: int = 1, source: Path | None = None
) -> tuple[Counter[str], dict[str, list[str]]]:
    """Run one sweep (one of :data:`SWEEPS`) in ``work``; every ``stride``-th change only.

    Args:
        source: the log to attack, ``<run>/episodes/<name>.json`` with the run's config.yaml (copied
            into ``work``); default: :data:`LOG_NAME` of a fresh run (:func:`write_run`).

    Returns:
        Outcome counts and, per outcome, the labels (``path -> change  message``).
    """
    if sweep not in SWEEPS:
        raise ValueError(f"sweep {sweep!r} is not one of {SWEEPS}")
    if source is None:
        good = write_run(work / "run")
    else:
        good = work / "run" / "episodes" / source.name
        good.parent.mkdir(parents=True)
        good.write_bytes(source.read_bytes())
        (work / "run" / "config.yaml").write_bytes((source.parent.parent / "config.yaml").read_bytes())
    log = json.loads(good.read_text())
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    target = good.parent / "tampered.json"  # beside the real logs: the run's config.yaml is found
    flags = ["--check", "--no-agent"] if sweep == "resealed-env" else ["--check"]
    for i, (label, changed) in enumerate(mutations(log)):
        if i % stride:
            continue
        if sweep != "fields":
            try:
                changed = seal(changed)
            except ValueError:  # not JSON-serialisable any more: nothing to seal
                continue
        target.write_text(json.dumps(changed))
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = replay_main([str(target), *flags])
        except Exception as e:
            outcome, detail = "traceback", f"{type(e).__name__}: {e}"
        else:
            lines = err.getvalue().strip().splitlines()
            outcome = "refused" if code == 1 and len(lines) == 1 else "accepted" if code == 0 else "other"
            detail = lines[0].split(": ", 2)[-1] if lines else ""
        counts[outcome] += 1
        examples.setdefault(outcome, []).append(f"{label}  {detail}"[:240])
    return counts, examples


def accepted_fields(examples: dict[str, list[str]]) -> Counter[str]:
    """Accepted changes per field (the path without list indices past the first level)."""
    fields: Counter[str] = Counter()
    for e in examples.get("accepted", []):
        path = e.split(" -> ")[0].split(".")
        fields[".".join(p if not p.isdigit() else "N" for p in path)] += 1
    return fields


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", type=int, default=3, help="refusals printed per sweep")
    parser.add_argument("--stride", type=int, default=1, help="try every N-th change only")
    parser.add_argument("--sweeps", nargs="+", choices=SWEEPS, default=list(SWEEPS))
    args = parser.parse_args(argv)
    print("| sweep | tried | refused | accepted | traceback | other | seconds | accepted fields |")
    print("|---|---|---|---|---|---|---|---|")
    shown = []
    for sweep in args.sweeps:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            counts, examples = attack(sweep, Path(tmp), args.stride)
        seconds = time.perf_counter() - started
        fields = ", ".join(f"{f} ({n})" for f, n in sorted(accepted_fields(examples).items())) or "none"
        print(
            f"| {sweep} | {sum(counts.values())} | {counts['refused']} | {counts['accepted']} | "
            f"{counts['traceback']} | {counts['other']} | {seconds:.0f} | {fields} |"
        )
        shown += [(sweep, o, e) for o, ex in examples.items() for e in (ex if o != "refused" else ex[: args.show])]
    print()
    for sweep, outcome, example in shown:
        print(f"{sweep:14s} {outcome:9s} {example}")


if __name__ == "__main__":
    main()
