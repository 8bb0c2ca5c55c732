"""World splits: which world seeds each purpose may use, in one place.

Every trainer, calibration, benchmark and config takes its worlds from here, so no figure is reported
on worlds that were used to choose anything. The rule:

- ``embedder_train`` / ``embedder_validation``: the CLIP trainer (training frames / checkpoint choice).
- ``embedder_test``: held-out frames for the embedder's quality benchmark.
- ``calibration``: the agents' thresholds (tools/calibrate.py).
- ``dev``: everything else that chooses: iteration on agents, demo worlds, debugging.
- ``test``: read only by the benchmark suite (benchmarks/suite.py) to report; never to choose.
- ``custom``: any worlds of your own (no membership check; a test-split report refuses it).

Example:
    >>> get_split("test").worlds(3)
    [100000, 100001, 100002]
    >>> split_of(1018)
    'dev'
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Split:
    """A named, contiguous range of world seeds."""

    name: str
    start: int
    stop: int
    """One past the last world seed."""
    purpose: str

    def __contains__(self, world_seed: object) -> bool:
        return isinstance(world_seed, int) and self.start <= world_seed < self.stop

    def worlds(self, n: int | None = None, first: int | None = None) -> list[int]:
        """``n`` world seeds of the split from ``first`` (default: its first; all when ``n`` is None).

        >>> get_split("dev").worlds(2, first=1500)
        [1500, 1501]
        """
        start = self.start if first is None else first
        stop = self.stop if n is None else start + n
        if not (self.start <= start and stop <= self.stop):
            raise ValueError(f"split {self.name!r} holds worlds {self.range_text}; asked for {n} from {start}")
        return list(range(start, stop))

    @property
    def range_text(self) -> str:
        return f"{self.start}-{self.stop - 1}"


SPLITS: dict[str, Split] = {
    s.name: s
    for s in (
        Split("embedder_train", 0, 400, "frames the shipped CLIP was trained on"),
        Split("calibration", 500, 530, "agent thresholds (tools/calibrate.py)"),
        Split("dev", 1000, 2000, "iteration, demo worlds, debugging"),
        Split("memory_bench", 2000, 3000, "frame streams for the memory benchmarks"),
        Split("embedder_validation", 5000, 5040, "the CLIP trainer's checkpoint choice"),
        Split("embedder_test", 9000, 9060, "the embedder's held-out quality benchmark"),
        Split("test", 100_000, 110_000, "reported figures only (benchmarks/suite.py)"),
    )
}
CUSTOM = "custom"
SPLIT_NAMES: tuple[str, ...] = (*SPLITS, CUSTOM)


def get_split(name: str) -> Split:
    """The split called ``name``; a clear error names the allowed ones."""
    if name not in SPLITS:
        raise ValueError(f"split {name!r} is unknown; allowed: {', '.join(SPLITS)}")
    return SPLITS[name]


def choose_worlds(split: str, n: int, first: int | None = None) -> list[int]:
    """``n`` world seeds of ``split`` from ``first``: what a benchmark script's ``--split``,
    ``--worlds`` and ``--first`` ask for. ``custom`` takes any ``n`` consecutive seeds from
    ``first`` (required there: a custom range has no first world of its own).

    >>> choose_worlds("custom", 3, first=777)
    [777, 778, 779]
    >>> choose_worlds("custom", 2)
    Traceback (most recent call last):
    ...
    ValueError: --first: None is not allowed with --split custom; allowed: a world seed >= 0 (custom worlds have no first of their own)
    """
    if n < 1:
        raise ValueError(f"--worlds: {n} is not allowed; allowed: an integer >= 1")
    if split == CUSTOM:
        if first is None or first < 0:
            raise ValueError(
                f"--first: {first} is not allowed with --split custom; allowed: a world seed >= 0 "
                "(custom worlds have no first of their own)"
            )
        return list(range(first, first + n))
    if split not in SPLITS:
        raise ValueError(f"--split: {split!r} is not allowed; allowed: {', '.join(SPLIT_NAMES)}")
    return SPLITS[split].worlds(n, first=first)


def split_of(world_seed: int) -> str:
    """Name of the split holding ``world_seed``, or ``custom``."""
    for split in SPLITS.values():
        if world_seed in split:
            return split.name
    return CUSTOM


def check_worlds(split: str, world_seeds: list[int]) -> None:
    """Refuse a world list that does not belong to ``split`` (``custom`` takes any list, except that
    no list may mix the embedder's training worlds into a test-split report)."""
    if split not in SPLIT_NAMES:
        raise ValueError(f"experiment.split={split!r} is unknown; allowed: {', '.join(SPLIT_NAMES)}")
    if split == CUSTOM:
        return
    outside = [w for w in world_seeds if w not in SPLITS[split]]
    if outside:
        s = SPLITS[split]
        raise ValueError(
            f"experiment.world_seeds: {outside[:5]} lie outside split {split!r} ({s.range_text}); "
            f"use worlds in {s.range_text} or experiment.split=custom"
        )
