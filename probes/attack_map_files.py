"""200 mutations of a saved agent's map files, and two processes saving into one directory.

Two real snapshots are made first (``embodmem-run experiment.save_memory=true`` on two worlds, memory
agent, warm). Each mutation edits a copy of the first one's ``grid.npz`` / ``rejected_places.json``
(or its map manifest): swaps with the second snapshot (the file alone, or the whole map with its
manifest), symbolic links, wrong shapes, dtypes, NaN, out-of-range or non-integer coordinates,
truncation, deletion, byte flips, each content edit also *re-signed* (sizes, sha256 and the manifest
digest recomputed, as a careful forger would) so only the content checks can catch it. (A forger who
re-signs a *valid* map of another snapshot is not in the list: without a secret no check can tell a
well-formed forgery from a save; the pin to the memory catches every swap that is not re-signed.) Every copy is
then loaded as the harness loads it: ``MemoryAgent.load_state`` and the first task's ``reset`` (where
the grid meets the world). Outcomes: ``refused`` (a MemoryLoadError of one line), ``silent`` (loaded),
``traceback`` (any other error). Bar: 0 silent, 0 tracebacks. One mutation of each kind also goes
through the CLI (``experiment.load_memory=<copy>``): one line, exit 2 (caught up front) or 4.

Concurrent writers: two processes each save a memory and its map 40 times into one directory
(the code path of ``MemoryAgent.save_state``: writer lock, memory snapshot, map snapshot); counted:
saves completed, refused with the one-line MemoryLockError, failed otherwise (bar 0), and whether
the final snapshot loads.

    python probes/attack_map_files.py        # writes probes/results/map_files_attack.md
"""

from __future__ import annotations

import hashlib
import io
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
from cli_runs import REPO, WARM_ONLY, run_cli, write_results

from embodmem.memory.persistence import manifest_digest

RESULTS = REPO / "probes" / "results" / "map_files_attack.md"
MUTATIONS = 200
SEED = 24
RUN = [
    "experiment.tasks=[wreck,barrel]",
    "experiment.split=custom",
    *WARM_ONLY,
    "env.max_steps=40",
]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*RUN, *args, timeout=1200)


# -- mutations -------------------------------------------------------------------------------------


def entry(d: Path, logical: str) -> Path:
    manifest = json.loads((d / "manifest.json").read_text())
    return d / manifest["files"][logical]["path"]


def resign(d: Path, logical: str, data: bytes) -> None:
    """Write ``data`` as ``logical`` and re-sign the map manifest (sizes, sha256, digest)."""
    path = entry(d, logical)
    path.write_bytes(data)
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["files"][logical].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    manifest["digest"] = manifest_digest(manifest)
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2))


def grid_arrays(d: Path) -> dict[str, np.ndarray]:
    with np.load(entry(d, "grid.npz")) as npz:
        return {k: npz[k].copy() for k in npz.files}


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def mutations(a: Path, b: Path, rng: random.Random) -> list[tuple[str, Callable[[Path], None]]]:
    """(kind, edit) pairs; each edit mutates a fresh copy of snapshot ``a``."""
    out: list[tuple[str, Callable[[Path], None]]] = []

    def add(kind: str, fn: Callable[[Path], None]) -> None:
        out.append((kind, fn))

    for logical in ("grid.npz", "rejected_places.json"):
        add(f"swap {logical} (file)", lambda d, lg=logical: shutil.copy(entry(b, lg), entry(d, lg)))

        def swap_map(d: Path) -> None:
            for p in d.iterdir():
                if p.is_file() and p.name != "textlog.json":
                    p.unlink()
            for p in b.iterdir():
                if p.is_file():
                    shutil.copy(p, d / p.name)

        add("swap the whole map (with its manifest)", swap_map)

        def link_other(d: Path, lg: str = logical) -> None:
            target = entry(d, lg)
            target.unlink()
            os.symlink(entry(b, lg), target)

        def link_self(d: Path, lg: str = logical) -> None:
            target = entry(d, lg)
            copy = d.parent / f"{d.name}-{lg}"
            shutil.copy(target, copy)
            target.unlink()
            os.symlink(copy, target)

        add(f"symlink {logical} to the other snapshot", link_other)
        add(f"symlink {logical} to an identical copy", link_self)
        add(f"delete {logical}", lambda d, lg=logical: entry(d, lg).unlink())

    def link_manifest(d: Path) -> None:
        copy = d.parent / f"{d.name}-manifest.json"
        shutil.copy(d / "manifest.json", copy)
        (d / "manifest.json").unlink()
        os.symlink(copy, d / "manifest.json")

    add("symlink the map manifest", link_manifest)
    add("delete the map manifest", lambda d: (d / "manifest.json").unlink())

    # grid content, re-signed (the checksums agree: only the content checks can refuse)
    def grid_edit(kind: str, change: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]) -> None:
        add(kind, lambda d: resign(d, "grid.npz", npz_bytes(change(grid_arrays(d)))))

    grid_edit("grid of shape (1,)", lambda g: {k: v.reshape(-1)[:1] for k, v in g.items()})
    grid_edit("grid one row short", lambda g: {k: v[:-1] for k, v in g.items()})
    grid_edit("grid with an extra axis", lambda g: {k: v[..., None] for k, v in g.items()})
    grid_edit("grid arrays of two shapes", lambda g: {**g, "trail": g["trail"][:-1]})
    grid_edit("grid evidence as float with NaN", lambda g: {**g, "evidence": np.full(g["evidence"].shape, np.nan)})
    grid_edit("grid free as float64", lambda g: {**g, "free": g["free"].astype(np.float64)})
    grid_edit("grid without its trail", lambda g: {k: v for k, v in g.items() if k != "trail"})
    grid_edit("grid with an extra array", lambda g: {**g, "extra": np.zeros(3)})
    grid_edit("grid evidence as int64", lambda g: {**g, "evidence": g["evidence"].astype(np.int64)})
    add("grid as an object array (pickle)", lambda d: resign(d, "grid.npz", _pickled(grid_arrays(d))))

    def rejected_edit(kind: str, value: object) -> None:
        add(
            kind,
            lambda d: resign(
                d, "rejected_places.json", json.dumps({"places": {"find the barrel": [value]}, "views": {}}).encode()
            ),
        )

    for value in ([-99999999, 0], [1e30, 0], [0, -1], [10**9, 3], [3.5, 2], ["3", 2], [None, 1], [1, 2, 3], [1]):
        rejected_edit(f"rejected cell {value}", value)
    for pose in ([1, 2, 4], [1, 2, -1], [-5, 2, 0], [1e30, 2, 0], [1, 2]):
        add(
            f"rejected view {pose}",
            lambda d, p=pose: resign(
                d, "rejected_places.json", json.dumps({"places": {}, "views": {"m": [p]}}).encode()
            ),
        )
    for text in (
        b"",
        b"[]",
        b'{"places": {}}',
        b'{"places": [], "views": {}}',
        b"\xff\xfe",
        b'{"places": {}, "views": {}, "x": 1}',
    ):
        add(f"rejected_places.json = {text[:30]!r}", lambda d, t=text: resign(d, "rejected_places.json", t))

    # truncations and byte flips, not re-signed (checksums) and re-signed (the parsers)
    fixed = list(out)
    while len(out) < 2 * MUTATIONS:  # main() keeps the first MUTATIONS that change a byte
        logical = rng.choice(["grid.npz", "rejected_places.json", "manifest.json"])
        op = rng.choice(["truncate", "flip", "truncate re-signed", "flip re-signed"])
        if logical == "manifest.json" and op.endswith("re-signed"):
            op = op.split()[0]
        seed = rng.randrange(2**31)

        def edit(d: Path, lg: str = logical, op: str = op, seed: int = seed) -> None:
            path = d / "manifest.json" if lg == "manifest.json" else entry(d, lg)
            data = bytearray(path.read_bytes())
            r = random.Random(seed)
            if op.startswith("truncate"):
                data = data[: r.randrange(len(data))]
            else:
                for _ in range(r.randint(1, 4)):
                    i = r.randrange(len(data))
                    data[i] ^= 1 << r.randrange(8)
            if op.endswith("re-signed"):
                resign(d, lg, bytes(data))
            else:
                path.write_bytes(bytes(data))

        out.append((f"{op} {logical}", edit))
    assert len(fixed) < MUTATIONS
    return out


def _pickled(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **{**arrays, "trail": np.array([object()] * 4, dtype=object)})
    return buf.getvalue()


# -- loading as the harness does -------------------------------------------------------------------


def loaded_map(agent: object) -> tuple[bytes, str]:
    """What a load handed the agent: its grid and trail bytes and its rejected places."""
    grid = agent.grid  # type: ignore[attr-defined]
    arrays = b"".join(getattr(grid, n).tobytes() for n in ("free", "occupied", "evidence", "seen", "searched"))
    rejected = repr((sorted(agent.rejected_places.items()), sorted(agent.discredited_views.items())))  # type: ignore[attr-defined]
    return arrays + agent.trail.tobytes(), rejected  # type: ignore[attr-defined]


def try_load(directory: Path, make_agent: Callable[[], object], env: object) -> tuple[str, str, object]:
    from embodmem.memory import MemoryLoadError

    agent = make_agent()
    try:
        agent.load_state(directory)  # type: ignore[attr-defined]
        obs, _ = env.reset(seed=0, options={"task": "barrel"})  # type: ignore[attr-defined]
        agent.reset(obs, env.sensor_spec)  # type: ignore[attr-defined]
    except MemoryLoadError as err:
        text = str(err)
        return ("refused" if "\n" not in text else "traceback"), text, None
    except Exception as err:
        return "traceback", f"{type(err).__name__}: {err}", None
    return "silent", "", loaded_map(agent)


def tree(d: Path) -> dict[str, bytes]:
    """Every entry of a snapshot directory: file bytes, or the link target of a symbolic link."""
    return {
        str(p.relative_to(d)): (f"-> {os.readlink(p)}".encode() if p.is_symlink() else p.read_bytes())
        for p in sorted(d.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


# -- concurrent writers ----------------------------------------------------------------------------


def _writer(directory: str, seed: int, saves: int, results: multiprocessing.Queue) -> None:
    from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig
    from embodmem.memory.persistence import MemoryLockError, writer_lock
    from embodmem.memory.snapshot import RejectedPlaces, companion_digest_of_memory, save_map_snapshot

    rng = np.random.default_rng(seed)
    memory = AgentMemory(MemoryConfig(dim=128))
    vecs = rng.standard_normal((3000, 128)).astype(np.float32)
    for i, v in enumerate(vecs / np.linalg.norm(vecs, axis=1, keepdims=True)):
        memory.observe(v, FrameMeta("w", "wreck", 0, i, float(i % 64), float(i // 64 % 64), 0))
    grid = {"trail": rng.random((64, 64)) < 0.3, "free": rng.random((64, 64)) < 0.5}
    counts: Counter[str] = Counter()
    for _ in range(saves):
        try:
            d = Path(directory)
            with writer_lock(d):
                memory.save(d / "memory")
                save_map_snapshot(
                    d, grid, RejectedPlaces(places={}, views={}), companion_digest_of_memory(d / "memory")
                )
            counts["completed"] += 1
        except MemoryLockError as err:
            counts["refused (one line)" if "\n" not in str(err) else "refused (several lines)"] += 1
        except Exception as err:
            counts[f"failed: {type(err).__name__}"] += 1
        time.sleep(0.001)
    results.put(dict(counts))


def concurrent_writers(tmp: Path) -> tuple[dict[str, int], str]:
    from embodmem.memory import AgentMemory
    from embodmem.memory.snapshot import companion_digest_of_memory, read_map_snapshot

    ctx = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue = ctx.Queue()
    d = tmp / "shared"
    procs = [ctx.Process(target=_writer, args=(str(d), s, 40, results)) for s in (1, 2)]
    for p in procs:
        p.start()
    totals: Counter[str] = Counter()
    for _ in procs:
        totals.update(results.get(timeout=1200))
    for p in procs:
        p.join(60)
    try:
        AgentMemory.load(d / "memory")
        read_map_snapshot(
            d, {"trail": np.dtype(bool), "free": np.dtype(bool)}, companion_digest_of_memory(d / "memory")
        )
        final = "loads"
    except Exception as err:
        final = f"does not load: {err}"
    return dict(totals), final


def main() -> None:
    from hydra import compose, initialize_config_module

    from embodmem.agents.memory_agent import MemoryAgent
    from embodmem.app import build_embedder
    from embodmem.envs.underwater import UnderwaterEnv

    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="map-attack-") as tmp_s:
        tmp = Path(tmp_s)
        proc = cli("experiment.world_seeds=[1000,1001]", "experiment.save_memory=true", f"hydra.run.dir={tmp / 'run'}")
        assert proc.returncode == 0, proc.stderr[-3000:]
        a, b = tmp / "run" / "memory" / "world1000", tmp / "run" / "memory" / "world1001"
        with initialize_config_module("embodmem.configs", version_base="1.3"):
            cfg = compose("config", overrides=RUN)
        embedder = build_embedder(cfg)
        env = UnderwaterEnv(world_seed=1000)
        status, _, original = try_load(a, lambda: MemoryAgent(embedder), env)
        assert status == "silent", "the unmodified snapshot must load"
        before = tree(a)
        no_ops = 0

        outcomes: Counter[str] = Counter()
        by_kind: dict[str, Counter[str]] = {}
        examples: dict[str, str] = {}
        samples: dict[str, Path] = {}
        done = 0
        for i, (kind, edit) in enumerate(mutations(a, b, rng)):
            if done == MUTATIONS:
                break
            d = tmp / "mut" / f"{i:03d}"
            shutil.copytree(a, d, symlinks=True)
            edit(d)
            if tree(d) == before:  # e.g. a swap of two identical files: not a mutation
                no_ops += 1
                continue
            done += 1
            status, text, got = try_load(d, lambda: MemoryAgent(embedder), env)
            if status == "silent" and got == original:
                status = "same content"  # a re-signed edit of bytes no reader uses (a zip timestamp)
            outcomes[status] += 1
            group = kind.split(" [")[0]
            by_kind.setdefault(group, Counter())[status] += 1
            examples.setdefault(group, text.replace(str(tmp), "<tmp>")[:160])
            samples.setdefault(group.split()[0], d)
            if status != "refused":
                print(f"{status}: {kind}: {text[:200]}", flush=True)
        print(outcomes, flush=True)

        cli_rows = []
        for group, d in sorted(samples.items()):
            t0 = time.monotonic()
            p = cli(
                "experiment.world_seeds=[1000]", f"experiment.load_memory={d}", f"hydra.run.dir={tmp / 'cli' / group}"
            )
            lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
            cli_rows.append((group, p.returncode, len(lines), time.monotonic() - t0, (lines[-1] if lines else "")))
            print(cli_rows[-1], flush=True)

        writers, final = concurrent_writers(tmp)
        print(writers, final, flush=True)

    table = [
        "# 200 mutations of the map files, and two writers",
        "",
        f"`python probes/attack_map_files.py` (seed {SEED}; two snapshots saved by `embodmem-run` on worlds 1000 and 1001).",
        "",
        f"**{MUTATIONS} mutations: {outcomes['refused']} refused in one line, {outcomes['silent']} silent loads "
        f"of a changed map, {outcomes['traceback']} tracebacks; {outcomes['same content']} re-signed edits loaded "
        f"the very same map (bytes no reader uses).** {no_ops} candidate edits changed no byte "
        "(e.g. swapping two identical files) and were not counted.",
        "",
        "| mutation | n | refused | silent | same content | traceback | first message |",
        "|---|---|---|---|---|---|---|",
    ]
    for group, c in sorted(by_kind.items()):
        msg = examples[group].replace("|", "/")
        table.append(
            f"| {group} | {sum(c.values())} | {c['refused']} | {c['silent']} | {c['same content']} | {c['traceback']} | {msg} |"
        )
    table += [
        "",
        "Through the CLI (`embodmem-run experiment.load_memory=<mutated copy>`), one mutation of each first word:",
        "",
        "| mutation | exit | stderr lines | seconds | line |",
        "|---|---|---|---|---|",
        *(
            f"| {g} | {rc} | {n} | {s:.1f} | {line.replace(str(tmp), '<tmp>').replace('|', '/')[:200]} |"
            for g, rc, n, s, line in cli_rows
        ),
        "",
        f"Two processes saving 40 times each into one directory: {writers}; the final snapshot {final}.",
        "",
    ]
    write_results(RESULTS, table)


if __name__ == "__main__":
    main()
