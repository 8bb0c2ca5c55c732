"""How far the core suite is from its floor: its worlds' steps and its frames' embeddings alone.

Two costs no agent, planner or runner change removes: stepping the envs (the worlds as built) and
pushing the frames through the CLIP (the model as trained). This script measures, in one sitting,

(a) the wall of the core suite (``benchmarks/suite.py --agents core``: the same Hydra multirun, jobs
    and lanes), whose lockstep driver writes each lane's actions (``EMBODMEM_LANE_ACTIONS``,
    :class:`embodmem.lockstep.LaneActions`);
(b) the floor: a replay of every job that builds the same envs, resets them with the same seeds and
    options, steps them with the recorded actions through the same lockstep driver (so the same
    batches of worlds step together) and passes the same lanes' frames to the same embedder's
    ``cache_frames`` (so the same frames, after the same cache, go through the network in the same
    batch sizes); nothing else: no agent, map, memory, measures or records. The jobs' floor seconds
    are spread over ``--jobs`` cores, as if the replay kept every core busy;

and (a) then (b) again, ``--rounds`` times in turn: a shared machine's speed drifts within minutes,
and the median of paired rounds moves far less than one pair does. It prints the median round's
suite/floor, every round's, and where the median round's rest went: the suite jobs' profile
sections (planning, mapping, memory query and write, the agents' own embedding calls), the suite's
env and embedding beyond the replay's, the loops' unprofiled part (runner, measures, record writing;
the writing re-timed alone), and what is outside the jobs' loops (process start, imports, model
loading, summaries, uneven jobs). It also checks that every round's lanes took the same actions.

    python benchmarks/floor.py --split dev --worlds 8 --rounds 1      # development
    python benchmarks/floor.py --split test --worlds 100 --rounds 3   # the reported figure

Writes ``benchmarks/results/floor_<split>.md`` (or ``--results``). The machine's load (1-minute
load average before and after each phase) goes into the table: other work on the cores slows both
phases, and the ratio is measured in one sitting for that reason.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from multirun import CORE_AGENTS, multirun_command, run_multirun

from embodmem.lockstep import ACTIONS_DIR_VARIABLE, LaneActions
from embodmem.profiling import Profiler, RunProfile
from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import SPLIT_NAMES, choose_worlds

ROOT = Path(__file__).resolve().parent.parent
CORE = ["experiment=suite", *CORE_AGENTS]

FLOOR_SECTIONS = ("env build", "env reset", "env", "lockstep embedding")
"""The replay's sections: the envs built, reset, stepped in batches; the frames embedded."""


class _Both:
    """A section timed on the wall clock and on the process's CPU clock."""

    __slots__ = ("profiler", "name", "wall", "cpu")

    def __init__(self, profiler: CpuProfiler, name: str) -> None:
        self.profiler, self.name = profiler, name
        self.wall = self.cpu = 0.0

    def __enter__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.profiler.seconds[self.name] += time.perf_counter() - self.wall
        self.profiler.cpu_seconds[self.name] += time.process_time() - self.cpu
        self.profiler.calls[self.name] += 1


class CpuProfiler(Profiler):
    """:class:`~embodmem.profiling.Profiler` that also adds up CPU seconds per section: on a machine
    other work shares, the CPU seconds of the floor stay what the floor costs, where its wall time
    grows with the other work."""

    def __init__(self) -> None:
        super().__init__()
        self.cpu_seconds: dict[str, float] = defaultdict(float)

    def section(self, name: str) -> _Both:  # type: ignore[override]
        return _Both(self, name)


@dataclass
class JobFloor:
    """One job's replay: seconds per section, what it did, and its setup outside the loop."""

    job: str
    seconds: dict[str, float]
    steps: int
    frames_embedded: int
    embedding_calls: int
    setup_s: float
    """Imports, config and the embedder's build in the replay's worker (not part of the floor)."""
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    """CPU seconds per section."""

    @property
    def floor_s(self) -> float:
        return sum(self.seconds.get(name, 0.0) for name in FLOOR_SECTIONS)

    @property
    def floor_cpu_s(self) -> float:
        return sum(self.cpu_seconds.get(name, 0.0) for name in FLOOR_SECTIONS)


@dataclass
class SuiteJobs:
    """The suite jobs' profile.json files added up."""

    steps: int = 0
    loop_s: float = 0.0
    sections: dict[str, float] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path) -> SuiteJobs:
        jobs = cls()
        for path in sorted(directory.rglob("profile.json")):
            profile: RunProfile = json.loads(path.read_text())
            jobs.steps += profile["steps"]
            jobs.loop_s += profile["loop_s"]
            for row in profile["sections"]:
                jobs.sections[row["section"]] = jobs.sections.get(row["section"], 0.0) + row["seconds"]
        return jobs


def replay_job(job_dir: str, actions_path: str) -> JobFloor:
    """Step one suite job's envs through its recorded actions and embed its lanes' frames, in the
    same lockstep batches; nothing else. Runs in a fresh process (as the suite's jobs do)."""
    started = time.perf_counter()
    os.environ.pop(ACTIONS_DIR_VARIABLE, None)
    from omegaconf import OmegaConf

    from embodmem.app import build_embedder, env_config
    from embodmem.condition import Condition
    from embodmem.envs.entry import make_env
    from embodmem.envs.tasks import get_sequence
    from embodmem.lockstep import EnvStep, Lane, Lockstep, run_lanes
    from embodmem.runner import SequenceSpec, Steps, episode_seed, reset_options

    directory = Path(job_dir)
    cfg = OmegaConf.load(directory / "config.yaml")
    exp = cfg.experiment
    if exp.gem_eval or exp.poison_k or not exp.sequences:
        raise SystemExit("the floor replays suite runs: named sequences, no GEM rows, no false memories")
    sequences = [(str(name), get_sequence(str(name))) for name in exp.sequences]
    world_seeds = [int(w) for w in exp.world_seeds]
    settings = env_config(cfg)  # type: ignore[arg-type]
    embedder = build_embedder(cfg)  # type: ignore[arg-type]
    recorded = LaneActions.read(Path(actions_path))
    runs_per_world, leftover = divmod(len(recorded.actions), len(sequences) * len(world_seeds))
    if leftover:
        raise RuntimeError(
            f"{len(recorded.actions)} recorded lanes do not divide into {len(sequences)} x {len(world_seeds)}"
        )
    profiler = CpuProfiler()
    setup_s = time.perf_counter() - started

    def replay(spec: SequenceSpec, actions: list[int]) -> Steps[None]:
        with profiler.section("env build"):
            env = make_env(settings, spec.tasks, spec.world_seed)
        pending = iter(actions)
        for i in range(len(spec.tasks)):
            with profiler.section("env reset"):
                obs, _ = env.reset(seed=episode_seed(spec.world_seed, spec.seed, i), options=reset_options(spec, i))
            done = False
            while not done:
                yield obs
                stepped = yield EnvStep(env, next(pending))
                assert stepped is not None
                obs, _, terminated, truncated, _ = stepped
                done = bool(terminated or truncated)
        if next(pending, None) is not None:
            raise RuntimeError(f"world {spec.world_seed}: the replay ended before the recorded actions")

    def lanes() -> Iterator[Lane]:
        """In the runner's order (embodmem.runner.run_experiment): sequences, worlds, runs."""
        place = 0
        for sequence, tasks in sequences:
            for world_seed in world_seeds:
                for _ in range(runs_per_world):
                    if recorded.world_seeds[place] not in (world_seed, -1):
                        raise RuntimeError(
                            f"lane {place}: recorded world {recorded.world_seeds[place]}, plan {world_seed}"
                        )
                    spec = SequenceSpec(sequence, tasks, world_seed, int(cfg.seed), Condition.single, str(exp.start))
                    yield Lane(replay(spec, recorded.actions[place]), recorded.embeds[place])
                    place += 1

    calls = profiler.calls
    run_lanes(lanes(), Lockstep(recorded.lanes, embedder), profiler)
    steps = sum(len(a) for a in recorded.actions)
    return JobFloor(
        directory.name,
        dict(profiler.seconds),
        steps,
        embedder.frames_embedded,
        calls["lockstep embedding"],
        setup_s,
        dict(profiler.cpu_seconds),
    )


def replay_all(directory: Path, actions_dir: Path, jobs: int) -> tuple[list[JobFloor], float]:
    """Every job of the suite's multirun replayed, ``jobs`` fresh processes at a time; their floors
    and the replay's wall."""
    pairs = []
    for profile in sorted(directory.glob("*/profile.json")):
        job_dir = profile.parent
        seeds = _world_seeds(job_dir)
        match = [p for p in actions_dir.glob("lanes-*.json") if set(LaneActions.read(p).world_seeds) <= set(seeds)]
        if len(match) != 1:
            raise RuntimeError(f"{job_dir}: {len(match)} recorded action files for worlds {seeds}")
        pairs.append((str(job_dir), str(match[0])))
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        floors = pool.starmap(replay_job, pairs, chunksize=1)
    return floors, time.perf_counter() - started


def _world_seeds(job_dir: Path) -> list[int]:
    from omegaconf import OmegaConf

    return [int(w) for w in OmegaConf.load(job_dir / "config.yaml").experiment.world_seeds]


def record_writing_s(directory: Path) -> float:
    """The suite's records written again through the run's writer (:class:`~embodmem.runner.RunWriter`:
    one validated record per append, its fsyncs), into scratch folders beside them: what the runs
    spent writing records."""
    from embodmem.metrics_record import EpisodeRecord
    from embodmem.runner import RunWriter

    total = 0.0
    scratch = Path(tempfile.mkdtemp(dir=directory))
    try:
        for i, path in enumerate(sorted(directory.rglob("metrics.jsonl"))):
            lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            started = time.perf_counter()
            writer = RunWriter(scratch / str(i), episode_logs=False)
            for line in lines:
                writer.write_records([EpisodeRecord.model_validate(line)])
            writer.sync()
            total += time.perf_counter() - started
    finally:
        shutil.rmtree(scratch)
    return total


def _children_cpu_s() -> float:
    """User and system CPU seconds of every finished descendant so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


JOB_START = """
import gc, time
started = time.perf_counter()
gc.disable()  # as embodmem.app.run does until its loop starts
import embodmem.app, embodmem.runner, embodmem.lockstep, embodmem.envs.underwater
import embodmem.agents.explorer, embodmem.agents.memory_agent, embodmem.agents.oracle
import embodmem.failures, embodmem.fingerprint, embodmem.metrics_record, embodmem.plugins, embodmem.preflight
import embodmem.report, embodmem.search, embodmem.staleness, embodmem.tracking.run, tqdm  # the app imports these in a job
from embodmem.embedding.embedder import ClipEmbedder
imported = time.perf_counter()
ClipEmbedder()
print(imported - started, time.perf_counter() - imported)
"""
"""What a suite job does before its loop that no world changes: import the runner, envs, agents and
embedder, and load the model."""


@dataclass
class StartCost:
    """A fresh process's start, re-timed alone: interpreter and imports (once per worker process) and
    the model's load (once per job)."""

    imports_s: float
    model_s: float


def start_cost() -> StartCost:
    """Time :data:`JOB_START` in a fresh interpreter (its wall, less the model, is the start)."""
    import subprocess

    started = time.perf_counter()
    printed = subprocess.run([sys.executable, "-c", JOB_START], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - started
    model_s = float(printed.stdout.split()[1])
    return StartCost(imports_s=wall - model_s, model_s=model_s)


def breakdown(
    wall: float, floor: list[JobFloor], suite: SuiteJobs, jobs: int, writing_s: float, start: StartCost
) -> list[tuple[str, float]]:
    """The rest (suite wall minus floor), by where it went, seconds spread over ``jobs`` cores; the
    rows add up to the wall. Process start is the re-timed :class:`StartCost`: imports once per worker
    process (``jobs`` of them), the model once per job of the sweep."""
    replay = {name: sum(f.seconds.get(name, 0.0) for f in floor) for name in FLOOR_SECTIONS}
    s = suite.sections
    agent_parts = sorted((k for k in s if k.startswith("agent/")), key=lambda k: -s[k])
    top = sum(v for k, v in s.items() if "/" not in k)
    unprofiled = suite.loop_s - top
    rows = [(f"floor: {name}", replay[name] / jobs) for name in FLOOR_SECTIONS]
    rows += [(f"agent: {k.removeprefix('agent/')}", s[k] / jobs) for k in agent_parts]
    rows.append(
        ("agent: the rest (act(), set-up, task end)", (s.get("agent", 0.0) - sum(s[k] for k in agent_parts)) / jobs)
    )
    rows.append(("env beyond the floor (ground truth for the measures)", (s.get("env", 0.0) - replay["env"]) / jobs))
    rows.append(
        ("batched embedding beyond the floor", (s.get("lockstep embedding", 0.0) - replay["lockstep embedding"]) / jobs)
    )
    rows.append(("record writing (re-timed alone)", writing_s / jobs))
    rows.append(
        (
            "runner and measures (the loops' unprofiled rest)",
            (unprofiled - replay["env build"] - replay["env reset"] - writing_s) / jobs,
        )
    )
    outside = wall - suite.loop_s / jobs
    starting = (start.imports_s * min(jobs, len(floor)) + start.model_s * len(floor)) / jobs
    rows.append(("outside the loops: process start, imports, model load (re-timed alone)", starting))
    rows.append(("outside the loops: the sweep's launch, summaries, uneven jobs", outside - starting))
    return rows


@dataclass
class Round:
    """One sitting of the suite followed by its floor."""

    directory: Path
    """The suite's multirun directory, its recorded actions in ``lane-actions``."""
    jobs: int
    wall: float
    """The suite's wall seconds."""
    floors: list[JobFloor]
    replay_wall: float
    """The replay's own wall, with its process starts and model loading."""
    load: dict[str, float]
    """1-minute load average before the suite, after it, after the floor."""
    suite_cpu: float | None = None
    """CPU seconds of the suite's processes (None for a replay of an earlier run)."""
    peak_mib: float | None = None
    """Peak resident memory of the suite's largest process."""

    @property
    def floor_s(self) -> float:
        """The floor's seconds spread over the cores."""
        return sum(f.floor_s for f in self.floors) / self.jobs

    @property
    def floor_cpu_s(self) -> float:
        return sum(f.floor_cpu_s for f in self.floors)

    @property
    def ratio(self) -> float:
        return self.wall / self.floor_s

    @property
    def cpu_ratio(self) -> float | None:
        return None if self.suite_cpu is None else self.suite_cpu / self.floor_cpu_s


def run_round(directory: Path, cmd: list[str] | None, jobs: int) -> Round:
    """The suite (``cmd`` into ``directory``, its lanes' actions recorded), then its floor;
    ``cmd`` None replays the suite run already in ``directory`` (its wall as then measured)."""
    actions_dir = directory / "lane-actions"
    load = {"before suite": os.getloadavg()[0]}
    if cmd is None:
        wall = float((actions_dir / "wall_s").read_text())
    else:
        if directory.exists():
            shutil.rmtree(directory)
        actions_dir.mkdir(parents=True)
        print(" ".join(cmd), flush=True)
        os.environ[ACTIONS_DIR_VARIABLE] = str(actions_dir)
        cpu_before = _children_cpu_s()
        wall = run_multirun(cmd)
        (actions_dir / "cpu_s").write_text(f"{_children_cpu_s() - cpu_before:.3f}")
        (actions_dir / "peak_mib").write_text(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.1f}")
        del os.environ[ACTIONS_DIR_VARIABLE]
        (actions_dir / "wall_s").write_text(f"{wall:.3f}")
        load["after suite"] = os.getloadavg()[0]
        print(f"suite: {wall:.1f} s wall", flush=True)
    floors, replay_wall = replay_all(directory, actions_dir, jobs)
    load["after floor"] = os.getloadavg()[0]
    cpu, peak = actions_dir / "cpu_s", actions_dir / "peak_mib"
    measured = Round(
        directory,
        jobs,
        wall,
        floors,
        replay_wall,
        load,
        suite_cpu=float(cpu.read_text()) if cpu.exists() else None,
        peak_mib=float(peak.read_text()) if peak.exists() else None,
    )
    print(f"floor: {measured.floor_s:.1f} s; suite / floor = {measured.ratio:.2f}", flush=True)
    return measured


def median_round(rounds: list[Round]) -> Round:
    """The round whose wall ratio is the median (the lower of the middle two for an even count):
    the one the breakdown is read from, so its seconds and its ratio agree."""
    return sorted(rounds, key=lambda r: r.ratio)[(len(rounds) - 1) // 2]


def recorded_actions(directory: Path) -> list[tuple[tuple[int, ...], list[list[int]]]]:
    """Every job's recorded lanes (their worlds and actions), in the order of their worlds: what two
    rounds of the same suite must have in common, action for action."""
    files = [LaneActions.read(p) for p in (directory / "lane-actions").glob("lanes-*.json")]
    return sorted((tuple(f.world_seeds), f.actions) for f in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=SPLIT_NAMES)
    parser.add_argument("--worlds", type=int, default=8)
    parser.add_argument("--first", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lanes", type=int, default=32)
    parser.add_argument("--out", type=Path, default=None, help="the suite's multirun directory (replaced)")
    parser.add_argument(
        "--results", type=Path, default=None, help="results file (default benchmarks/results/floor_<split>.md)"
    )
    parser.add_argument(
        "--replay-only",
        action="store_true",
        help="replay a suite run this script made before into --out (its wall as then measured); development only",
    )
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides for the suite")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="suite then floor, this many times in turn; the figures are the median round's (default 3)",
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: must be at least 1")
    worlds = choose_worlds(args.split, args.worlds, args.first)
    out = args.out or ROOT / "multirun" / f"floor-{args.split}-{args.worlds}"
    os.environ["OMP_NUM_THREADS"] = "1"
    if args.replay_only:
        rounds = [run_round(d, None, args.jobs) for d in sorted(out.glob("round-*"))]
        if not rounds:
            raise SystemExit(f"--replay-only: no round-* suite run under {out}")
    else:
        if out.exists():
            shutil.rmtree(out)
        rounds = []
        for i in range(args.rounds):
            directory = out / f"round-{i}"
            cmd = multirun_command(CORE, args.split, worlds, args.jobs, directory, lanes=args.lanes) + args.overrides
            rounds.append(run_round(directory, cmd, args.jobs))
    chosen = median_round(rounds)
    first_actions = recorded_actions(rounds[0].directory)
    same = all(recorded_actions(r.directory) == first_actions for r in rounds[1:])
    wall, floors, replay_wall, suite_cpu = chosen.wall, chosen.floors, chosen.replay_wall, chosen.suite_cpu
    suite = SuiteJobs.read(chosen.directory)
    writing = record_writing_s(chosen.directory)
    start = start_cost()
    floor_s = chosen.floor_s
    steps = sum(f.steps for f in floors)
    if steps != suite.steps:
        print(f"note: the replay stepped {steps:,} times, the records count {suite.steps:,} agent steps")
    rows = breakdown(wall, floors, suite, args.jobs, writing, start)

    def per_step_us(seconds_spread: float) -> float:
        """Seconds spread over the cores as microseconds of one core per env step."""
        return seconds_spread * args.jobs / steps * 1e6

    rest = [(name, s) for name, s in rows if not name.startswith("floor")]
    agents_s = sum(s for name, s in rows if name.startswith("agent:"))
    biggest = max(rest, key=lambda r: r[1])
    frames = sum(f.frames_embedded for f in floors)
    calls = sum(f.embedding_calls for f in floors)
    ratios = ", ".join(f"{r.ratio:.2f}" for r in rounds)
    lines = [
        f"Core suite (memory warm and cold, explorer, oracle) on {args.split} worlds {worlds[0]}-{worlds[-1]} "
        f"({len(worlds)} worlds), {args.jobs} jobs, {args.lanes} lanes, on {os.cpu_count()} cores. Suite and floor "
        f"in turn, {len(rounds)} round{'s' if len(rounds) > 1 else ''} (suite, floor, suite, floor, ...) in this one "
        f"run; the figures and the breakdown below are the median round's (round {rounds.index(chosen)}, by its wall "
        "ratio), each round's are in the last table.",
        "",
        f"- suite wall: **{wall:.1f} s**",
        f"- floor (env build, reset and batched steps + batched CLIP passes of the replay, spread over {args.jobs} "
        f"cores): **{floor_s:.1f} s** ({steps:,} env steps, {frames:,} frames embedded in {calls:,} batched calls); "
        f"the replay's own wall, with its process starts and model loading: {replay_wall:.1f} s",
        f"- **suite / floor = {wall / floor_s:.2f}** in wall seconds (goal: at most 1.25); the rounds' ratios: "
        f"{ratios} (from {min(r.ratio for r in rounds):.2f} to {max(r.ratio for r in rounds):.2f})",
        "- the suite's lanes took the same actions in every round"
        if same
        else "- **the suite's lanes took different actions in different rounds: the suite is not deterministic**",
        f"- the largest share of the rest: **{biggest[0]}** ({biggest[1]:.1f} s of {wall - floor_s:.1f} s)",
        f"- per env step, on one core: the floor {per_step_us(floor_s):.0f} µs, the rest {per_step_us(wall - floor_s):.0f}"
        f" µs; at the goal the rest could be at most {per_step_us(0.25 * floor_s):.0f} µs",
        f"- with every agent row at zero, suite / floor would still be {(wall - agents_s) / floor_s:.2f}: the rows "
        f"outside the agents take {per_step_us(wall - floor_s - agents_s):.0f} µs a step "
        "(what the agents' own time is made of: `benchmarks/agent_kernels.py`)",
        f"- a fresh job's start, re-timed alone: {start.imports_s:.2f} s of interpreter and imports (once per "
        f"worker process) and {start.model_s:.2f} s loading the model (once per job)",
    ]
    floor_cpu = chosen.floor_cpu_s
    if suite_cpu is not None:
        lines.insert(
            -1,
            f"- in CPU seconds, which other work on the machine inflates far less than wall seconds: the suite's "
            f"processes used {suite_cpu:,.0f} s, the floor's sections {floor_cpu:,.0f} s: **suite / floor = "
            f"{suite_cpu / floor_cpu:.2f}**; the rounds' CPU ratios: "
            + ", ".join("" if r.cpu_ratio is None else f"{r.cpu_ratio:.2f}" for r in rounds),
        )
    replay_steps_s = sum(f.seconds.get("env", 0.0) for f in floors)
    own = suite.sections.get("env", 0.0) + suite.sections.get("lockstep embedding", 0.0)
    if replay_steps_s > suite.sections.get("env", 0.0):
        lines.insert(
            -1,
            f"- **caution**: the replay's batched steps took {replay_steps_s / max(suite.sections.get('env', 0.0), 1e-9):.2f}x "
            "the suite's own env section (which also holds the ground truth for the measures): the machine was busier "
            "during the floor than during the suite, and the wall ratio above understates. Against the suite's own env "
            f"and batched-embedding sections spread over {args.jobs} cores ({own / args.jobs:,.1f} s, env build and "
            f"reset left out): suite / floor = **{wall / (own / args.jobs):.2f}**",
        )
    if chosen.peak_mib is not None:
        lines.insert(
            -1, f"- the suite's largest process (a job's worker) peaked at {chosen.peak_mib:,.0f} MiB resident"
        )
    lines += ["", "| clock | suite s | floor s | suite / floor | goal |", "|---|---:|---:|---:|---|"]
    lines.append(f"| wall | {wall:.1f} | {floor_s:.1f} | {wall / floor_s:.2f} | at most 1.25 |")
    if suite_cpu is not None:
        lines.append(f"| CPU | {suite_cpu:.1f} | {floor_cpu:.1f} | {suite_cpu / floor_cpu:.2f} | |")
    lines += [
        "",
        f"| where the suite's wall went | seconds spread over {args.jobs} cores | share of the wall "
        "| µs per env step, one core |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {name} | {s:.1f} | {s / wall:.1%} | {per_step_us(s):.0f} |" for name, s in rows]
    lines.append(f"| **total** | {sum(s for _, s in rows):.1f} | | {per_step_us(wall):.0f} |")
    lines += [
        "",
        "Each round (1-minute load average, the suite's own jobs and any other work on the machine, before the "
        "suite, after it, after the floor):",
        "",
        "| round | suite s | floor s | suite / floor | suite CPU s | floor CPU s | CPU suite / floor | load |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for i, r in enumerate(rounds):
        cpu = "" if r.suite_cpu is None else f"{r.suite_cpu:.1f}"
        cpu_ratio = "" if r.cpu_ratio is None else f"{r.cpu_ratio:.2f}"
        lines.append(
            f"| {i}{' (median)' if r is chosen else ''} | {r.wall:.1f} | {r.floor_s:.1f} | {r.ratio:.2f} | {cpu} "
            f"| {r.floor_cpu_s:.1f} | {cpu_ratio} | {', '.join(f'{v:.1f}' for v in r.load.values())} |"
        )
    lines += [
        "",
        "Per job of the median round's replay (seconds):",
        "",
        "| job | steps | frames embedded | env build | env reset | env steps | embedding | setup (not floor) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for f in floors:
        sec = f.seconds
        lines.append(
            f"| {f.job} | {f.steps:,} | {f.frames_embedded:,} | {sec.get('env build', 0):.1f} | {sec.get('env reset', 0):.1f} "
            f"| {sec.get('env', 0):.1f} | {sec.get('lockstep embedding', 0):.1f} | {f.setup_s:.1f} |"
        )
    body = "\n".join(lines)
    print(body)
    results = args.results or ROOT / "benchmarks" / "results" / f"floor_{args.split}.md"
    write_results_markdown(
        results, "The core suite against its floor (env steps + CLIP passes)", body, Provenance.collect()
    )
    print(f"\nwritten: {results}")


if __name__ == "__main__":
    main()
