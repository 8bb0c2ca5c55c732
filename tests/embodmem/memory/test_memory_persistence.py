"""Save/load: identical answers, atomic generations, refusal of bad files by name."""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import warnings
from pathlib import Path

import faiss
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import embodmem.memory.persistence as persistence
from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig, MemoryLoadError
from embodmem.memory.records import QueryFilter

D = 16


def _memory(n: int, factory: str = "Flat", seed: int = 0, **kw: object) -> AgentMemory:
    cfg = MemoryConfig(
        dim=D,
        short_term_capacity=8,
        consolidate_to=4,
        index_factory=factory,
        train_min=40,
        train_sample=80,
        node_distance=2.0,
        **kw,
    )  # type: ignore[arg-type]
    mem = AgentMemory(cfg)
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((5, D))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n):
            v = centres[(i // 7) % 5] + 0.3 * rng.standard_normal(D)
            thumb = np.full((12, 12, 3), i % 255, np.uint8)
            label = ("barrel", "wreck")[i % 2] if i % 3 == 0 else ""  # every third frame shows a target
            mem.observe(
                v,
                FrameMeta(
                    "run",
                    f"task{i // 40}",
                    i // 20,
                    i % 20,
                    float(i % 13),
                    float(i // 13),
                    heading=i % 4,
                    label=label,
                    salience=0.5 + (i % 7) / 13 if label else 0.0,
                    thumbnail=thumb,
                ),
            )
    return mem


def _answers(mem: AgentMemory, **filters: object) -> list[list[tuple[int, float, str]]]:
    q = np.random.default_rng(42).standard_normal((6, D)).astype(np.float32)
    res = mem.query(q, k=7, where=QueryFilter(**filters), count_hits=False)  # type: ignore[arg-type]
    return [[(h.id, h.score, h.source) for h in row] for row in res]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(0, 120),
    factory=st.sampled_from(["Flat", "SQ8", "PQ4x4", "IVF4,PQ4x4", "IVF4,SQ4"]),
    do_sleep=st.booleans(),
    raw=st.sampled_from([{}, {"raw_vectors": "disk", "rerank": 6}, {"raw_vectors": "disk", "raw_dtype": "float32"}]),
)
def test_save_load_answers_identically(
    tmp_path_factory: pytest.TempPathFactory, n: int, factory: str, do_sleep: bool, raw: dict
) -> None:
    mem = _memory(n, factory, keep_thumbnails=True, thumbnail_size=8, **raw)
    if do_sleep:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mem.sleep()
    d = tmp_path_factory.mktemp("mem")
    mem.save(d)
    back = AgentMemory.load(d)
    assert _answers(back) == _answers(mem)
    assert _answers(back, task="task1") == _answers(mem, task="task1")
    assert back.stats() == mem.stats()
    assert back.config == mem.config
    assert back.map.to_json() == mem.map.to_json()
    if len(back.store):
        a, b = back.store.meta.meta(0), mem.store.meta.meta(0)
        assert a == b and np.array_equal(a.thumbnail, b.thumbnail)
    for part in (lambda m: [m.store.meta.meta(r) for r in range(len(m.store))], lambda m: m.fifo.metas):
        assert [(x.label, x.salience) for x in part(back)] == [(x.label, x.salience) for x in part(mem)]
    # both continue identically
    v = np.ones(D, np.float32)
    meta = FrameMeta("run", "task9", 99, 0, 1.0, 1.0)
    assert back.observe(v, meta) == mem.observe(v, meta)
    assert _answers(back) == _answers(mem)


def _saved(tmp_path: Path) -> tuple[AgentMemory, Path, dict]:
    mem = _memory(60)
    d = tmp_path / "mem"
    mem.save(d)
    return mem, d, json.loads((d / "manifest.json").read_text())


def test_generations_replace_old_files(tmp_path: Path) -> None:
    mem, d, man = _saved(tmp_path)
    assert man["generation"] == 1 and man["dim"] == D and man["format"] == "embodmem.memory"
    mem.observe(np.ones(D), FrameMeta("run", "x", 0, 0, 0.0, 0.0))
    (d / "notes.txt").write_text("mine")
    mem.save(d)
    names = sorted(p.name for p in d.iterdir() if p.name != persistence.LOCK)  # the writer lock stays
    assert names == [
        "arrays.000002.npz",
        "index.000002.faiss",
        "manifest.json",
        "map.000002.json",
        "notes.txt",
    ]


@pytest.mark.parametrize(
    ("raw_vectors", "target"),
    [("recent", "index.faiss"), ("recent", "arrays.npz"), ("recent", "map.json"), ("disk", "raw.npy")],
)
def test_missing_truncated_corrupted_files_named(tmp_path: Path, raw_vectors: str, target: str) -> None:
    _, d, man = (_saved_disk if raw_vectors == "disk" else _saved)(tmp_path)
    path = d / man["files"][target]["path"]
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(MemoryLoadError, match=f"{path.name}: truncated or padded"):
        AgentMemory.load(d)
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0xFF
    path.write_bytes(bytes(bad))
    with pytest.raises(MemoryLoadError, match=f"{path.name}: checksum mismatch"):
        AgentMemory.load(d)
    path.unlink()
    with pytest.raises(MemoryLoadError, match=f"{path.name}: missing"):
        AgentMemory.load(d)


def test_manifest_problems_named(tmp_path: Path) -> None:
    _, d, man = _saved(tmp_path)
    mpath = d / "manifest.json"
    text = mpath.read_text()
    mpath.write_text(text[: len(text) // 2])
    with pytest.raises(MemoryLoadError, match="manifest.json.*truncated"):
        AgentMemory.load(d)
    for change, pattern in [({"format": "other.thing"}, "foreign"), ({"version": 99}, "version 99")]:
        mpath.write_text(json.dumps(man | change))
        with pytest.raises(MemoryLoadError, match=f"manifest.json.*{pattern}"):
            AgentMemory.load(d)
    mpath.write_text(json.dumps(man))
    with pytest.raises(MemoryLoadError, match="manifest.json.*dim 16, expected 32"):
        AgentMemory.load(d, expect_dim=32)
    mpath.unlink()
    with pytest.raises(MemoryLoadError, match="manifest.json.*missing"):
        AgentMemory.load(d)


def test_labels_round_trip_and_old_format_refused(tmp_path: Path) -> None:
    """Frame labels and saliences come back exactly (long-term records and short-term frames); a
    snapshot of format version 2 (no label columns), resealed, is refused by its version."""
    mem, d, man = _saved(tmp_path)
    back = AgentMemory.load(d)
    labelled = [m for m in (*back.fifo.metas, *(back.store.meta.meta(r) for r in range(len(back.store)))) if m.label]
    assert labelled and {m.label for m in labelled} == {"barrel", "wreck"}
    assert back.fifo.metas == mem.fifo.metas  # salience was kept at float32 precision from the start
    old = man | {"version": 2}
    (d / "manifest.json").write_text(json.dumps(old | {"digest": persistence.manifest_digest(old)}))
    with pytest.raises(
        MemoryLoadError, match=r"manifest.json: field version: unsupported format version 2 \(this code reads 4\)"
    ):
        AgentMemory.load(d)


def test_memory_from_before_variants_refused_by_name(tmp_path: Path) -> None:
    """A snapshot of format 3 (frames embedded by the CLIP that predates instance variants) is
    refused in one line that says so, even with a valid digest."""
    _mem, d, man = _saved(tmp_path)
    old = man | {"version": 3}
    (d / "manifest.json").write_text(json.dumps(old | {"digest": persistence.manifest_digest(old)}))
    with pytest.raises(MemoryLoadError, match=r"field version: format 3 was saved before instance variants") as err:
        AgentMemory.load(d)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("array", "value", "pattern"),
    [
        ("meta_label", 999, "field state.store: metadata column 'label' has codes outside the vocabulary"),
        ("fifo_label", -1, "arrays.*npz: inconsistent arrays .metadata column 'label' has codes outside"),
        ("meta_salience", 1.5, "metadata column 'salience' has values outside \\[0, 1\\]"),
        ("fifo_salience", np.nan, "metadata column 'salience' has values outside"),
        ("meta_label", "", "metadata column 'salience' is non-zero for records with no label"),
        ("meta_episode", -1, r"metadata column 'episode' has values outside \[0, 2\*\*31\), e.g. -1"),
        ("fifo_heading", 4, r"arrays.*npz: inconsistent arrays .metadata column 'heading' has values outside \[0, 4\)"),
        ("meta_count", 0, r"metadata column 'count' has values outside \[1, 2\*\*31\), e.g. 0"),
        ("meta_node", -2, r"metadata column 'node' has values outside \[-1, 2\*\*62\)"),
        ("meta_x", np.inf, "metadata column 'x' has values that are not finite numbers"),
        ("meta_step_min", 10**9, "metadata columns 'step_min', 'step', 'step_max' are out of order"),
    ],
)
def test_bad_metadata_columns_refused_by_name(tmp_path: Path, array: str, value: object, pattern: str) -> None:
    """arrays.npz rewritten with valid checksums but labels outside the vocabulary, saliences outside
    [0, 1], a salience on a record with no label, or a field outside what a FrameMeta allows:
    refused, naming the column (records are read back from the columns without a per-record check)."""
    _, d, man = _saved(tmp_path)
    name = man["files"]["arrays.npz"]["path"]
    with np.load(d / name) as z:
        arrays = {k: z[k] for k in z.files}
    col = arrays[array].copy()
    if value == "":  # the empty string's code on a labelled record (its salience stays)
        row = int(np.flatnonzero(arrays["meta_salience"] > 0)[0])
        col[row] = list(arrays["meta_vocab"]).index("")
    else:
        col[0] = value
    arrays[array] = col
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **arrays)
    data = buf.getvalue()
    (d / name).write_bytes(data)
    man["files"]["arrays.npz"].update(bytes=len(data), sha256=persistence._sha256(data))
    (d / "manifest.json").write_text(json.dumps(man | {"digest": persistence.manifest_digest(man)}))
    with pytest.raises(MemoryLoadError, match=pattern):
        AgentMemory.load(d)


def test_foreign_index_with_valid_checksum_named(tmp_path: Path) -> None:
    _, d, man = _saved(tmp_path)
    other = faiss.IndexIDMap2(faiss.IndexFlatIP(2 * D))
    data = faiss.serialize_index(other).tobytes()
    name = man["files"]["index.faiss"]["path"]
    (d / name).write_bytes(data)
    man["files"]["index.faiss"].update(bytes=len(data), sha256=persistence._sha256(data))
    (d / "manifest.json").write_text(json.dumps(man | {"digest": persistence.manifest_digest(man)}))
    with pytest.raises(MemoryLoadError, match=f"{name}.*foreign index: dim 32"):
        AgentMemory.load(d)
    (d / name).write_bytes(b"not faiss at all")
    man["files"]["index.faiss"].update(bytes=16, sha256=persistence._sha256(b"not faiss at all"))
    (d / "manifest.json").write_text(json.dumps(man | {"digest": persistence.manifest_digest(man)}))
    with pytest.raises(MemoryLoadError, match=f"{name}.*not a FAISS index"):
        AgentMemory.load(d)


@pytest.mark.parametrize("crash_on", ["arrays", "map", "manifest"])
def test_crash_during_save_keeps_previous_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_on: str) -> None:
    mem, d, _ = _saved(tmp_path)
    before = _answers(mem)
    snapshot = {p.name: p.read_bytes() for p in d.iterdir()}
    for i in range(30):
        mem.observe(np.random.default_rng(i).standard_normal(D), FrameMeta("run", "new", 9, i, 0.0, 0.0))
    real = persistence.atomic_write_bytes

    def flaky(path: Path, data: bytes) -> Path:
        if Path(path).name.startswith(crash_on):
            real(Path(str(path) + ".partial"), data[: len(data) // 3])  # junk a real crash could leave
            raise OSError("disk full")
        return real(path, data)

    monkeypatch.setattr(persistence, "atomic_write_bytes", flaky)
    with pytest.raises(OSError, match="disk full"):
        mem.save(d)
    monkeypatch.undo()
    for name, data in snapshot.items():
        assert (d / name).read_bytes() == data  # the good copy is untouched
    assert _answers(AgentMemory.load(d)) == before
    mem.save(d)  # the next save succeeds and cleans up the crashed generation's files
    assert _answers(AgentMemory.load(d)) == _answers(mem)
    assert not any(
        p.name.startswith(("index.000002", "arrays.000002", "map.000002")) and not p.name.endswith(".partial")
        for p in d.iterdir()
    )


def test_load_of_copied_directory(tmp_path: Path) -> None:
    mem, d, _ = _saved(tmp_path)
    shutil.copytree(d, tmp_path / "copy")
    assert _answers(AgentMemory.load(tmp_path / "copy")) == _answers(mem)


def test_edited_manifest_refused_by_digest_and_fields_named(tmp_path: Path) -> None:
    _, d, man = _saved(tmp_path)
    mpath = d / "manifest.json"

    def write(m: dict, reseal: bool) -> None:
        mpath.write_text(json.dumps(m | ({"digest": persistence.manifest_digest(m)} if reseal else {})))

    write(man | {"state": man["state"] | {"queries": 6}}, reseal=False)
    with pytest.raises(MemoryLoadError, match="manifest.json: field digest"):
        AgentMemory.load(d)
    cases = [
        ({"state": man["state"] | {"next_id": 5}}, "field state.frames_written: 60 != state.next_id 5"),
        ({"state": man["state"] | {"segment": 5}}, "field state.segment"),
        ({"state": man["state"] | {"segment": ["run", "task9", 2]}}, "field state.segment: .*latest frame"),
        ({"files": []}, "field files"),
        (
            {"files": {k: {"path": v["path"]} for k, v in man["files"].items()}},
            r"field files\.index\.faiss\.bytes: Field required",
        ),
        ({"config": man["config"] | {"short_term_capacity": 3}}, "field config: .*consolidate_to"),
        ({"config": man["config"] | {"node_distance": 2.5}}, "field config.node_distance: 2.5, the saved map has 2.0"),
        (
            {"config": man["config"] | {"index_factory": "SQ8"}},
            "field state.store.trainings: 0 does not fit trained=True",
        ),
        (
            {"state": man["state"] | {"store": man["state"]["store"] | {"fixed_bytes": 7}}},
            "field state.store.fixed_bytes: 7",
        ),
        ({"generation": 2}, "field files.index.faiss.path"),
        ({"dim": "16"}, "field dim"),
    ]
    for change, pattern in cases:
        write(man | change, reseal=True)
        with pytest.raises(MemoryLoadError, match=f"manifest.json: {pattern}"):
            AgentMemory.load(d)


def test_stale_temp_files_removed_by_next_load_and_save(tmp_path: Path) -> None:
    mem, d, _ = _saved(tmp_path)
    stale = [d / ".manifest.json.k2j3h4.tmp", d / ".arrays.000002.npz.zz81.tmp"]
    for p in stale:
        p.write_bytes(b"half a file")
    (d / "mine.tmp").write_text("not ours")
    AgentMemory.load(d)
    assert not any(p.exists() for p in stale) and (d / "mine.tmp").exists()
    stale[0].write_bytes(b"half a file")
    mem.save(d)
    assert not stale[0].exists()


def _attack_module():
    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("attack_snapshot", root / "probes" / "attack_snapshot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", ["bytes", "resealed"])
def test_manifest_mutation_sweep(tmp_path: Path, kind: str) -> None:
    """Every byte of a real manifest changed or deleted: refused or identical, never a wrong load
    and never a raw traceback. Every field changed with the digest recomputed: refused, identical,
    or loaded as written into a memory that keeps working (for fields nothing else records)."""
    counts, examples = _attack_module().attack(kind, tmp_path)
    assert counts["traceback"] == 0, examples.get("traceback")
    assert counts["broken"] == 0, examples.get("broken")
    assert counts["refused"] > 0.8 * sum(counts.values())
    if kind == "bytes":
        assert counts["different"] == 0, examples.get("different")
        assert sum(counts.values()) > 5000
    else:
        allowed = ("config.", "state.store.train_error", "state.store.evicted", "state.store.trainings",
                   "state.store.raw_pos", "state.consolidations", "state.sleeps", "state.queries")  # fmt: skip
        assert all(e.startswith(allowed) for e in examples.get("different", [])), examples["different"]
        for must_refuse in ("state.next_id", "state.frames_written", "state.segment", "files.", "dim ", "generation"):
            assert not any(e.startswith(must_refuse) for e in examples.get("different", []))


_SAVER = """
import sys, numpy as np
from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig
mem = AgentMemory(MemoryConfig(dim=64, short_term_capacity=8, consolidate_to=4, raw_vectors=sys.argv[2]))
rng = np.random.default_rng(0)
for i in range(4000):
    mem.observe(rng.standard_normal(64), FrameMeta("run", "t", 0, i, float(i % 50), float(i // 50)))
print("ready", flush=True)
while True:
    mem.save(sys.argv[1])
"""


@pytest.mark.parametrize("raw", ["recent", "disk"])
def test_sigkill_during_saves_leaves_a_loadable_copy_and_no_temp_files(tmp_path: Path, raw: str) -> None:
    """A real process saving in a loop, killed with SIGKILL at several moments: the directory always
    loads, and the temp files a kill leaves are gone after the load (with the raw vectors on disk
    too: their streamed file is one more that a kill can cut short)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    d = tmp_path / "mem"
    for delay in (0.05, 0.13, 0.29, 0.41, 0.6):
        proc = subprocess.Popen([sys.executable, "-c", _SAVER, str(d), raw], stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        while not (d / "manifest.json").exists():
            time.sleep(0.01)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        mem = AgentMemory.load(d)
        assert mem.counters.frames_written == 4000
        assert (mem.stats()["raw_disk_bytes"] == len(mem.store) * 2 * 64) == (raw == "disk")
        assert not [p.name for p in d.iterdir() if p.name.endswith(".tmp")]


# ----------------------------------------------------------------------------- raw vectors on disk
RAW_KW = {"raw_vectors": "disk", "rerank": 8}


def _saved_disk(tmp_path: Path, seed: int = 0, name: str = "mem", **kw: object) -> tuple[AgentMemory, Path, dict]:
    mem = _memory(150, "IVF4,SQ4", seed=seed, **(RAW_KW | kw))  # type: ignore[arg-type]
    d = tmp_path / name
    mem.save(d)
    return mem, d, json.loads((d / "manifest.json").read_text())


def _reseal(d: Path, man: dict, data: bytes | None = None, **changes: object) -> None:
    """Write ``data`` as the raw file (if given), apply manifest ``changes``, and recompute sizes and
    digest: what a deliberate editor would do."""
    man = json.loads(json.dumps(man)) | changes
    if data is not None:
        (d / man["files"]["raw.npy"]["path"]).write_bytes(data)
        man["files"]["raw.npy"].update(bytes=len(data), sha256=persistence._sha256(data))
    (d / "manifest.json").write_text(json.dumps(man | {"digest": persistence.manifest_digest(man)}))


def test_disk_snapshot_carries_the_raw_vectors(tmp_path: Path) -> None:
    mem, d, man = _saved_disk(tmp_path)
    entry = man["files"]["raw.npy"]
    raw = np.load(d / entry["path"])
    assert entry["path"] == "raw.000001.npy" and raw.dtype == np.float16 and raw.shape == (len(mem.store), D)
    assert np.array_equal(raw.astype(np.float32), mem.store.vectors(mem.store.meta.ids))
    back = AgentMemory.load(d)
    assert _answers(back) == _answers(mem) and back.stats() == mem.stats()
    assert mem.stats()["raw_disk_bytes"] == len(mem.store) * 2 * D
    mem.observe(np.ones(D), FrameMeta("run", "x", 0, 0, 0.0, 0.0))
    mem.save(d)
    assert sorted(p.name for p in d.iterdir() if p.name.startswith("raw")) == ["raw.000002.npy"]


def test_disk_mismatched_raw_file_refused_by_name(tmp_path: Path) -> None:
    """Resealed manifests (sizes and digest recomputed) with a raw file that does not belong: another
    memory's vectors, too few rows, another dtype, not an array; and configs that disagree with the
    files listed."""
    mem, d, man = _saved_disk(tmp_path)
    other, d2, man2 = _saved_disk(tmp_path, seed=5, name="other")
    assert len(other.store) == len(mem.store)
    name = man["files"]["raw.npy"]["path"]
    foreign = (d2 / man2["files"]["raw.npy"]["path"]).read_bytes()
    good = (d / name).read_bytes()
    rows = np.load(d / name)

    def npy(a: np.ndarray) -> bytes:
        buf = io.BytesIO()
        np.save(buf, a)
        return buf.getvalue()

    cases = [
        (foreign, {}, f"{name}: field files.raw.npy: .* sampled records do not encode to the codes"),
        (npy(rows[::-1].copy()), {}, "do not encode to the codes"),
        (npy(rows[:-1]), {}, rf"holds \({len(rows) - 1}, {D}\) float16 raw vectors, but the index has {len(rows)}"),
        (npy(rows.astype(np.float32)), {}, "config raw_dtype='float16'"),
        (good, {"config": man["config"] | {"raw_dtype": "float32"}}, "holds .* float16 .* raw_dtype='float32'"),
        (b"definitely not numpy", {}, f"{name}: field files.raw.npy: not a .npy array"),
        (npy(np.zeros((3, 4, 2), np.float16)), {}, r"holds an array of shape \(3, 4, 2\)"),
        (good, {"config": man["config"] | {"raw_vectors": "recent", "rerank": 0}}, "manifest.json: field files: lists"),
        (good, {"config": man["config"] | {"raw_vectors": "recent"}}, "field config: .*rerank"),
    ]
    for data, changes, pattern in cases:
        _reseal(d, man, data, **changes)
        with pytest.raises(MemoryLoadError, match=pattern):
            AgentMemory.load(d)
    _reseal(d, man, good)
    assert _answers(AgentMemory.load(d)) == _answers(mem)


def test_disk_crash_while_writing_raw_keeps_previous_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mem, d, _ = _saved_disk(tmp_path)
    before = _answers(mem)
    snapshot = {p.name: p.read_bytes() for p in d.iterdir()}
    for i in range(40):
        mem.observe(np.random.default_rng(i).standard_normal(D), FrameMeta("run", "new", 9, i, 0.0, 0.0))
    real = persistence.atomic_write_with

    def flaky(path: Path, write: object) -> Path:
        if Path(path).name.startswith("raw"):

            def half(fh: object) -> None:
                write(fh)  # type: ignore[operator]
                raise OSError("disk full")

            return real(path, half)
        return real(path, write)  # type: ignore[arg-type]

    monkeypatch.setattr(persistence, "atomic_write_with", flaky)
    with pytest.raises(OSError, match="disk full"):
        mem.save(d)
    monkeypatch.undo()
    for name, data in snapshot.items():
        assert (d / name).read_bytes() == data  # the good copy is untouched
    assert not [p.name for p in d.iterdir() if p.name.endswith(".tmp") or p.name.startswith("raw.000002")]
    assert _answers(AgentMemory.load(d)) == before
    mem.save(d)
    assert _answers(AgentMemory.load(d)) == _answers(mem)


@pytest.mark.parametrize(
    "kw, pattern",
    [
        ({"rerank": 4}, "MemoryConfig.rerank must be 0 unless raw_vectors='disk'"),
        ({"raw_vectors": "nvme"}, "MemoryConfig.raw_vectors must be 'recent' or 'disk', got 'nvme'"),
        ({"raw_vectors": "disk", "raw_dtype": "bf16"}, "MemoryConfig.raw_dtype must be 'float16' or 'float32'"),
        ({"raw_vectors": "disk", "raw_dir": "/no/such/dir"}, "MemoryConfig.raw_dir must be None or an existing"),
        ({"raw_vectors": "disk", "rerank": True}, "MemoryConfig.rerank must be an int in"),
    ],
)
def test_bad_raw_config_named(kw: dict, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        MemoryConfig(dim=D, **kw)
