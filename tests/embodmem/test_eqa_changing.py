"""Questions about a world that changes between tasks (embodmem.eqa.changing): the generator is
seeded, the balanced answers leave a question-only answerer at chance, abstentions are scored apart,
the text log cannot see looks, and bad settings are refused in one line."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hypothesis import given, settings
from hypothesis import strategies as st

from embodmem.agents.textlog_agent import LogEntry
from embodmem.app import build_embedder, run
from embodmem.config import ConfigError, validate
from embodmem.eqa.answerers import Answer, BlindAnswerer
from embodmem.eqa.changing import (
    NOT_SEEN,
    ChangingQuestionError,
    balance_visits,
    check_types,
    draw_changes,
    generate_visit_set,
    replay_visit,
)
from embodmem.eqa.changing_answerers import VisitKeepEverything, VisitTextLog
from embodmem.eqa.changing_run import abstention_scores
from embodmem.eqa.config import ChangingEQAConfig
from embodmem.eqa.files import CHANGING_QUESTION_TYPES, Question, QuestionType, Truth
from embodmem.eqa.scoring import EQARecord, score

ROOT = Path(__file__).resolve().parents[2]


def compose_job(overrides: list[str]):
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        return compose("config", overrides=overrides)


@pytest.fixture(scope="module")
def embedder():
    return build_embedder(compose_job(["embedder.pretrained=variants"]))


@pytest.fixture(scope="module")
def dev_set(embedder):
    return generate_visit_set("dev", [1000, 1001, 1002, 1003], embedder)


# ----------------------------------------------------------------------------- the generator


def test_same_seeds_same_questions_other_seeds_differ(embedder, dev_set) -> None:
    again = generate_visit_set("dev", [1000, 1001, 1002, 1003], embedder)
    assert again.visits == dev_set.visits
    assert again.questions == dev_set.questions and again.truths == dev_set.truths
    assert draw_changes(1000) == draw_changes(1000)
    other = generate_visit_set("dev", [1004, 1005, 1006, 1007], embedder)
    assert {q.text for q in other.questions} != {q.text for q in dev_set.questions}
    assert [v.changes for v in other.visits] != [v.changes for v in dev_set.visits]
    assert {q.type.value for q in dev_set.questions} >= {"abstention", "appearance"}


def test_every_change_kind_happens_between_tasks() -> None:
    plan = draw_changes(1001)
    assert plan is not None
    actions = Counter(c.action for c in plan.changes if c.task >= 2)
    assert actions["move"] >= 1 and actions["remove"] >= 1 and actions["add"] >= 1 and actions["replace"] >= 1


# ----------------------------------------------------------------------------- balance


def _item(i: int, qtype: QuestionType, kind: str, answer: str, choices: tuple[str, ...]) -> tuple[Question, Truth]:
    return Question(f"w{i % 7}:visit:{qtype.value}:{i}", f"w{i % 7}:visit", qtype, "?", (kind,), choices), Truth(answer)


@settings(max_examples=40, deadline=None)
@given(
    answers=st.lists(
        st.tuples(
            st.sampled_from([QuestionType.tasks_ago, QuestionType.appearance, QuestionType.abstention]),
            st.sampled_from(["barrel", "wreck", "pipeline"]),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=120,
    ),
    seed=st.integers(0, 1000),
)
def test_balance_leaves_any_question_only_guess_at_chance(answers, seed: int) -> None:
    """After balancing, every (type, kind) group holds every choice equally often: whatever a blind
    answerer guesses from the type and the kind, it is right on exactly 1/len(choices)."""
    choices = {
        QuestionType.tasks_ago: ("0", "1", "2", "3"),
        QuestionType.appearance: ("a", "b", "c"),
        QuestionType.abstention: ("a", "b", "c", NOT_SEEN),
    }
    items = []
    for i, (qtype, kind, a) in enumerate(answers):
        c = choices[qtype]
        items.append(_item(i, qtype, kind, c[a % len(c)], c))
    kept = balance_visits(items, seed)
    groups: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for q, t in kept:
        groups[(q.type.value, q.kinds[0])][t.answer] += 1
    for (qtype, _), counts in groups.items():
        allowed = choices[QuestionType(qtype)]
        assert set(counts) == set(allowed) and len(set(counts.values())) == 1
        for guess in allowed:
            right = sum(n for a, n in counts.items() if a == guess)
            assert right * len(allowed) == sum(counts.values())
    assert balance_visits(items, seed) == kept  # seeded


def test_blind_answerer_is_at_chance_on_every_type_of_a_generated_set(embodmem_prior_and_set) -> None:
    prior, target = embodmem_prior_and_set
    blind = BlindAnswerer(prior.as_question_set())
    by_type: dict[str, list[bool]] = defaultdict(list)
    for q in target.questions:
        if q.choices:
            by_type[q.type.value].append(blind.answer(q).choice == target.truths[q.id].answer)
    assert by_type
    for qtype, right in by_type.items():
        chance = 1 / len(next(q for q in target.questions if q.type.value == qtype).choices)
        assert sum(right) / len(right) == pytest.approx(chance), qtype


@pytest.fixture(scope="module")
def embodmem_prior_and_set(embedder, dev_set):
    return generate_visit_set("dev", [1600, 1601, 1602, 1603], embedder), dev_set


# ----------------------------------------------------------------------------- abstention


def _abstention(qid: str, tour: str) -> Question:
    return Question(qid, tour, QuestionType.abstention, "In task 2, what did oil drums look like?", ("barrel",),
                    ("the red oil drums", "the oil drums with a yellow band", "the toppled oil drums", NOT_SEEN))  # fmt: skip


def test_abstention_is_scored_apart() -> None:
    """Correct abstentions and false claims on questions whose answer is "not seen"; false
    abstentions on the others; every rate clustered by world."""
    cases = [  # (world, right answer, given answer)
        ("w1", NOT_SEEN, NOT_SEEN),
        ("w1", NOT_SEEN, "the red oil drums"),
        ("w2", NOT_SEEN, NOT_SEEN),
        ("w2", "the toppled oil drums", NOT_SEEN),
        ("w3", "the toppled oil drums", "the toppled oil drums"),
        ("w3", "the red oil drums", "the toppled oil drums"),
    ]
    records: list[EQARecord] = []
    truths = {}
    for i, (world, right, reply) in enumerate(cases):
        q = _abstention(f"q{i}", world)
        truths[q.id] = right
        records.append(score("x", q, Truth(right), Answer(choice=reply), 5.0))
    assert [r.correct for r in records] == [True, False, True, False, True, False]
    (s,) = abstention_scores(records, truths)
    assert (s.not_seen, s.seen) == (3, 3)
    assert s.correct_abstention == pytest.approx(2 / 3) and s.false_claim == pytest.approx(1 / 3)
    assert s.false_abstention == pytest.approx(1 / 3)
    assert s.correct_abstention + s.false_claim == pytest.approx(1.0)
    lo, hi = s.false_claim_ci
    assert 0.0 <= lo <= s.false_claim <= hi <= 1.0


# ----------------------------------------------------------------------------- looks


def test_text_log_answers_cannot_see_appearance(embedder, dev_set) -> None:
    """A log line holds no look: the text log's answer to a look question is its first choice
    whatever it saw (reorder the choices and it follows the order), while the frames read looks."""
    assert not {"variant", "look", "colour", "color"} & {f.name for f in dataclasses.fields(LogEntry)}
    visit = next(v for v in dev_set.visits if any(q.type == QuestionType.appearance for q in dev_set.by_visit()[v.key]))
    questions = [
        q for q in dev_set.by_visit()[visit.key] if q.type in (QuestionType.appearance, QuestionType.abstention)
    ]
    log = VisitTextLog(embedder, len(visit.legs), visit.steps_per_task)
    frames = VisitKeepEverything(embedder, len(visit.legs), visit.steps_per_task)
    for step, obs, spec in replay_visit(dev_set.env, visit):
        if step == 0:
            log.start_tour(visit.key, spec)
            frames.start_tour(visit.key, spec)
        log.observe(obs, step)
        frames.observe(obs, step)
    looks = [q for q in questions if dev_set.truths[q.id].answer != NOT_SEEN]
    assert looks
    for q in looks:
        said = log.answer(q).choice
        assert said in (q.choices[0], NOT_SEEN)
        turned = dataclasses.replace(q, choices=(*reversed([c for c in q.choices if c != NOT_SEEN]),
                                                 *[c for c in q.choices if c == NOT_SEEN]))  # fmt: skip
        assert log.answer(turned).choice in (turned.choices[0], NOT_SEEN)
    read = [frames.answer(q).choice == dev_set.truths[q.id].answer for q in looks]
    assert sum(read) / len(read) > 0.6  # the frames do read looks


# ----------------------------------------------------------------------------- bad input and the run mode


def test_unknown_type_and_bad_settings_are_refused_in_one_line() -> None:
    with pytest.raises(
        ChangingQuestionError, match=r"^experiment\.eqa\.changing\.types: 'colour' is unknown; allowed: first_seen"
    ):
        check_types(["colour"])
    with pytest.raises(ValueError, match=r"^experiment\.eqa\.changing\.types: 'where' is not allowed; allowed: "):
        ChangingEQAConfig(types=["where"])
    with pytest.raises(
        ValueError, match=r"^experiment\.eqa\.changing\.tasks: 1 is not allowed; allowed: an integer in 2\.\.8$"
    ):
        ChangingEQAConfig(tasks=1)
    assert tuple(ChangingEQAConfig().types) == CHANGING_QUESTION_TYPES
    with pytest.raises(ConfigError, match=r"^experiment\.eqa\.changing\.types: 'colour' is not allowed; allowed: "):
        validate(compose_job(["experiment=eqa_changing", "experiment.eqa.changing.types=[colour]"]))
    with pytest.raises(
        ConfigError, match=r"^experiment\.eqa\.answerers: 'vlm' does not answer changing-world questions"
    ):
        validate(compose_job(["experiment=eqa_changing", "experiment.eqa.answerers=[textlog,vlm]"]))
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "eqa_changing.py"), "--types", "tasks_ago,colour"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --types: 'colour' is unknown; allowed: " + ", ".join(CHANGING_QUESTION_TYPES)
    ]


def test_run_mode_answers_a_changing_world(tmp_path: Path, capsys) -> None:
    cfg = compose_job(
        [
            "experiment=eqa_changing",
            "experiment.eqa.changing.worlds=3",
            "experiment.eqa.changing.prior_worlds=2",
            "experiment.eqa.changing.types=[appearance,abstention]",
            "experiment.eqa.answerers=[blind,textlog,oracle]",
            "embedder.pretrained=variants",
            "logger.progress=false",
        ]
    )
    records = run(cfg, tmp_path)
    assert records and {r.type for r in records} == {"appearance", "abstention"}
    assert {r.answerer for r in records} == {"blind", "textlog", "oracle"}
    assert all(r.correct for r in records if r.answerer == "oracle")
    lines = [json.loads(line) for line in (tmp_path / "eqa.jsonl").read_text().splitlines()]
    assert len(lines) == len(records)
    assert "| answerer |" in (tmp_path / "eqa.md").read_text()
