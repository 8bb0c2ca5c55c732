"""A path that does not exist is a bad command line in every command: one line, exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = {
    "embodmem-run": (["-m", "embodmem"], "experiment.load_memory={missing}"),
    "embodmem-report": (["-m", "embodmem.report"], "{missing}"),
    "embodmem-replay": (["-m", "embodmem.replay"], "{missing}"),
    "embodmem-replay --config": (["-m", "embodmem.replay", "--check"], "--config={missing}"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_missing_path_exits_2_with_one_line(command: str, tmp_path: Path) -> None:
    module, argument = COMMANDS[command]
    missing = tmp_path / "not-there"
    args = [argument.format(missing=missing)]
    if command == "embodmem-replay --config":
        log = tmp_path / "episode.json"
        log.write_text("{}")
        args.append(str(log))
    proc = subprocess.run([sys.executable, *module, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and str(missing) in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == (["episode.json"] if "--config" in command else [])
