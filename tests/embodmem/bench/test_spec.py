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
    load_spec,
    sha256_hex,
    spec_hash,
)

V1_SHA256 = "5d854041b9531f198bea68fb068e8d9861d5c7b5aab656fd2971795d9394f56b"


def test_spec_v1_hash_is_pinned() -> None:
    # Changing v1 in any way breaks every result measured on it: publish a v2 instead.
    assert spec_hash(1) == V1_SHA256
    assert spec_hash("v1") == V1_SHA256
    assert available_versions() == (1,)


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


def test_the_code_still_defines_what_v1_froze() -> None:
    spec = load_spec(1)
    check_against_code(spec)  # sequences, sensing fields, split ranges, question files
    assert spec.world_seeds("test", 2) == [100_000, 100_001]
    assert spec.group_of("goat_mixed10") == "instance"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: load_spec(2), "spec version 2 does not exist; valid versions: 1"),
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
    assert V1_SHA256 in out and "group lifelong: lifelong50" in out and "track mem16k:" in out
