"""Mutation testing of the modules every figure comes from: how many wrong versions their tests catch.

A mutant is one small edit of a module (an operator swapped, a constant changed, a condition
negated, a return value dropped: mutmut's mutators). Each module's mutants run against that
module's own test files only (:data:`TARGETS`); a mutant every test still passes *survives*. A
survivor is either a gap in the tests or an *equivalent* mutant, one that cannot change any output;
the equivalent ones are listed, each with a one-line reason, in ``benchmarks/mutation_equivalent.txt``
(:func:`read_equivalents`), and the score leaves them out.

mutmut rewrites files in place (its ``mutants/`` folder under the working directory), so every
module runs in a fresh temporary copy of ``embodmem/``, ``tests/`` and ``pyproject.toml``; the
work tree is never written, apart from the results file. The package's other folders (``envs/``,
``agents/``, ``configs/``) are imported from the editable install, which the copy's ``embodmem``
shadows on ``sys.path``.

    python benchmarks/mutation.py                       # every module, every mutant (15 min on 2 cores, 30 when they are busy)
    python benchmarks/mutation.py --sample 20           # 20 mutants per module, fixed seed (a CI check)
    python benchmarks/mutation.py --module embodmem/stats.py

Writes ``benchmarks/results/mutation.md`` (or ``--results``; a sampled run writes a temp file).
Exits 1 when a mutant survives that the equivalents file does not list, 2 on bad arguments or a
missing tool (``pip install -e '.[mutation]'``). The per-mutant time limit is mutmut's: CPU seconds of
``(the covering tests' clean time + TIMEOUT_CONSTANT_S) * TIMEOUT_MULTIPLIER * 2``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from embodmem.provenance import Provenance, write_results_markdown

ROOT = Path(__file__).resolve().parent.parent
PROPERTIES = "tests/embodmem/test_metric_properties.py"
"""The metrics' definitions as invariants: part of every metric module's own tests."""
RESULTS = ROOT / "benchmarks" / "results" / "mutation.md"
EQUIVALENTS = ROOT / "benchmarks" / "mutation_equivalent.txt"
TABLE_SECTION = "scores"
"""Name of the snippet section around the per-module table (``--8<-- "benchmarks/results/mutation.md:scores"``)."""


@dataclass(frozen=True)
class Target:
    """One module under test and the test files that are its own (node ids allowed)."""

    module: str
    tests: tuple[str, ...]
    deselect: tuple[str, ...] = ()
    """Tests of those files left out: they run the module only through a subprocess or a whole
    runner, which a forked mutant worker cannot see or which costs seconds per mutant."""


TARGETS: tuple[Target, ...] = (
    Target(
        "embodmem/metrics.py",
        ("tests/embodmem/test_metrics.py", PROPERTIES),
        deselect=("tests/embodmem/test_metrics.py::test_runner_logs_reports_where_the_agent_judged_the_frame",),
    ),
    Target("embodmem/transfer.py", ("tests/embodmem/test_transfer.py", PROPERTIES)),
    Target(
        "embodmem/stats.py",
        (
            "tests/embodmem/test_stats.py",
            "tests/embodmem/test_transfer.py",
            "tests/embodmem/test_benchmark_splits.py::test_cluster_bootstrap_is_wider_than_episode_bootstrap",
            PROPERTIES,
        ),
    ),
    Target("embodmem/memory/fifo.py", ("tests/embodmem/memory/test_memory_fifo.py", PROPERTIES)),
    Target(
        "embodmem/eqa/scoring.py",
        (
            "tests/embodmem/test_eqa_scoring.py",
            "tests/embodmem/test_eqa.py::test_answer_outside_the_choices_is_scored_wrong_and_counted",
        ),
    ),
    Target(
        "embodmem/staleness.py",
        ("tests/embodmem/test_staleness.py", "tests/embodmem/test_staleness_properties.py"),
    ),
    Target("embodmem/bench/score.py", ("tests/embodmem/bench/test_score.py",)),
)

#: mutmut's per-mutant limit: CPU seconds of (clean time of the covering tests + constant) * multiplier * 2.
TIMEOUT_MULTIPLIER = 5.0
TIMEOUT_CONSTANT_S = 2.0
#: Wall-clock limit of one module's whole mutmut run (a hung run fails the module, not the machine).
MODULE_LIMIT_S = 1800

#: mutmut's exit codes of one mutant, grouped as the table counts them.
KILLED_CODES = {1, 3}
SURVIVED_CODES = {0}
TIMEOUT_CODES = {36, -24, 24, 152, 255}
NO_TESTS_CODES = {5, 33}


@dataclass(frozen=True)
class Equivalent:
    """A reviewed survivor: the function it lives in, its edit, and why no output can change."""

    module: str
    function: str
    edit: str
    reason: str


def read_equivalents(path: Path) -> list[Equivalent]:
    """The reviewed equivalent mutants: one per line, ``module :: function :: edit :: reason``.

    ``edit`` is the changed source line as ``old ==> new`` (both stripped); ``#`` starts a comment.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "eq.txt"
        >>> _ = p.write_text("# header\\nembodmem/stats.py :: f :: a < b ==> a <= b :: a == b cannot occur\\n")
        >>> read_equivalents(p)[0].reason
        'a == b cannot occur'
    """
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" :: ")]
        if len(parts) != 4 or not all(parts):
            raise SystemExit(f"{path}:{number}: expected 'module :: function :: old ==> new :: reason', got {line!r}")
        entries.append(Equivalent(*parts))
    return entries


def stale_equivalents(equivalents: list[Equivalent], root: Path = ROOT) -> list[Equivalent]:
    """The entries whose original line is no longer in their module: the code changed under them,
    so their proof no longer applies (and a survivor on the new line shows up as a gap).

    Example:
        >>> e = Equivalent("embodmem/stats.py", "f", "no such line ==> x", "why")
        >>> [x.edit for x in stale_equivalents([e])]
        ['no such line ==> x']
    """
    lines: dict[str, set[str]] = {}
    stale = []
    for e in equivalents:
        if e.module not in lines:
            path = root / e.module
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            lines[e.module] = {line.strip() for line in text.splitlines()}
        if e.edit.split(" ==> ")[0] not in lines[e.module]:
            stale.append(e)
    return stale


@dataclass(frozen=True)
class Mutant:
    """One mutant's outcome and edit (``old ==> new`` of the changed lines)."""

    name: str
    function: str
    status: str
    edit: str


@dataclass
class ModuleResult:
    """One module's run: every mutant's outcome, the tests used and the time taken."""

    target: Target
    mutants: list[Mutant] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""

    def count(self, status: str) -> int:
        return sum(m.status == status for m in self.mutants)


def status_of(exit_code: int | None) -> str:
    """The table's name for a mutmut exit code."""
    if exit_code in KILLED_CODES:
        return "killed"
    if exit_code in SURVIVED_CODES:
        return "survived"
    if exit_code in TIMEOUT_CODES:
        return "timeout"
    if exit_code in NO_TESTS_CODES:
        return "no tests"
    if exit_code is None:
        return "not run"
    return "suspicious"


def function_of(mutant_name: str) -> str:
    """``embodmem.stats.x_paired_ci__mutmut_3`` -> ``paired_ci``; methods as ``Class.method``."""
    dotted = mutant_name.rsplit("__mutmut_", 1)[0]
    last = dotted.rsplit(".", 1)[-1]
    if "ǁ" in last:  # mutmut's class separator: xǁClassǁmethod
        _, cls, method = last.split("ǁ")
        return f"{cls}.{method}"
    return last[2:] if last.startswith("x_") else last


def edit_of(diff: str) -> str:
    """The changed lines of a unified diff as ``old ==> new`` (several lines joined by `` / ``)."""
    lines = diff.splitlines()
    old = [line[1:].strip() for line in lines if line.startswith("-") and not line.startswith("---")]
    new = [line[1:].strip() for line in lines if line.startswith("+") and not line.startswith("+++")]
    return f"{' / '.join(old)} ==> {' / '.join(new)}"


def workspace(into: Path) -> None:
    """Copy what the tests import and read (the package, the tests, pyproject.toml) into ``into``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "mutants", ".hypothesis")
    for folder in ("embodmem", "tests"):
        shutil.copytree(ROOT / folder, into / folder, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", into / "pyproject.toml")


def mutmut_config(target: Target) -> str:
    """The ``[tool.mutmut]`` table that points mutmut at one module and its own tests."""
    tests = ", ".join(json.dumps(t) for t in target.tests)
    extra = ", ".join(json.dumps(a) for d in target.deselect for a in ("--deselect", d))
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["embodmem"]\n'
        f"only_mutate = [{json.dumps(target.module)}]\n"
        f"pytest_add_cli_args_test_selection = [{tests}]\n"
        f"pytest_add_cli_args = [{extra}]\n"
        f"timeout_multiplier = {TIMEOUT_MULTIPLIER}\n"
        f"timeout_constant = {TIMEOUT_CONSTANT_S}\n"
        "use_git_change_detection = false\n"
        "use_setproctitle = false\n"
    )


def mutmut(args: list[str], cwd: Path, log: Path, limit_s: float) -> int:
    """Run the mutmut CLI in ``cwd``, appending its output to ``log``."""
    command = [sys.executable, "-c", "from mutmut.__main__ import cli; cli()", *args]
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ mutmut {' '.join(args)}\n")
        out.flush()
        try:
            return subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=limit_s).returncode
        except subprocess.TimeoutExpired:
            out.write(f"timed out after {limit_s:.0f} s\n")
            return -1


def read_meta(work: Path, target: Target) -> dict[str, int | None]:
    """mutmut's exit code of every mutant of ``target`` (None: not run)."""
    meta = work / "mutants" / f"{target.module}.meta"
    if not meta.exists():
        return {}
    return dict(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])


def diffs(work: Path, names: list[str]) -> dict[str, str]:
    """Each named mutant's unified diff, read with mutmut's own reader in ``work``."""
    if not names:
        return {}
    script = (
        "import json, sys\n"
        "from mutmut.mutation.diff_apply import get_diff_for_mutant\n"
        "print(json.dumps({n: get_diff_for_mutant(n) for n in sys.argv[1:]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script, *names], cwd=work, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def run_module(target: Target, sample: int | None, seed: int, children: int, log: Path) -> ModuleResult:
    """Mutate one module in a temporary copy and run its mutants against its own tests."""
    result = ModuleResult(target)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="embodmem-mutation-") as tmp:
        work = Path(tmp)
        workspace(work)
        with (work / "pyproject.toml").open("a", encoding="utf-8") as f:
            f.write(mutmut_config(target))
        run_args = ["run", "--max-children", str(children)]
        if sample is not None:
            # Generate the mutants and the test map only (a filter that matches no mutant), then sample.
            mutmut([*run_args, "no-such-mutant-*"], work, log, MODULE_LIMIT_S)
            names = sorted(read_meta(work, target))
            if not names:
                result.error = f"mutmut generated no mutants (see {log})"
                return result
            chosen = sorted(random.Random(seed).sample(names, min(sample, len(names))))
            code = mutmut([*run_args, *chosen], work, log, MODULE_LIMIT_S)
        else:
            code = mutmut(run_args, work, log, MODULE_LIMIT_S)
        codes = read_meta(work, target)
        if sample is not None:
            codes = {n: codes[n] for n in chosen}
        if code not in (0, 1) or not codes or all(c is None for c in codes.values()):
            result.error = f"mutmut exited {code} (see {log})"
        statuses = {name: status_of(c) for name, c in codes.items()}
        survivors = sorted(n for n, s in statuses.items() if s in ("survived", "suspicious"))
        edits = {n: edit_of(d) for n, d in diffs(work, survivors).items()}
        result.mutants = [Mutant(n, function_of(n), statuses[n], edits.get(n, "")) for n in sorted(codes)]
    result.seconds = time.monotonic() - start
    return result


def is_listed(module: str, mutant: Mutant, equivalents: list[Equivalent]) -> bool:
    return any(e.module == module and e.function == mutant.function and e.edit == mutant.edit for e in equivalents)


def table(results: list[ModuleResult], equivalents: list[Equivalent], sample: int | None) -> tuple[str, int]:
    """The results file's body and the number of survivors not listed as equivalent."""
    head = (
        "| module | tests | mutants | killed | timed out | survived | of which equivalent | no tests | "
        "score | score without equivalents | seconds |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows, gaps = [], []
    for r in results:
        m = r.target.module
        n = len(r.mutants)
        killed, timeout = r.count("killed"), r.count("timeout")
        surviving = [x for x in r.mutants if x.status in ("survived", "suspicious")]
        equivalent = [x for x in surviving if is_listed(m, x, equivalents)]
        gaps += [(m, x) for x in surviving if not is_listed(m, x, equivalents)]
        caught = killed + timeout
        score = f"{100 * caught / n:.1f}%" if n else "-"
        real = n - len(equivalent)
        score_real = f"{100 * caught / real:.1f}%" if real else "-"
        tests = "<br>".join(f"`{t}`" for t in r.target.tests)
        if r.error:
            tests += f"<br>**{r.error}**"
        rows.append(
            f"| `{m}` | {tests} | {n} | {killed} | {timeout} | {len(surviving)} | {len(equivalent)} | "
            f"{r.count('no tests')} | {score} | {score_real} | {r.seconds:.0f} |"
        )
    scope = f"a sample of {sample} mutants per module (fixed seed)" if sample else "every mutant"
    body = [
        f"mutmut {_mutmut_version()}, {scope}; each module's mutants run against that module's own test files "
        "only. Score: (killed + timed out) / mutants; the last score leaves out the survivors listed as "
        "equivalent in `benchmarks/mutation_equivalent.txt` (each with its reason). The seconds follow the "
        "machine's load and are indicative only.",
        "",
        # Section markers (hidden in Markdown): docs pages include the table with pymdownx.snippets.
        f"<!-- --8<-- [start:{TABLE_SECTION}] -->",
        head + "\n".join(rows),
        f"<!-- --8<-- [end:{TABLE_SECTION}] -->",
        "",
    ]
    if gaps:
        body.append("Survivors not listed as equivalent (gaps in the tests):\n")
        body += [f"- `{m}` `{x.function}`: `{x.edit}` ({x.name})" for m, x in gaps]
    else:
        body.append("Every surviving mutant is listed as equivalent.")
    deselected = [d for r in results for d in r.target.deselect]
    if deselected:
        body.append("\nLeft out of the mutant runs (they exercise the module through a whole run): ")
        body += [f"- `{d}`" for d in deselected]
    return "\n".join(body), len(gaps)


def _mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", help="module path (repeatable); default: every target")
    parser.add_argument("--sample", type=int, help="run this many mutants per module (fixed seed)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--children", type=int, default=2, help="mutants run at once")
    parser.add_argument(
        "--results",
        type=Path,
        help=f"results markdown file (default: {RESULTS.relative_to(ROOT)}; with --sample, a temp file)",
    )
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS, help="reviewed equivalent mutants")
    parser.add_argument("--log", type=Path, help="mutmut's output (default: a file in the temp dir)")
    args = parser.parse_args(argv)
    known = {t.module: t for t in TARGETS}
    for name in args.module or []:
        if name not in known:
            parser.exit(2, f"--module: {name!r} is not a target; allowed: {', '.join(known)}\n")
    if args.sample is not None and args.sample < 1:
        parser.exit(2, f"--sample: {args.sample} mutants; allowed: a positive number\n")
    if args.children < 1:
        parser.exit(2, f"--children: {args.children}; allowed: a positive number\n")
    equivalents = read_equivalents(args.equivalents) if args.equivalents.exists() else []
    stale = stale_equivalents(equivalents)
    if stale:
        parser.exit(
            2,
            f"--equivalents: {len(stale)} entries of {args.equivalents} name a line no longer in their module "
            f"(first: {stale[0].module} :: {stale[0].function} :: {stale[0].edit}); allowed: only lines the "
            "module still has: update or remove them\n",
        )
    if shutil.which("mutmut") is None and not _importable("mutmut"):
        parser.exit(2, "mutmut is not installed; allowed: pip install -e '.[mutation]'\n")
    targets = [known[n] for n in args.module] if args.module else list(TARGETS)
    if args.results is None:
        # A sampled run is a check (CI), not the reported figure: it leaves the results file alone.
        args.results = Path(tempfile.gettempdir()) / "embodmem-mutation-sample.md" if args.sample else RESULTS
    facts = Provenance.collect()
    log = args.log or Path(tempfile.gettempdir()) / "embodmem-mutation.log"
    log.write_text("", encoding="utf-8")
    results = []
    for target in targets:
        print(f"{target.module}: mutating ...", flush=True)
        r = run_module(target, args.sample, args.seed, args.children, log)
        print(
            f"{target.module}: {len(r.mutants)} mutants, {r.count('killed')} killed, {r.count('timeout')} timed out, "
            f"{r.count('survived') + r.count('suspicious')} survived ({r.seconds:.0f} s) {r.error}",
            flush=True,
        )
        results.append(r)
    body, gaps = table(results, equivalents, args.sample)
    path = write_results_markdown(
        args.results, "Mutation testing of the metric, statistics and memory code", body, facts
    )
    print(f"wrote {path}; mutmut's output: {log}")
    print(body)
    return 1 if gaps or any(r.error for r in results) else 0


def _importable(name: str) -> bool:
    from importlib.util import find_spec

    return find_spec(name) is not None


if __name__ == "__main__":
    sys.exit(main())
