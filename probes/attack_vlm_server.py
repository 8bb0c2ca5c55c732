"""A hostile or failing VLM server against ``embodmem-run agent=vlm``: the figures of its VLM bars.

Each case runs the CLI as a user would (a subprocess, its stderr captured) against the project's
loopback chat server (tests/agents/chat_server.py):

- ``drip``: every reply is sent one byte a second, status line included (``timeout_s=2``,
  ``max_retries=1``, ``max_consecutive_failures=3``); bar: each call ends within
  2 x timeout x (retries + 1) + 1 = 9 s, the run within its budgets, one line;
- ``20 MB reply``: every 3rd request gets a 20 MB completion; counted (``vlm_attempts_oversize``,
  ``vlm_format_errors``) and bounded (the reply cache stays small);
- ``invalid UTF-8``: every 3rd reply carries bytes that are not UTF-8; counted as malformed;
- ``redirect``: the server redirects every chat request to a second server on another port; the
  run stops with one line, the second server receives nothing, the aborted record says ``redirect``;
- ``resume after abort``: the server fails (HTTP 500) from its 5th request on, the run aborts; a
  resume against a healthy server must end with the metrics of an uninterrupted run (timings
  aside) and no aborted record;
- ``resume after kill -9``: the server hangs from its 5th request on and the run is killed (SIGKILL)
  while it waits; the same comparison;
- ``changed max_steps``: resuming that directory with another ``env.max_steps`` is refused with
  one line naming the key.

    python probes/attack_vlm_server.py            # writes probes/results/vlm_server_attack.md
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cli_runs import REPO, WARM_ONLY, EveryNth, nonblank_lines, start_cli, write_results

from embodmem.metrics_record import TIMING_FIELDS
from embodmem.runner import read_metrics
from tests.agents.chat_server import ChatServer, Reply

RESULTS = REPO / "probes" / "results" / "vlm_server_attack.md"
BASE = [
    "agent=vlm",
    "agent.vlm.mode=high",
    "agent.vlm.model=test-vlm",
    "agent.vlm.cache_dir=null",
    "agent.vlm.backoff_base_s=0.5",
    "agent.vlm.max_skill_steps=10",
    "experiment.tasks=[wreck,barrel,wreck]",
    *WARM_ONLY,
    "env.max_steps=30",
    "run_id=vlm-attack",
]
VLM_TIMINGS = ("vlm_latency_s",)
"""VLM record fields that are measured times (besides the record's TIMING_FIELDS)."""


def explore(body: dict) -> Reply:
    """A deterministic healthy model: explore when it may, else forward."""
    text = "\n".join(p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text")
    legal = text.split("Legal actions now: ")[1].split("\n")[0]
    return Reply.action("explore" if "explore" in legal else "forward", "look around")


@dataclass
class Outcome:
    rc: int
    seconds: float
    stderr: list[str]


def start(out: Path, url: str, *overrides: str) -> tuple[subprocess.Popen, float]:
    proc = start_cli(*BASE, f"agent.vlm.base_url={url}", f"hydra.run.dir={out}", *overrides)
    return proc, time.monotonic()


def cli(out: Path, url: str, *overrides: str) -> Outcome:
    proc, t0 = start(out, url, *overrides)
    _, err = proc.communicate(timeout=900)
    return Outcome(proc.returncode, time.monotonic() - t0, nonblank_lines(err))


def comparable(path: Path) -> list[dict]:
    drop = set(TIMING_FIELDS) | set(VLM_TIMINGS)
    return [{k: v for k, v in r.items() if k not in drop} for r in read_metrics(path)]


def last_line(o: Outcome) -> str:
    return (o.stderr[-1] if o.stderr else "").replace("|", "/")[:220]


def main() -> None:
    rows: list[tuple[str, str, str, str]] = []  # case, exit / time / lines, figures, verdict
    with tempfile.TemporaryDirectory(prefix="vlm-attack-") as tmp:
        tmp_path = Path(tmp)

        # -- the uninterrupted reference ----------------------------------------------------------
        with ChatServer(max_requests=2000, lifetime_s=900) as server:
            server.respond = explore
            ref = cli(tmp_path / "ref", server.url)
        assert ref.rc == 0, ref.stderr[-5:]
        expected = comparable(tmp_path / "ref" / "metrics.jsonl")
        print(f"reference: {len(expected)} records, {ref.seconds:.0f} s", flush=True)

        # -- drip ----------------------------------------------------------------------------------
        with ChatServer(max_requests=200, lifetime_s=900) as server:
            arrivals: list[float] = []
            lock = threading.Lock()

            def drip(body: dict) -> Reply:
                with lock:
                    arrivals.append(time.monotonic())
                return Reply.drip(drip_s=1.0)

            server.respond = drip
            extra = ["agent.vlm.timeout_s=2", "agent.vlm.max_retries=1", "agent.vlm.max_consecutive_failures=3"]
            proc, t0 = start(tmp_path / "drip", server.url, *extra)
            _, err = proc.communicate(timeout=900)
            end = time.monotonic()
            o = Outcome(proc.returncode, end - t0, nonblank_lines(err))
        firsts = arrivals[::2]  # two attempts per call (max_retries=1)
        gaps = [b - a for a, b in itertools.pairwise(firsts)]  # from one call's start to the next (agent steps too)
        bar = 2 * 2 * (1 + 1) + 1
        records = read_metrics(tmp_path / "drip" / "metrics.jsonl")
        aborted = [r for r in records if r.get("aborted")]
        calls = aborted[0].get("vlm_calls", 0) if aborted else 0
        waited = aborted[0].get("vlm_latency_s", float("nan")) if aborted else float("nan")
        errors = [ln for ln in o.stderr if ln.startswith("embodmem-run: error")]
        rows.append(
            (
                "drip 1 byte/s (timeout_s=2, max_retries=1)",
                f"exit {o.rc}, {o.seconds:.1f} s (model load included), {len(errors)} error line "
                f"(+{len(o.stderr) - len(errors)} retry warnings)",
                f"{calls} calls waited {waited:.1f} s in all (max_silent_s 9.1 s reached); call starts "
                f"{', '.join(f'{g:.1f}' for g in gaps)} s apart (bar per call {bar} s); aborted record: "
                f"vlm_attempts_timeout={aborted[0].get('vlm_attempts_timeout') if aborted else '-'}",
                "pass"
                if o.rc == 3
                and len(errors) == 1
                and calls
                and waited <= bar * calls
                and all(g <= bar for g in gaps)
                and aborted
                else "FAIL",
            )
        )
        print(rows[-1], "\n  ", last_line(o), flush=True)
        drip_line = last_line(o)

        # -- 20 MB replies -------------------------------------------------------------------------
        with ChatServer(max_requests=2000, lifetime_s=900) as server:
            huge = EveryNth(3, lambda: Reply.huge(20 * 2**20), explore)
            server.respond = huge
            cache = tmp_path / "cache"
            o = cli(tmp_path / "huge", server.url, f"agent.vlm.cache_dir={cache}")
        records = read_metrics(tmp_path / "huge" / "metrics.jsonl")
        oversize = sum(r.get("vlm_attempts_oversize", 0) for r in records)
        fmt = sum(r.get("vlm_format_errors", 0) for r in records)
        cache_bytes = sum(p.stat().st_size for p in cache.rglob("*.json"))
        rows.append(
            (
                "20 MB reply (every 3rd request)",
                f"exit {o.rc}, {o.seconds:.1f} s, {len(o.stderr)} line(s)",
                f"sent {huge.sent}, vlm_attempts_oversize {oversize}, vlm_format_errors {fmt}, "
                f"reply cache {cache_bytes / 1e3:.1f} kB",
                "pass" if o.rc == 0 and oversize == huge.sent == fmt and cache_bytes < 2**20 else "FAIL",
            )
        )
        print(rows[-1], flush=True)

        # -- invalid UTF-8 -------------------------------------------------------------------------
        with ChatServer(max_requests=2000, lifetime_s=900) as server:
            bad = EveryNth(3, Reply.bad_utf8, explore)
            server.respond = bad
            o = cli(tmp_path / "utf8", server.url)
        records = read_metrics(tmp_path / "utf8" / "metrics.jsonl")
        malformed = sum(r.get("vlm_attempts_malformed", 0) for r in records)
        fmt = sum(r.get("vlm_format_errors", 0) for r in records)
        rows.append(
            (
                "invalid UTF-8 (every 3rd reply)",
                f"exit {o.rc}, {o.seconds:.1f} s, {len(o.stderr)} line(s)",
                f"sent {bad.sent}, vlm_attempts_malformed {malformed}, vlm_format_errors {fmt}",
                "pass" if o.rc == 0 and malformed == bad.sent == fmt else "FAIL",
            )
        )
        print(rows[-1], flush=True)

        # -- redirect to another port ----------------------------------------------------------------
        with ChatServer(max_requests=200, lifetime_s=900) as server, ChatServer(lifetime_s=900) as other:
            other.respond = explore
            server.respond = lambda body: Reply.redirect(other.url + "/chat/completions")
            o = cli(tmp_path / "redirect", server.url)
            other_requests = other.count
        records = read_metrics(tmp_path / "redirect" / "metrics.jsonl")
        aborted = [r for r in records if r.get("aborted")]
        rows.append(
            (
                "301 redirect to another port",
                f"exit {o.rc}, {o.seconds:.1f} s, {len(o.stderr)} line(s)",
                f"requests at the other port {other_requests}; aborted record: "
                f"vlm_attempts_redirect={aborted[0].get('vlm_attempts_redirect') if aborted else '-'}",
                "pass" if o.rc == 3 and len(o.stderr) == 1 and other_requests == 0 and aborted else "FAIL",
            )
        )
        print(rows[-1], "\n  ", last_line(o), flush=True)
        redirect_line = last_line(o)

        # -- fails mid-way, aborts, resumes against a healthy server ----------------------------------
        cut = tmp_path / "abort"
        with ChatServer(max_requests=2000, lifetime_s=900) as server:
            count = itertools.count(1)
            server.respond = lambda body: explore(body) if next(count) <= 4 else Reply.http_error(500)
            first = cli(cut, server.url, "agent.vlm.max_retries=1", "agent.vlm.max_consecutive_failures=2")
        had_aborted = sum(1 for r in read_metrics(cut / "metrics.jsonl") if r.get("aborted"))
        with ChatServer(max_requests=2000, lifetime_s=900) as server:
            server.respond = explore
            resumed = cli(cut, server.url, "experiment.resume=true")
        got = comparable(cut / "metrics.jsonl")
        left = sum(1 for r in got if r.get("aborted"))
        rows.append(
            (
                "server fails mid-way (HTTP 500), resume with a healthy one",
                f"exit {first.rc} then {resumed.rc}",
                f"{had_aborted} aborted record before, {left} after; metrics equal the uninterrupted run's: {got == expected}",
                "pass"
                if first.rc == 3 and had_aborted == 1 and resumed.rc == 0 and left == 0 and got == expected
                else "FAIL",
            )
        )
        print(rows[-1], flush=True)

        # -- hangs mid-way, kill -9, resume --------------------------------------------------------
        cut = tmp_path / "kill"
        with ChatServer(max_requests=2000, lifetime_s=900) as server:
            count = itertools.count(1)
            server.respond = lambda body: explore(body) if next(count) <= 4 else Reply.hang()
            proc, _ = start(cut, server.url)
            while server.count < 6 and proc.poll() is None:  # the run waits on a server that stopped answering
                time.sleep(0.1)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        before = len(read_metrics(cut / "metrics.jsonl"))
        with ChatServer(max_requests=2000, lifetime_s=900) as server:
            server.respond = explore
            resumed = cli(cut, server.url, "experiment.resume=true")
        got = comparable(cut / "metrics.jsonl")
        rows.append(
            (
                "server hangs mid-way, kill -9, resume with a healthy one",
                f"killed (rc {proc.returncode}) then exit {resumed.rc}",
                f"{before} record(s) at the kill; metrics equal the uninterrupted run's: {got == expected}",
                "pass" if resumed.rc == 0 and got == expected and not any(r.get("aborted") for r in got) else "FAIL",
            )
        )
        print(rows[-1], flush=True)

        # -- resume with another env.max_steps -----------------------------------------------------
        with ChatServer(max_requests=2000, lifetime_s=900) as server:
            server.respond = explore
            before_bytes = (cut / "metrics.jsonl").read_bytes()
            o = cli(cut, server.url, "experiment.resume=true", "env.max_steps=20")
        unchanged = (cut / "metrics.jsonl").read_bytes() == before_bytes
        rows.append(
            (
                "resume with env.max_steps=20 (was 30)",
                f"exit {o.rc}, {o.seconds:.1f} s, {len(o.stderr)} line(s)",
                f"names env.max_steps: {'env.max_steps' in last_line(o)}; metrics.jsonl unchanged: {unchanged}",
                "pass"
                if o.rc == 2 and len(o.stderr) == 1 and "env.max_steps" in last_line(o) and unchanged
                else "FAIL",
            )
        )
        print(rows[-1], "\n  ", last_line(o), flush=True)
        steps_line = last_line(o)

    lines = [
        "# A hostile or failing VLM server",
        "",
        "`python probes/attack_vlm_server.py` (3 tasks, warm, high mode, `env.max_steps=30`, loopback chat server).",
        "",
        "| case | outcome | figures | verdict |",
        "|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
        "",
        "The one line of each refused run:",
        "",
        f"- drip: `{drip_line}`",
        f"- redirect: `{redirect_line}`",
        f"- changed max_steps: `{steps_line}`",
        "",
    ]
    write_results(RESULTS, lines)


if __name__ == "__main__":
    main()
