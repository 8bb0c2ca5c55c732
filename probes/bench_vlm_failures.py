"""How a VLM run ends when the server misbehaves: the figures of the VLM bars.

Each case runs ``embodmem-run agent=vlm ...`` as a user would (a subprocess, the CLI's own output
captured) against the project's loopback chat server (tests/agents/chat_server.py):

- ``no server``: nothing listens at the URL;
- ``unknown model``: the server lists another model;
- ``hanging``: the server lists the model, then accepts every chat request and never answers
  (``timeout_s=2 max_retries=1``, the bar: stop within 60 s with one line);
- ``every 5th not JSON``: every 5th reply is ``I think I should go forward maybe {not json``; the
  run completes and ``vlm_format_errors`` must equal the number of such replies the server sent.

Reported: exit code, seconds until the process ended, lines printed to stderr, and for the last
case the server's count against the metrics'.

    python probes/bench_vlm_failures.py
"""

from __future__ import annotations

import json
import socket
import tempfile
import time
from pathlib import Path

from cli_runs import WARM_ONLY, EveryNth, run_cli

from tests.agents.chat_server import ChatServer, Reply

NOT_JSON = "I think I should go forward maybe {not json"


def cli(out: Path, url: str, *overrides: str) -> tuple[int, float, list[str]]:
    start = time.monotonic()
    proc = run_cli(
        "agent=vlm",
        f"agent.vlm.base_url={url}",
        "agent.vlm.model=test-vlm",
        "agent.vlm.cache_dir=null",
        *WARM_ONLY,
        f"hydra.run.dir={out}",
        *overrides,
        timeout=600,
    )
    return proc.returncode, time.monotonic() - start, proc.stderr.strip().splitlines()


def free_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        rc, secs, lines = cli(tmp_path / "a", free_url())
        rows.append(("no server", rc, secs, lines, ""))

        with ChatServer(max_requests=50, lifetime_s=300) as server:
            server.models = ["other-model"]
            rc, secs, lines = cli(tmp_path / "b", server.url)
            rows.append(("unknown model", rc, secs, lines, f"chat requests: {server.count}"))

        with ChatServer(max_requests=50, lifetime_s=300) as server:
            server.respond = lambda body: Reply.hang()
            rc, secs, lines = cli(tmp_path / "c", server.url, "agent.vlm.timeout_s=2", "agent.vlm.max_retries=1")
            rows.append(("hanging (timeout_s=2, max_retries=1)", rc, secs, lines, f"chat requests: {server.count}"))

        with ChatServer(max_requests=1000, lifetime_s=600) as server:
            every_fifth = EveryNth(5, lambda: Reply.ok(NOT_JSON), lambda body: Reply.action("forward"))
            server.respond = every_fifth
            rc, secs, lines = cli(tmp_path / "d", server.url, "env.max_steps=40")
            records = [json.loads(x) for x in (tmp_path / "d" / "metrics.jsonl").read_text().splitlines()]
            counted = sum(r["vlm_format_errors"] for r in records)
            invalid = sum(r["vlm_invalid_replies"] for r in records)
            rows.append(
                (
                    "every 5th not JSON",
                    rc,
                    secs,
                    [],
                    f"non-JSON sent {every_fifth.sent}, vlm_format_errors {counted}, vlm_invalid_replies {invalid}",
                )
            )

    print(f"{'case':<38} {'exit':>4} {'seconds':>8} {'stderr lines':>12}  notes")
    for name, rc, secs, lines, notes in rows:
        print(f"{name:<38} {rc:>4} {secs:>8.1f} {len(lines):>12}  {notes}")
    print()
    for name, _, _, lines, _ in rows:
        if lines:
            print(f"{name}: {lines[-1][:200]}")


if __name__ == "__main__":
    main()
