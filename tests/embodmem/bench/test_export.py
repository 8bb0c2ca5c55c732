"""embodmem-bench export and its reader: a split's episodes as Parquet, streamed back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow", reason="the dataset needs pyarrow: pip install 'embodmem[dataset]'")

from embodmem.bench.dataset import DatasetError, OfflineDataset
from embodmem.bench.export import ExportRequest, export_dataset
from embodmem.bench.spec import SpecError


def test_export_writes_a_versioned_dataset_that_streams_back(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    request = ExportRequest(split="dev", out=out, worlds=1, agent="random", groups=("category",), frames_per_file=300)
    info = export_dataset(request, argv=["embodmem-bench", "export", "--split", "dev", "--worlds", "1"])
    assert info.total_episodes == 14 and info.total_frames > 300 and len(info.files) >= 2  # rolled over
    meta = json.loads((out / "meta" / "info.json").read_text())
    assert meta["format"] == "embodmem-dataset" and meta["format_version"] == 1
    assert meta["generator"]["worlds"] == [1000] and meta["generator"]["command"].startswith("embodmem-bench export")
    assert meta["data_files"][0] == "data/chunk-000/file-000.parquet"
    ds = OfflineDataset(out)
    episodes = list(ds.episodes())
    assert [e.index for e in episodes] == list(range(14))
    assert sum(len(e.actions) for e in episodes) == info.total_frames
    first = episodes[0]
    assert first.images.shape == (len(first.actions), 64, 64, 3) and first.images.dtype == np.uint8
    assert first.seabed.shape == (32, 32) and first.true_poses.shape == (len(first.actions), 3)
    assert first.meta["sequence"] == "wreck_then_barrel" and first.meta["world_seed"] == 1000
    objects = ds.object_table().to_pylist()
    wrecks = [o for o in objects if o["episode_index"] == 0 and o["kind"] == "wreck"]
    assert wrecks and all(first.seabed[y, x] != 0 for x, y in wrecks[0]["cells"])  # object cells hold the object
    with pytest.raises(SpecError, match="already holds a dataset"):
        export_dataset(request)


def test_reader_refuses_what_is_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no meta/info.json"):
        OfflineDataset(tmp_path)
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "info.json").write_text('{"format": "lerobot", "format_version": 3}')
    with pytest.raises(DatasetError, match="this reader reads embodmem-dataset version 1"):
        OfflineDataset(tmp_path)


@pytest.mark.slow
def test_probe_decodes_objects_and_walls_per_design(tmp_path: Path) -> None:
    import embodmem
    from embodmem.app import build_embedder
    from embodmem.bench.probe import PROBE_DESIGNS, probe_dataset

    out = tmp_path / "ds"
    export_dataset(ExportRequest(split="dev", out=out, worlds=1, agent="memory", groups=("category",)))
    rows = {r.design: r for r in probe_dataset(out, list(PROBE_DESIGNS), build_embedder(embodmem.compose([])))}
    assert list(rows) == [*PROBE_DESIGNS, "agent_map", "fully_observed"]
    assert rows["fully_observed"].walls_iou.mean == 1.0 and rows["fully_observed"].where.mean == 1.0
    assert rows["textlog"].walls_iou.mean is None  # a text log holds no walls
    for design in ("frame_memory", "keep_everything", "agent_map"):
        assert 0.0 < rows[design].walls_iou.mean < 1.0


def test_cli_trains_probes_on_a_dev_dataset_and_refuses_a_test_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from embodmem.bench.cli import main

    out = tmp_path / "ds"
    export_dataset(ExportRequest(split="dev", out=out, worlds=1, agent="random", groups=("category",)))
    assert main(["probe", str(out), "--train", str(out), "--designs", "blind,fully_observed"]) == 0
    table = capsys.readouterr().out
    assert "| fully_observed |" in table and "| blind |" in table and "textlog" not in table
    info_file = out / "meta" / "info.json"
    info = json.loads(info_file.read_text())
    info["generator"]["split"] = "test"
    info_file.write_text(json.dumps(info))
    assert main(["probe", str(out), "--train", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--train:" in err[0] and "dev worlds" in err[0]
