"""The run profiler: wall seconds and entries per section name."""

from __future__ import annotations

import time

import pytest

from embodmem.profiling import Profiler


def test_sections_add_up_their_time_and_entries_and_a_reentered_one_counts_its_time_once() -> None:
    profiler = Profiler()
    for _ in range(3):
        with profiler.section("agent"), profiler.section("agent/planning"):
            time.sleep(0.002)
    with profiler.section("env"), profiler.section("env"):  # entered again inside itself: timed once
        time.sleep(0.01)
    assert profiler.calls == {"agent": 3, "agent/planning": 3, "env": 2}
    assert profiler.seconds["agent"] >= profiler.seconds["agent/planning"] >= 0.006
    assert 0.01 <= profiler.seconds["env"] < 0.02
    rows = {row["section"]: row for row in profiler.table(steps=3)}
    assert rows["agent"]["share"] + rows["env"]["share"] == pytest.approx(1.0, abs=0.002)  # top-level only


def test_a_part_entered_inside_another_stops_the_outer_parts_clock() -> None:
    """A plan that queries memory: the query counts under its own part only, and the parts add up
    to at most their whole."""
    profiler = Profiler()
    with profiler.section("agent"), profiler.section("agent/planning"):
        time.sleep(0.01)
        with profiler.section("agent/memory_query"):
            time.sleep(0.03)
        time.sleep(0.01)
    seconds = profiler.seconds
    assert 0.03 <= seconds["agent/memory_query"] < 0.04
    assert 0.02 <= seconds["agent/planning"] < 0.03  # its own 20 ms, not the query's 30
    assert seconds["agent"] >= seconds["agent/planning"] + seconds["agent/memory_query"]
