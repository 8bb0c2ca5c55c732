"""A screenshot of TensorBoard's scalars page for a tiny run, for docs/tracking.md.

    python scripts/tensorboard_screenshot.py [--out docs/assets/tensorboard-scalars.png] [--run DIR]

Runs embodmem-run's default job (120-step episodes, two dev worlds) with ``logger.backends=[jsonl,tensorboard]`` into a
temporary directory (or reads ``--run``), serves it with TensorBoard on loopback and photographs the
scalars page with headless Chromium (Debian's ``chromium``: ``apt-get install -y chromium``).
Needs ``pip install -e '.[tensorboard]'``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from embodmem.atomic import atomic_write_with

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
"""Headless Chromium on a machine without outside network (no background connections to refuse)."""


def tiny_run(out: Path) -> None:
    cmd = [sys.executable, "-m", "embodmem", "env.max_steps=120", "logger.progress=false", "logger.plots=false"]
    cmd += ["logger.backends=[jsonl,tensorboard]", "experiment.world_seeds=[1000,1001]", f"hydra.run.dir={out}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_scalars(base: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/data/plugin/scalars/tags", timeout=5) as response:
                if json.loads(response.read()):
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"TensorBoard at {base} served no scalars within {timeout_s:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/assets/tensorboard-scalars.png"))
    parser.add_argument("--run", type=Path, help="a run directory with tensorboard/ (default: a new tiny run)")
    parser.add_argument("--tag-filter", default="^spl/memory/", help="the scalars page's tag filter (a regex)")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs Chromium: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as work:
        run_dir = args.run or Path(work) / "run"
        if args.run is None:
            tiny_run(run_dir)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(run_dir), "--host", "127.0.0.1"]
            + ["--port", str(port), "--load_fast=false"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_scalars(base)
            shot = Path(work) / "shot.png"
            url = f"{base}/?darkMode=false#scalars&tagFilter={urllib.request.quote(args.tag_filter, safe='')}"
            subprocess.run(
                [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={Path(work) / 'profile'}", "--window-size=1400,900"]
                + ["--virtual-time-budget=40000", f"--screenshot={shot}", url],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=180,
            )
            data = shot.read_bytes()
        finally:
            server.terminate()
            server.wait(timeout=30)
    atomic_write_with(args.out, lambda fh: fh.write(data))
    print(f"wrote {args.out} ({len(data):,} bytes) from {url}")


if __name__ == "__main__":
    main()
