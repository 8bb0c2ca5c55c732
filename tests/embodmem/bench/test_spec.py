"""The frozen spec: its hash is pinned, any task change changes it, the code still matches it."""

from __future__ import annotations

import copy
import json

import pytest

from embodmem.bench.schema import SCHEMA_PATH, schema_text
from embodmem.bench.spec import (
    SPEC_DIR,
    SpecError,
    available_versions,
    canonical_json,
    check_against_code,
    check_changes_file,
    load_spec,
    sha256_hex,
    spec_hash,
)

V1_SHA256 = "5d854041b9531f198bea68fb068e8d9861d5c7b5aab656fd2971795d9394f56b"
V2_SHA256 = "8c5b21d432dda6764c5de0662c59867250428f6612be259c7b1f609ddd21ce73"


def test_spec_hashes_are_pinned() -> None:
    # Changing a published version in any way breaks every result measured on it: publish a new one.
    assert spec_hash(1) == V1_SHA256
    assert spec_hash("v1") == V1_SHA256
    assert spec_hash(2) == V2_SHA256
    assert available_versions() == (1, 2)


def test_v2_keeps_v1s_tasks_fixes_the_instance_embedder_and_adds_changing_worlds() -> None:
    v1, v2 = load_spec(1), load_spec(2)
    for name, group in v1.groups.items():
        assert v2.groups[name].sequences == group.sequences and v2.groups[name].env == group.env
    assert v1.groups["instance"].embedder is None
    assert v2.groups["instance"].embedder == {"model": "embodmem-tiny-clip", "pretrained": "variants"}
    assert v2.groups["changing_instance"].embedder == v2.groups["instance"].embedder
    assert list(v2.groups["changing"].sequences) == ["revisit_shallow8"]
    changes = v2.groups["changing_instance"].world_changes
    assert changes is not None and changes.name == "moved_goat" and not changes.hoist
    assert v2.tracks == v1.tracks and v2.splits == v1.splits
    assert v2.scoring.scorer == "embodmem-bench-score/2" and v2.scoring.staleness


def test_a_changed_world_changes_file_is_refused() -> None:
    spec = load_spec(2)
    group = spec.groups["changing"]
    assert group.world_changes is not None
    moved = group.world_changes.model_copy(update={"seed": 1})
    with pytest.raises(SpecError, match="world/changes=moved_half: the file differs from what spec v2 froze"):
        check_changes_file(spec, moved, "revisit_shallow8", group.env)


def test_changing_any_task_changes_the_hash() -> None:
    raw = json.loads((SPEC_DIR / "v1.json").read_text())
    assert sha256_hex(canonical_json(raw)) == V1_SHA256
    edits = {
        "task": lambda s: s["groups"]["category"]["sequences"]["wreck_then_barrel"].reverse(),
        "world": lambda s: s["splits"]["test"].update(first_world=100_001),
        "sensing": lambda s: s["sensing"].update(max_steps=401),
        "scoring": lambda s: s["scoring"].update(tasks="all"),
        "track": lambda s: s["tracks"]["mem16k"].update(memory_bytes=16385),
    }
    for what, edit in edits.items():
        changed = copy.deepcopy(raw)
        edit(changed)
        assert sha256_hex(canonical_json(changed)) != V1_SHA256, what


@pytest.mark.parametrize("version", [1, 2])
def test_the_code_still_defines_what_each_version_froze(version: int) -> None:
    spec = load_spec(version)
    check_against_code(spec)  # sequences, sensing fields, split ranges, question files, change sets
    assert spec.world_seeds("test", 2) == [100_000, 100_001]
    assert spec.group_of("goat_mixed10") == "instance"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: load_spec(3), "spec version 3 does not exist; valid versions: 1, 2"),
        (lambda: load_spec("v0"), "spec version v0 does not exist; valid versions: 1, 2"),
        (lambda: load_spec(1).track("fast"), "valid tracks: open, mem256k, mem16k, steps200, vlm-lean"),
        (lambda: load_spec(1).split("val"), "valid splits: dev, test"),
        (lambda: load_spec(1).check_groups(["maze"]), "valid groups: category, instance, lifelong, eqa"),
        (lambda: load_spec(1).world_seeds("dev", 21), "allowed: 1 to 20"),
    ],
)
def test_unknown_names_list_the_valid_ones(call, message: str) -> None:
    with pytest.raises(SpecError, match=message) as err:
        call()
    assert "\n" not in str(err.value)


def test_shipped_result_schema_is_generated_from_the_model() -> None:
    assert SCHEMA_PATH.read_text() == schema_text(), (
        "regenerate: python -c 'from embodmem.bench.schema import *; SCHEMA_PATH.write_text(schema_text())'"
    )


def test_spec_command_prints_the_hash_groups_and_tracks(capsys: pytest.CaptureFixture[str]) -> None:
    from embodmem.bench.cli import main

    assert main(["spec"]) == 0
    out = capsys.readouterr().out
    assert V2_SHA256 in out and "group changing: revisit_shallow8 [fixed: world/changes=moved_half]" in out
    assert (
        "group instance: goat_wreck_barrel, goat_shallow8, goat_mixed10 [fixed: embedder.model=embodmem-tiny-clip, embedder.pretrained=variants]"
        in out
    )
    assert "track mem16k:" in out
    assert main(["spec", "--spec", "v1"]) == 0
    out = capsys.readouterr().out
    assert V1_SHA256 in out and "group lifelong: lifelong50" in out and "changing" not in out
