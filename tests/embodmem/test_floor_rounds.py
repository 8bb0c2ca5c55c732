"""``benchmarks/floor.py`` runs the suite and its floor in turn, several rounds: it reports the median
round (whose seconds and ratio agree), and it checks that every round's lanes took the same actions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from embodmem.lockstep import LaneActions

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def floor(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import floor

    yield floor
    sys.modules.pop("floor", None)


def _round(floor, wall: float, floor_s: float):  # type: ignore[no-untyped-def]
    """A round of 2 jobs whose floor, spread over them, is ``floor_s``."""
    job = floor.JobFloor("0", {"env": floor_s, "lockstep embedding": floor_s}, 10, 5, 1, 0.0, {"env": 1.0})
    return floor.Round(Path("unused"), 2, wall, [job], 0.0, {})


def test_the_median_round_is_the_one_with_the_median_ratio(floor) -> None:  # type: ignore[no-untyped-def]
    rounds = [_round(floor, w, 10.0) for w in (30.0, 20.0, 25.0)]  # ratios 3.0, 2.0, 2.5
    assert [r.ratio for r in rounds] == [3.0, 2.0, 2.5]
    assert floor.median_round(rounds) is rounds[2]
    assert floor.median_round(rounds[:2]) is rounds[1]  # an even count: the lower of the middle two
    assert floor.median_round(rounds[:1]) is rounds[0]


def test_rounds_are_compared_action_for_action(floor, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    def record(directory: Path, jobs: list[tuple[list[int], list[list[int]]]]) -> list[object]:
        (directory / "lane-actions").mkdir(parents=True)
        for worlds, actions in jobs:
            LaneActions(4, worlds, [True] * len(worlds), actions).write(directory / "lane-actions")
        return floor.recorded_actions(directory)

    first = record(tmp_path / "a", [([1, 2], [[0, 1], [2]]), ([3], [[1]])])
    same_in_another_order = record(tmp_path / "b", [([3], [[1]]), ([1, 2], [[0, 1], [2]])])
    one_action_differs = record(tmp_path / "c", [([1, 2], [[0, 1], [1]]), ([3], [[1]])])
    assert first == same_in_another_order
    assert first != one_action_differs


def test_no_rounds_is_refused_in_one_line_before_any_work() -> None:
    refused = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "floor.py"), "--rounds", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].endswith("--rounds 0: must be at least 1")
