"""embodmem-bench run / verify / board end to end on a small real run (the random agent: no CLIP)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from embodmem.bench.board import board_html, board_markdown, board_rows
from embodmem.bench.cli import main
from embodmem.bench.run import RunRequest, run_benchmark
from embodmem.bench.schema import shipped_schema
from embodmem.bench.spec import spec_hash
from embodmem.bench.verify import VerifyError, verify_result


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "random"
    request = RunRequest(
        agent="random", track="steps200", split="dev", out=out, worlds=2, groups=("category",), spec_version=1
    )
    run_benchmark(request)
    return out


@pytest.fixture
def copy(run_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns("runs"))
    return target


def test_result_carries_what_a_submission_needs(run_dir: Path) -> None:
    data = json.loads((run_dir / "result.json").read_text())
    jsonschema.validate(data, shipped_schema())
    assert data["spec"] == {"benchmark": "embodmem-bench", "version": 1, "sha256": spec_hash(1)}
    assert data["track"]["name"] == "steps200" and data["split"] == "dev" and data["worlds"] == [1000, 1001]
    assert data["complete"] is False and data["status"] == "scored"
    assert data["agent"]["name"] == "random" and data["agent"]["kind"] == "stock"
    assert data["machine"]["cpus"] >= 1 and data["package"]["version"]
    sequences = {s["sequence"] for s in data["scores"][0]["sequences"]}
    assert sequences == {
        "wreck_then_barrel",
        "deep_pair",
        "aircraft_then_pipeline",
        "mining_robot_then_electrical_box",
        "shallow_tour6",
    }
    assert data["usage"]["steps_max_episode"] <= 200  # the track's step budget is the env's step limit
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    assert len(lines) == data["records"]["count"] == 2 * (2 + 2 + 2 + 2 + 6)


def test_verify_accepts_the_result_and_reproduces_episodes(run_dir: Path) -> None:
    report = verify_result(run_dir / "result.json", rerun=2, seed=1)
    assert report.rerun == 2 and report.records == 28


def test_verify_refuses_a_truncated_result(copy: Path) -> None:
    path = copy / "result.json"
    path.write_text(path.read_text()[:400])
    with pytest.raises(VerifyError, match="not JSON, truncated"):
        verify_result(path)


def test_verify_refuses_an_edited_score(copy: Path) -> None:
    path = copy / "result.json"
    data = json.loads(path.read_text())
    data["scores"][0]["sequences"][1]["later_spl"]["mean"] = 0.9
    path.write_text(json.dumps(data))
    with pytest.raises(VerifyError, match=r"field scores\.0\.sequences\.1\.later_spl\.mean: the records give 0\.0"):
        verify_result(path)


def test_verify_refuses_records_that_do_not_match_the_hash(copy: Path) -> None:
    records = copy / "records.jsonl"
    records.write_text(records.read_text().replace('"spl":0.0', '"spl":0.5', 1))
    with pytest.raises(VerifyError, match="records do not match the result's hash"):
        verify_result(copy / "result.json")
    records.write_text("\n".join(records.read_text().splitlines()[:-1]) + "\n")  # truncated
    with pytest.raises(VerifyError, match="records do not match the result's hash"):
        verify_result(copy / "result.json")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["spec"].update(version=3), "spec version 3 does not exist in this embodmem; valid versions: 1, 2"),
        (lambda d: d["spec"].update(version=2), "another edition of the spec"),
        (lambda d: d["spec"].update(sha256="0" * 64), "another edition of the spec"),
        (lambda d: d["track"].update(memory_bytes=1), "track 'steps200' differs from spec v1's"),
        (lambda d: d["track"].update(name="fast"), "valid tracks: open"),
        (lambda d: d.update(status="over_budget"), "field status"),
        (lambda d: d.pop("records"), "does not meet the result schema"),
    ],
)
def test_verify_refuses_other_specs_and_edits(copy: Path, edit, message: str) -> None:
    path = copy / "result.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(VerifyError, match=message) as err:
        verify_result(path)
    assert "\n" not in str(err.value)


def test_board_renders_markdown_and_html(run_dir: Path, tmp_path: Path) -> None:
    tables = board_rows([run_dir / "result.json"])
    assert list(tables) == [(1, "dev", "steps200")]
    md, page = board_markdown(tables), board_html(tables)
    assert "| 1 | random (stock 0.1.0) |" in md and "partial (2 of 20 worlds)" in md
    assert page.startswith("<!doctype html>") and "<td>random (stock 0.1.0)</td>" in page
    assert main(["board", str(run_dir / "result.json"), "--out", str(tmp_path / "board")]) == 0
    assert (tmp_path / "board" / "board.html").is_file()


def test_cli_refuses_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "x")
    assert main(["run", "--agent", "random", "--track", "fast", "--split", "dev", "--out", out]) == 2
    assert main(["run", "--agent", "octopus", "--track", "open", "--split", "dev", "--out", out]) == 2
    assert main(["run", "--agent", "random", "--track", "open", "--split", "dev", "--spec", "9", "--out", out]) == 2
    assert (
        main(["run", "--agent", "random", "--track", "open", "--split", "dev", "--set", "env.size=8", "--out", out])
        == 2
    )
    assert main(["verify", str(tmp_path / "none.json")]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 5
    assert "valid tracks: open, mem256k, mem16k, steps200, vlm-lean" in lines[0]
    assert "'octopus' is unknown" in lines[1] and "valid versions: 1, 2" in lines[2]
    assert "--set: 'env.size=8' is not allowed" in lines[3] and "no such result file" in lines[4]
    assert not (tmp_path / "x").exists()  # refused before any work


def test_run_never_overwrites_a_result(run_dir: Path) -> None:
    with pytest.raises(ValueError, match="a run never overwrites a result"):
        run_benchmark(
            RunRequest(agent="random", track="steps200", split="dev", out=run_dir, worlds=2, groups=("category",))
        )


def test_a_plugin_agent_runs_and_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3] / "examples" / "my_memory" / "src"))
    out = tmp_path / "plugin"
    name = "my_memory.policy:make_agent"
    result = run_benchmark(
        RunRequest(agent=name, track="steps200", split="dev", out=out, worlds=1, groups=("category",))
    )
    assert result.agent.kind == "plugin" and result.agent.overrides == [f"agent.plugin={name}"]
    assert verify_result(out / "result.json", rerun=1).rerun == 1


def _reseal(directory: Path, edit_records, edit_result=lambda d: None) -> Path:
    """What a dishonest submitter would do: change the records, then recompute every hash and score."""
    from embodmem.bench.records import parse_records, records_bytes
    from embodmem.bench.score import score_answers, score_groups
    from embodmem.bench.spec import sha256_hex
    from embodmem.bench.tracks import usage_of

    records = edit_records(parse_records((directory / "records.jsonl").read_bytes()))
    data = records_bytes(records)
    (directory / "records.jsonl").write_bytes(data)
    result = json.loads((directory / "result.json").read_text())
    result["records"].update(sha256=sha256_hex(data), count=len(records))
    result["scores"] = [s.model_dump(mode="json") for s in score_groups(records)]
    result["eqa"] = None if score_answers(records) is None else score_answers(records).model_dump(mode="json")
    result["usage"] = usage_of(records).model_dump(mode="json")
    edit_result(result)
    (directory / "result.json").write_text(json.dumps(result))
    return directory / "result.json"


def test_verify_refuses_resealed_records_that_leave_episodes_out(copy: Path) -> None:
    path = _reseal(
        copy,
        lambda records: [
            r for r in records if not (r.record.get("sequence") == "deep_pair" and r.record.get("task_index") == 2)
        ],
    )
    with pytest.raises(VerifyError, match="records: category deep_pair world 1000 task 2 single is missing"):
        verify_result(path)


def test_verify_refuses_cherry_picked_worlds(copy: Path) -> None:
    def keep_second_world(records):
        return [r for r in records if r.record.get("world_seed") == 1001]

    path = _reseal(copy, keep_second_world, lambda d: d.update(worlds=[1001]))
    with pytest.raises(VerifyError, match="field worlds: \\[1001\\] are not the first worlds of split 'dev'"):
        verify_result(path)
