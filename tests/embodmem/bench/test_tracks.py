"""Budget tracks: usage read from records, every exceeded budget named, the carried state measured."""

from __future__ import annotations

from pathlib import Path

from embodmem.bench.records import BenchRecord
from embodmem.bench.run import state_records
from embodmem.bench.spec import load_spec
from embodmem.bench.tracks import check_budget, usage_of


def _episode(**fields: object) -> BenchRecord:
    return BenchRecord("category", "episode", {"sequence": "wreck_then_barrel", "world_seed": 1000, **fields})


def test_usage_reads_steps_memory_and_vlm_figures() -> None:
    records = [
        _episode(steps=120, memory_bytes=4096, vlm_calls=12, vlm_prompt_tokens=9000, vlm_completion_tokens=1000),
        _episode(
            aborted=True, steps_before_abort=30, vlm_calls=50, vlm_prompt_tokens=70_000, vlm_completion_tokens=500
        ),
        BenchRecord(
            "category", "state", {"sequence": "wreck_then_barrel", "world_seed": 1000, "bytes": 300_000, "files": 4}
        ),
    ]
    use = usage_of(records)
    assert (use.episodes, use.steps_total, use.steps_max_episode) == (2, 150, 120)
    assert (use.memory_code_bytes_max, use.carried_state_bytes_max) == (4096, 300_000)
    assert (use.vlm_calls_max_episode, use.vlm_tokens_max_episode) == (50, 70_500)
    spec = load_spec(1)
    assert check_budget(spec.track("open"), use).within
    over = check_budget(spec.track("mem256k"), use, "mem256k")
    assert not over.within and over.violations == ["carried memory 300000 bytes > 262144 (mem256k)"]
    vlm = check_budget(spec.track("vlm-lean"), use, "vlm-lean")
    assert vlm.violations == [
        "VLM calls in one task 50 > 40 (vlm-lean)",
        "VLM tokens in one task 70500 > 60000 (vlm-lean)",
    ]
    assert check_budget(spec.track("steps200"), usage_of([_episode(steps=201)])).violations == [
        "steps in one task 201 > 200"
    ]


def test_the_memory_budget_caps_the_peak_inside_a_task_not_only_its_end() -> None:
    # Grown to 20,000 bytes mid-task and evicted back to 4,096 by its end: over mem16k all the same.
    use = usage_of([_episode(steps=90, memory_bytes=4096, memory_bytes_peak=20_000)])
    assert use.memory_code_bytes_max == 20_000
    assert check_budget(load_spec(2).track("mem16k"), use, "mem16k").violations == [
        "carried memory 20000 bytes > 16384 (mem16k)"
    ]
    assert usage_of([_episode(steps=90, memory_bytes=4096)]).memory_code_bytes_max == 4096  # an older record


def test_state_records_measure_every_file_of_a_saved_memory(tmp_path: Path) -> None:
    saved = tmp_path / "memory"
    (saved / "deep_pair-world1003" / "memory").mkdir(parents=True)
    (saved / "deep_pair-world1003" / "memory" / "index.faiss").write_bytes(b"x" * 1000)
    (saved / "deep_pair-world1003" / "map.npz").write_bytes(b"y" * 24)
    (saved / "world1004").mkdir()
    (saved / "world1004" / "textlog.json").write_bytes(b"{}")
    records = state_records("category", saved)
    assert [r.record for r in records] == [
        {"sequence": "deep_pair", "world_seed": 1003, "bytes": 1024, "files": 2},
        {"sequence": None, "world_seed": 1004, "bytes": 2, "files": 1},
    ]
    assert state_records("category", tmp_path / "absent") == []
