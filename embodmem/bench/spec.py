"""The frozen benchmark spec: which sequences, worlds, sensing, scoring and tracks a version means.

A spec version is a JSON file shipped in the package (``embodmem/bench/specs/v<N>.json``); its
content hash (SHA-256 of its canonical JSON: sorted keys, no spaces) names exactly what a result was
measured on, so two results with the same version and hash ran the same tasks on the same worlds and
were scored the same way. A result whose spec hash differs is refused by ``embodmem-bench verify``.

The file repeats what the code defines (the sequences' tasks, the sensing settings, the split ranges,
the question files' checksums) instead of pointing at it: :func:`check_against_code` refuses to run
when the code has drifted from the spec, so a changed task can never be scored under an old version.

Versions: v1 (category, instance, lifelong, EQA; the embedder left to the submitter) and v2 (v1's
tasks, the instance group's embedder fixed to the CLIP that tells appearance variants apart, and two
changing-world groups scored with staleness measures). A published version is never edited.

Example:
    >>> spec = load_spec(2)
    >>> spec.version, sorted(spec.groups)
    (2, ['category', 'changing', 'changing_instance', 'instance', 'lifelong'])
    >>> spec.groups["instance"].embedder
    {'model': 'embodmem-tiny-clip', 'pretrained': 'variants'}
    >>> spec.world_seeds("dev", 3)
    [1000, 1001, 1002]
    >>> load_spec(7)
    Traceback (most recent call last):
    ...
    embodmem.bench.spec.SpecError: spec version 7 does not exist; valid versions: 1, 2
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SPEC_DIR = Path(__file__).resolve().parent / "specs"
"""Where the spec files live (package data)."""
SPLIT_NAMES: tuple[str, ...] = ("dev", "test")
EQA_GROUP = "eqa"
"""The question-answering group: scored from answers, not from episodes."""


class SpecError(ValueError):
    """A spec, track, split or group that does not exist or does not match the code (one line)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SplitSpec(_Frozen):
    """A split's worlds: ``worlds`` consecutive world seeds from ``first_world``."""

    first_world: int = Field(ge=0)
    worlds: int = Field(ge=1)
    purpose: str


class ChangeSpec(_Frozen):
    """One change of a changing world, every field of embodmem.envs.changes.WorldChange."""

    action: str
    object: str
    task: int
    instance: int
    step: int
    to: str
    variant: str | None
    distance: int


class WorldChangesSpec(_Frozen):
    """A changing world's change set, every field of embodmem.envs.changes.WorldChanges (the
    ``world/changes`` file of the same name must still say the same)."""

    name: str
    seed: int
    hoist: bool
    changes: list[ChangeSpec]


class GroupSpec(_Frozen):
    """A family of task sequences run with the same environment changes."""

    description: str
    env: dict[str, bool | int | float | str | None]
    """Changes to :attr:`BenchSpec.sensing` for this group (e.g. worlds with appearance variants)."""
    sleep_between_tasks: bool
    sequences: dict[str, list[str]]
    """Sequence name -> its tasks, in order."""
    embedder: dict[str, str | int | float | bool | None] | None = None
    """Embedder settings every agent of this group perceives with (None: the submitter's choice):
    instance goals are only comparable when every memory sees through the same CLIP."""
    world_changes: WorldChangesSpec | None = None
    """The world's changes between tasks (None: a static world)."""


class QuestionFileSpec(_Frozen):
    file: str
    """A question file shipped with embodmem (embodmem.eqa.files.question_file)."""
    sha256: str
    """The checksum its header carries (of its tours and questions)."""


class EQASpec(_Frozen):
    description: str
    questions: dict[str, QuestionFileSpec]
    """Split name -> its question file."""


class CISpec(_Frozen):
    method: str
    resamples: int
    confidence: float
    seed: int


class ScoringSpec(_Frozen):
    scorer: str
    """The scorer's name and version (one of embodmem.bench.score.SCORERS)."""
    metric: str
    tasks: Literal["later", "all"]
    condition: str
    group_score: str
    eqa_metric: str
    ci: CISpec
    staleness: str | None = None
    """What the changing-world groups add to a sequence's figures (None: no changing world)."""


class TrackSpec(_Frozen):
    """A budget track: None means no limit."""

    description: str
    memory_bytes: int | None = Field(ge=1)
    """Bytes the agent may carry between tasks (its saved state, and its vector codes after any task)."""
    steps_per_episode: int = Field(ge=1)
    """Actions per task: the environment ends the task there."""
    vlm_calls_per_episode: int | None = Field(ge=1)
    vlm_tokens_per_episode: int | None = Field(ge=1)
    """Prompt plus completion tokens per task."""


class BenchSpec(_Frozen):
    """One version of the benchmark (the content of ``specs/v<N>.json``)."""

    benchmark: Literal["embodmem-bench"]
    version: int = Field(ge=1)
    description: str
    seed: int = Field(ge=0)
    start: str
    splits: dict[str, SplitSpec]
    sensing: dict[str, bool | int | float | str | list[str] | None]
    """Every field of the environment's settings (embodmem.envs.config.EnvConfig)."""
    groups: dict[str, GroupSpec]
    eqa: EQASpec
    scoring: ScoringSpec
    tracks: dict[str, TrackSpec]

    def track(self, name: str) -> TrackSpec:
        """The track ``name``; an unknown name lists the valid ones."""
        if name not in self.tracks:
            raise SpecError(
                f"--track: {name!r} does not exist in spec v{self.version}; valid tracks: {', '.join(self.tracks)}"
            )
        return self.tracks[name]

    def split(self, name: str) -> SplitSpec:
        if name not in self.splits:
            raise SpecError(
                f"--split: {name!r} does not exist in spec v{self.version}; valid splits: {', '.join(self.splits)}"
            )
        return self.splits[name]

    def group_names(self) -> tuple[str, ...]:
        """Every group a run may ask for: the episode groups, then ``eqa``."""
        return (*self.groups, EQA_GROUP)

    def check_groups(self, names: list[str]) -> None:
        unknown = [n for n in names if n not in self.group_names()]
        if unknown:
            raise SpecError(
                f"--groups: {unknown[0]!r} does not exist in spec v{self.version}; valid groups: {', '.join(self.group_names())}"
            )

    def world_seeds(self, split: str, n: int | None = None) -> list[int]:
        """The first ``n`` worlds of ``split`` (all of them when None)."""
        s = self.split(split)
        if n is not None and not 1 <= n <= s.worlds:
            raise SpecError(f"--worlds: {n} is not allowed for split {split!r}; allowed: 1 to {s.worlds}")
        return list(range(s.first_world, s.first_world + (s.worlds if n is None else n)))

    def group_of(self, sequence: str) -> str | None:
        """The group holding ``sequence`` (None: not in this spec)."""
        return next((g for g, group in self.groups.items() if sequence in group.sequences), None)


def canonical_json(value: object) -> bytes:
    """The bytes a hash is taken over: sorted keys, no spaces, UTF-8.

    >>> canonical_json({"b": 1, "a": [1.5, None]})
    b'{"a":[1.5,null],"b":1}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def available_versions() -> tuple[int, ...]:
    """Every spec version shipped with this package, oldest first."""
    found = (re.fullmatch(r"v(\d+)\.json", p.name) for p in SPEC_DIR.iterdir())
    return tuple(sorted(int(m.group(1)) for m in found if m))


@cache
def _read(version: int) -> tuple[BenchSpec, str]:
    path = SPEC_DIR / f"v{version}.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    try:
        spec = BenchSpec.model_validate(raw)
    except ValidationError as err:  # a shipped file that does not read is a packaging bug: say where
        first = err.errors(include_url=False)[0]
        raise SpecError(f"{path}: field {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if spec.version != version:
        raise SpecError(f"{path}: says version {spec.version}; its name says {version}")
    return spec, sha256_hex(canonical_json(raw))


def load_spec(version: int | str) -> BenchSpec:
    """The spec of ``version`` (1 or "v1"); an unknown version lists the valid ones."""
    text = str(version).removeprefix("v")
    versions = available_versions()
    if not text.isdigit() or int(text) not in versions:
        raise SpecError(f"spec version {version} does not exist; valid versions: {', '.join(map(str, versions))}")
    return _read(int(text))[0]


def spec_hash(version: int | str) -> str:
    """SHA-256 of the canonical JSON of spec ``version``."""
    load_spec(version)
    return _read(int(str(version).removeprefix("v")))[1]


def check_against_code(spec: BenchSpec) -> None:
    """Refuse (one line) when the code no longer defines what ``spec`` froze: a sequence's tasks, the
    sensing settings, a split's worlds or a question file's checksum. Runs before any episode."""
    import dataclasses

    from embodmem.envs.config import EnvConfig
    from embodmem.envs.tasks import SEQUENCES
    from embodmem.eqa.files import load_questions, question_file
    from embodmem.splits import get_split

    for group in spec.groups.values():
        for name, tasks in group.sequences.items():
            if tuple(tasks) != SEQUENCES.get(name):
                raise SpecError(
                    f"sequence {name!r}: spec v{spec.version} freezes {tasks}, the code defines "
                    f"{list(SEQUENCES.get(name, ()))}; this code cannot run spec v{spec.version}"
                )
    for group in spec.groups.values():
        if group.world_changes is not None:
            check_changes_file(spec, group.world_changes, next(iter(group.sequences)), group.env)
    fields = {f.name for f in dataclasses.fields(EnvConfig)}
    if set(spec.sensing) != fields:
        differ = sorted(set(spec.sensing) ^ fields)
        raise SpecError(f"sensing: fields {differ} differ between spec v{spec.version} and EnvConfig")
    for name, s in spec.splits.items():
        split = get_split(name)
        if s.first_world not in split or s.first_world + s.worlds - 1 not in split:
            raise SpecError(f"split {name!r}: spec worlds {s.first_world}+{s.worlds} lie outside {split.range_text}")
    for name, q in spec.eqa.questions.items():
        found = load_questions(question_file(q.file))
        got = json.loads(question_file(q.file).read_text(encoding="utf-8").split("\n", 1)[0]).get("sha256")
        if got != q.sha256 or found.split != name:
            raise SpecError(f"question file {q.file!r}: checksum {got} differs from spec v{spec.version}'s {q.sha256}")


def check_changes_file(
    spec: BenchSpec, frozen: WorldChangesSpec, sequence: str, env: dict[str, bool | int | float | str | None]
) -> None:
    """The ``world/changes`` file named by ``frozen`` still declares exactly the frozen changes."""
    import dataclasses

    import embodmem
    from embodmem.config import world_changes

    overrides = [f"world/changes={frozen.name}", f"experiment.sequence={sequence}"]
    overrides += [f"env.{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in env.items()]
    found = dataclasses.asdict(world_changes(embodmem.compose(overrides)))
    if found != frozen.model_dump():
        raise SpecError(
            f"world/changes={frozen.name}: the file differs from what spec v{spec.version} froze; "
            f"this code cannot run spec v{spec.version}"
        )
