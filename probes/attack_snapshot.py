"""Attack a real memory snapshot's manifest and count how each change is received.

Two sweeps over ``manifest.json`` of a saved :class:`embodmem.memory.AgentMemory`:

* ``bytes``: every byte replaced (digits by each other digit, other characters by one substitute)
  and every byte deleted, as disk corruption or a careless edit would. The manifest's digest no
  longer matches, so every change must be refused (or be a no-op for the JSON content).
* ``resealed``: every field (leaf and container) changed in value, type, or removed, and unknown
  keys added; then the digest is recomputed, as a deliberate editor would. This exercises the field
  checks and cross-checks: a change must be refused, or load a memory that still works; fields that
  nothing else records (counters, thresholds) cannot be cross-checked and load as written.

Outcomes: ``refused`` (MemoryLoadError naming the file and field), ``same`` (loaded, identical to
the saved memory), ``different`` (loaded with other content: a silent wrong load for the bytes
sweep), ``broken`` (loaded, but the next observe/query/save raised), ``traceback`` (any other
exception).

    python probes/attack_snapshot.py            # prints the table of docs/runs.md
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig, MemoryLoadError
from embodmem.memory.persistence import manifest_digest

DIM = 8


def build_memory(factory: str = "SQ8") -> AgentMemory:
    """A small trained memory with long-term records, a non-empty FIFO, a map and a byte budget."""
    cfg = MemoryConfig(
        dim=DIM, short_term_capacity=8, consolidate_to=4, index_factory=factory, train_min=40,
        train_sample=64, byte_budget=4 * DIM * 40, node_distance=2.0, keep_thumbnails=True, thumbnail_size=4,
    )  # fmt: skip
    mem = AgentMemory(cfg)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(133):
            thumb = np.full((6, 6, 3), i % 255, np.uint8)
            mem.observe(
                rng.standard_normal(DIM),
                FrameMeta("run", f"task{i // 50}", i // 50, i, float(i % 7), float(i // 7), i % 4, thumbnail=thumb),
            )
        mem.query(rng.standard_normal(DIM), k=3)
    return mem


def fingerprint(mem: AgentMemory) -> str:
    """Everything a load restores, as text: config, counters, stored ids and metadata, map, answers."""
    q = np.random.default_rng(7).standard_normal((3, DIM)).astype(np.float32)
    answers = [
        [(h.id, round(h.score, 5), h.source, h.meta.task, h.meta.step) for h in row]
        for row in mem.query(q, k=5, count_hits=False)
    ]
    parts = [
        mem.config.to_dict(), mem.stats(), mem.store.meta.to_arrays()["ids"].tolist(), mem.fifo.ids,
        [repr(m) for m in mem.fifo.metas], mem.segment, mem.store.state()[2], mem.map.to_json(), answers,
    ]  # fmt: skip
    return json.dumps(parts, default=str)


def byte_mutations(text: str) -> Iterator[tuple[str, str]]:
    """(label, mutated text): each byte substituted (digits: every other digit) and each byte deleted."""
    for i, ch in enumerate(text):
        if ch.isdigit():
            subs = [d for d in "0123456789" if d != ch]
        elif ch.isalpha():
            subs = [chr((ord(ch.lower()) - 97 + 1) % 26 + 97)]
        else:
            subs = ["x" if ch != "x" else "y"]
        for s in subs:
            yield f"byte {i} {ch!r}->{s!r}", text[:i] + s + text[i + 1 :]
        yield f"byte {i} {ch!r} deleted", text[:i] + text[i + 1 :]


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _variants(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [not value, int(value), None, str(value)]
    if isinstance(value, int):
        return [
            value + 1,
            value - 1,
            2 * value + 2,
            0,
            -5,
            10**12,
            value + 0.5,
            float(value),
            str(value),
            None,
            [value],
        ]
    if isinstance(value, float):
        return [value * 1.5 + 0.1, -value, 0.0, 1e300, int(value), str(value), None]
    if isinstance(value, str):
        return [value + "x", value[:-1], "", 5, None, value.upper()]
    if value is None:
        return [0, 1, "x", [], {}]
    if isinstance(value, list):
        return [value[:-1], [*value, value[-1] if value else 0], {}, 5, None]
    return [{**value, "zzz": 1}, {k: v for k, v in list(value.items())[1:]}, [], 5, None]


def resealed_mutations(manifest: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(label, manifest): every field changed or removed (and unknown keys added), digest recomputed."""
    for path in _paths(manifest):
        if path in ((), ("digest",)):
            continue
        parent_path, key = path[:-1], path[-1]
        value = manifest
        for p in path:
            value = value[p]
        changes: list[tuple[str, Any]] = [(repr(v), v) for v in _variants(value)]
        if isinstance(key, str):
            changes.append(("removed", _REMOVE))
        for what, new in changes:
            m = copy.deepcopy(manifest)
            parent = m
            for p in parent_path:
                parent = parent[p]
            if new is _REMOVE:
                del parent[key]
            else:
                parent[key] = new
            m["digest"] = manifest_digest(m)
            yield f"{'.'.join(map(str, path))} -> {what}", m


_REMOVE = object()


def _works(mem: AgentMemory, directory: Path) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(12):
                mem.observe(np.random.default_rng(i).standard_normal(DIM), FrameMeta("run", "after", 99, i, 1.0, 1.0))
            mem.query(np.ones(DIM, np.float32), k=3)
            mem.save(directory / "resaved")
        return True
    except Exception:
        return False


def attack(kind: str, work: Path, factory: str = "SQ8") -> tuple[Counter[str], dict[str, list[str]]]:
    """Run one sweep (``"bytes"`` or ``"resealed"``); returns outcome counts and labels per outcome."""
    mem = build_memory(factory)
    good = work / "good"
    mem.save(good)
    expected = fingerprint(AgentMemory.load(good))
    text = (good / "manifest.json").read_text()
    if kind == "bytes":
        cases: Iterator[tuple[str, str]] = byte_mutations(text)
    else:
        cases = ((label, json.dumps(m, indent=2)) for label, m in resealed_mutations(json.loads(text)))
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    target = work / "target"
    for label, mutated in cases:
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(good, target)
        (target / "manifest.json").write_text(mutated)
        try:
            loaded = AgentMemory.load(target)
        except MemoryLoadError as e:
            outcome = "refused"
            detail = str(e).split(": ", 1)[1]
        except Exception as e:
            outcome, detail = "traceback", f"{type(e).__name__}: {e}"
        else:
            detail = ""
            if fingerprint(loaded) == expected:
                outcome = "same"
            else:
                outcome = "different" if _works(loaded, work) else "broken"
        counts[outcome] += 1
        examples.setdefault(outcome, []).append(f"{label}  {detail}"[:200])
    return counts, examples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--factory", default="SQ8", help="index factory of the attacked memory")
    parser.add_argument("--show", type=int, default=3, help="examples printed per outcome")
    args = parser.parse_args(argv)
    print("| sweep | tried | refused | same | different | broken | traceback |")
    print("|---|---|---|---|---|---|---|")
    shown = []
    for kind in ("bytes", "resealed"):
        with tempfile.TemporaryDirectory() as tmp:
            counts, examples = attack(kind, Path(tmp), args.factory)
        print(
            f"| {kind} | {sum(counts.values())} | {counts['refused']} | {counts['same']} | {counts['different']} | {counts['broken']} | {counts['traceback']} |"
        )
        shown += [
            (kind, o, e)
            for o, ex in examples.items()
            for e in (ex if o in ("different", "broken", "traceback") and kind == "resealed" else ex[: args.show])
        ]
    print()
    for kind, outcome, example in shown:
        print(f"{kind:9s} {outcome:9s} {example}")


if __name__ == "__main__":
    main()
