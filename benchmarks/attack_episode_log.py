"""Tamper with a real episode log and count how ``embodmem-replay --check`` receives each change.

Sweeps over one log written by the runner (a random agent, 20 steps, with a retrieval added):

* ``fields``: every field (leaf and container) changed in value or type, or removed; the digest is
  left as written, as an edit or corruption would leave it. Every change must be refused.
* ``resealed``: the same changes with the digest recomputed, as a deliberate forger could. Then the
  schema, the cross-checks and the replay's comparisons must refuse it; what nothing recomputes
  (retrieval contents, agent statistics, run labels) is covered by the digest only.

Outcomes: ``refused`` (exit 1, one line naming the field), ``accepted`` (exit 0), ``traceback``.

    python benchmarks/attack_episode_log.py
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from attack_snapshot import _REMOVE, _paths, _variants  # noqa: E402  (one mutation generator for both sweeps)

from embodmem.agents.random_agent import RandomAgent  # noqa: E402
from embodmem.envs.underwater import UnderwaterEnv  # noqa: E402
from embodmem.episode_log import seal  # noqa: E402
from embodmem.replay import main as replay_main  # noqa: E402
from embodmem.retrieval import Retrieval, RetrievalEvent  # noqa: E402
from embodmem.runner import RunWriter, run_episode  # noqa: E402

ENV_KW: dict[str, Any] = {"size": 24, "max_steps": 20, "image_size": 32, "odometry_noise": 0.1}


def write_log(run_dir: Path) -> Path:
    """One real episode through the runner and RunWriter, with one retrieval, as a sealed log."""
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=2, **ENV_KW)
    result = run_episode(
        env, RandomAgent(seed=4, stop_probability=0.0), {"task": "barrel", "world_seed": 2, "start": "random"}, 7
    )
    hit = Retrieval(0.9, 3, (4.0, 5.0, 1), "wreck", 11)
    result.log["retrievals"] = [RetrievalEvent(2, "find oil drums", [hit]).to_log()]
    result.record.update(sequence="s", world_seed=2, seed=0, task_index=2, agent="random", condition="single")
    result.log.update(task_index=2, condition="single")
    RunWriter(run_dir, env_kwargs=dict(ENV_KW)).write(result)
    return run_dir / result.record["episode_log"]


def mutations(log: dict[str, Any]):
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


def attack(kind: str, work: Path) -> tuple[Counter[str], dict[str, list[str]]]:
    """Run one sweep (``"fields"`` or ``"resealed"``); returns outcome counts and labels per outcome."""
    good = write_log(work / "run")
    log = json.loads(good.read_text())
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    target = work / "tampered.json"
    for label, changed in mutations(log):
        if kind == "resealed":
            try:
                changed = seal(changed)
            except ValueError:  # not JSON-serialisable any more: nothing to seal
                continue
        target.write_text(json.dumps(changed))
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = replay_main([str(target), "--check"])
        except Exception as e:
            outcome, detail = "traceback", f"{type(e).__name__}: {e}"
        else:
            lines = err.getvalue().strip().splitlines()
            outcome = "refused" if code == 1 and len(lines) == 1 else "accepted" if code == 0 else "other"
            detail = lines[0].split(": ", 2)[-1] if lines else ""
        counts[outcome] += 1
        examples.setdefault(outcome, []).append(f"{label}  {detail}"[:200])
    return counts, examples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", type=int, default=3, help="refusals printed per sweep")
    args = parser.parse_args(argv)
    print("| sweep | tried | refused | accepted | traceback |")
    print("|---|---|---|---|---|")
    shown = []
    for kind in ("fields", "resealed"):
        with tempfile.TemporaryDirectory() as tmp:
            counts, examples = attack(kind, Path(tmp))
        print(
            f"| {kind} | {sum(counts.values())} | {counts['refused']} | {counts['accepted']} | {counts['traceback']} |"
        )
        shown += [(kind, o, e) for o, ex in examples.items() for e in (ex if o != "refused" else ex[: args.show])]
    print()
    for kind, outcome, example in shown:
        print(f"{kind:9s} {outcome:9s} {example}")


if __name__ == "__main__":
    main()
