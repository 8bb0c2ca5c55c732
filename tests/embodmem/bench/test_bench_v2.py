"""Spec v2 end to end: a changing world scored with its staleness figures, the instance embedder the
spec fixes, and re-runs that use the config a result recorded rather than today's defaults."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from embodmem.bench.run import RunRequest, check_request, run_benchmark
from embodmem.bench.spec import SpecError, canonical_json, sha256_hex, spec_hash
from embodmem.bench.verify import VerifyError, verify_result


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench-v2") / "random"
    run_benchmark(RunRequest(agent="random", track="steps200", split="dev", out=out, worlds=1, groups=("changing",)))
    return out


def test_a_changing_world_is_scored_with_its_staleness(run_dir: Path) -> None:
    data = json.loads((run_dir / "result.json").read_text())
    assert data["spec"] == {"benchmark": "embodmem-bench", "version": 2, "sha256": spec_hash(2)}
    (sequence,) = data["scores"][0]["sequences"]
    assert sequence["sequence"] == "revisit_shallow8" and sequence["condition"] == "single"
    staleness = sequence["staleness"]
    # tasks 5-8 revisit the goals of tasks 1-4; moved_half moves the ships and the drum (tasks 5, 6)
    assert staleness["changed_spl"]["n"] == 2 and staleness["unchanged_spl"]["n"] == 2
    assert staleness["stale_target_visits"]["n"] == 2
    records = [json.loads(line)["record"] for line in (run_dir / "records.jsonl").read_text().splitlines()]
    assert [r["goal_changed"] for r in records] == [False] * 4 + [True, True, False, False]
    assert all(r["world_changes"] == "moved_half" for r in records)


def test_the_changing_world_result_verifies_and_reproduces(run_dir: Path) -> None:
    assert verify_result(run_dir / "result.json", rerun=2, seed=3).rerun == 2


def _with_config(run_dir: Path, tmp_path: Path, edit, reseal: bool = True) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns("runs"))
    path = target / "result.json"
    data = json.loads(path.read_text())
    edit(data["agent"]["config"])
    if reseal:
        data["agent"]["config_sha256"] = sha256_hex(canonical_json(data["agent"]["config"]))
    path.write_text(json.dumps(data))
    return path


def test_a_rerun_gives_a_field_added_since_the_run_its_default(run_dir: Path, tmp_path: Path) -> None:
    # As if the run predated embedder.cache_size: the re-run keeps today's default for it.
    path = _with_config(run_dir, tmp_path, lambda c: c["embedder"].pop("cache_size"))
    assert verify_result(path, rerun=1).rerun == 1


def test_a_rerun_config_takes_the_recorded_values_over_todays_defaults(run_dir: Path) -> None:
    from embodmem.bench.agents import resolve_agent
    from embodmem.bench.run import job_config
    from embodmem.bench.spec import load_spec

    recorded = json.loads((run_dir / "result.json").read_text())["agent"]["config"]
    recorded["agent"]["max_recall_rejections"] = 7  # as if the default had been 7 when the run was made
    recorded["embedder"]["pretrained"] = "default"
    spec, agent = load_spec(2), resolve_agent("memory")
    cfg = job_config(spec, agent, "open", "dev", "category", [1000], [], recorded)
    assert cfg.agent.max_recall_rejections == 7
    fixed = job_config(spec, agent, "open", "dev", "instance", [1000], [], recorded)
    assert fixed.embedder.pretrained == "variants"  # the spec's fix for the group comes last


def test_a_recorded_field_the_code_lacks_or_an_edited_config_is_refused(run_dir: Path, tmp_path: Path) -> None:
    path = _with_config(run_dir, tmp_path, lambda c: c["memory"].update(gone=1))
    with pytest.raises(VerifyError, match="memory.gone is recorded by the run but does not exist in this embodmem"):
        verify_result(path, rerun=1)
    path = _with_config(run_dir, tmp_path / "b", lambda c: c["memory"].update(gone=1), reseal=False)
    with pytest.raises(VerifyError, match="agent.config does not match agent.config_sha256"):
        verify_result(path, rerun=1)


def test_v2_refuses_another_embedder_for_the_groups_it_fixes(tmp_path: Path) -> None:
    sets = ("embedder.pretrained=default",)
    request = RunRequest(agent="memory", track="open", split="dev", out=tmp_path, worlds=1, sets=sets)
    with pytest.raises(SpecError, match="spec v2 fixes embedder.pretrained=variants for group 'instance'") as err:
        check_request(request)
    assert "\n" not in str(err.value)
    check_request(RunRequest(**{**request.__dict__, "groups": ("category",)}))  # not fixed there
    check_request(RunRequest(**{**request.__dict__, "spec_version": 1}))  # v1 leaves it to the submitter
