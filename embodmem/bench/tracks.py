"""Budget tracks: what a run used, read from its records, against what its track allows.

A track (spec ``tracks``) bounds the memory an agent carries between tasks, the actions per task and,
for VLM policies, the model calls and tokens per task. The step budget is also the environment's step
limit, so a task ends there; the others are measured after the fact from the records, and a run that
exceeds any of them is marked ``over_budget`` (listed, never ranked), not scored as if within it.
Because the figures come from the records, ``verify`` re-checks the budget from the shipped records.

Memory is measured twice, and the larger counts: the vector codes the agent's memory holds after every
action of every task (``memory_bytes_peak``, the runner's per-step peak; a record made before the
runner measured it has only ``memory_bytes``, the end of the task), and every byte of the state a warm
run saves at the end of each sequence (its ``save_state`` snapshot: frames, map, log), which covers
memories that are no vectors.

Example:
    >>> from embodmem.bench.spec import load_spec
    >>> track = load_spec(1).track("mem16k")
    >>> use = Usage(episodes=1, steps_total=90, steps_max_episode=90, memory_code_bytes_max=0,
    ...             carried_state_bytes_max=20_000, vlm_calls_max_episode=0, vlm_tokens_max_episode=0)
    >>> check_budget(track, use, "mem16k").violations
    ['carried memory 20000 bytes > 16384 (mem16k)']
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import JsonValue

from embodmem.bench.records import BenchRecord
from embodmem.bench.schema import Budget, Usage
from embodmem.bench.spec import TrackSpec


def _int(record: dict[str, JsonValue], key: str) -> int:
    value = record.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def usage_of(records: list[BenchRecord]) -> Usage:
    """The usage figures of a run's records."""
    episodes = [r.record for r in records if r.kind == "episode"]
    states = [r.record for r in records if r.kind == "state"]
    steps = [_int(e, "steps") or _int(e, "steps_before_abort") for e in episodes]
    return Usage(
        episodes=len(episodes),
        steps_total=sum(steps),
        steps_max_episode=max(steps, default=0),
        memory_code_bytes_max=max(
            (max(_int(e, "memory_bytes"), _int(e, "memory_bytes_peak")) for e in episodes), default=0
        ),
        carried_state_bytes_max=max((_int(s, "bytes") for s in states), default=0),
        vlm_calls_max_episode=max((_int(e, "vlm_calls") for e in episodes), default=0),
        vlm_tokens_max_episode=max(
            (_int(e, "vlm_prompt_tokens") + _int(e, "vlm_completion_tokens") for e in episodes), default=0
        ),
    )


def check_budget(track: TrackSpec, use: Usage, name: str = "") -> Budget:
    """Every budget of ``track`` that ``use`` exceeds, one line each."""
    label = f" ({name})" if name else ""
    violations = []
    memory = max(use.memory_code_bytes_max, use.carried_state_bytes_max)
    if track.memory_bytes is not None and memory > track.memory_bytes:
        violations.append(f"carried memory {memory} bytes > {track.memory_bytes}{label}")
    if use.steps_max_episode > track.steps_per_episode:
        violations.append(f"steps in one task {use.steps_max_episode} > {track.steps_per_episode}{label}")
    if track.vlm_calls_per_episode is not None and use.vlm_calls_max_episode > track.vlm_calls_per_episode:
        violations.append(f"VLM calls in one task {use.vlm_calls_max_episode} > {track.vlm_calls_per_episode}{label}")
    if track.vlm_tokens_per_episode is not None and use.vlm_tokens_max_episode > track.vlm_tokens_per_episode:
        violations.append(
            f"VLM tokens in one task {use.vlm_tokens_max_episode} > {track.vlm_tokens_per_episode}{label}"
        )
    return Budget(within=not violations, violations=violations)


def directory_bytes(directory: Path) -> tuple[int, int]:
    """(bytes, files) of every regular file below ``directory``."""
    total = files = 0
    for root, _, names in os.walk(directory):
        for n in names:
            path = Path(root) / n
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
                files += 1
    return total, files
