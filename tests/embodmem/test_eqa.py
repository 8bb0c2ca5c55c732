"""Question answering from memory (embodmem.eqa): ground truth from the camera, balance, the file,
the answerers, bad input, the run mode, and the VLM answerer end to end through a LiteLLM proxy."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
from collections import Counter
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from embodmem.app import build_embedder, run
from embodmem.config import ConfigError, validate
from embodmem.envs.config import EnvConfig
from embodmem.envs.objects import TARGET_KINDS
from embodmem.eqa.answerers import (
    Answer,
    AnswererContext,
    BlindAnswerer,
    build_answerer,
    check_answerers,
    count_on_map,
)
from embodmem.eqa.files import (
    QUESTION_TYPES,
    Question,
    QuestionFileError,
    QuestionType,
    Tour,
    Truth,
    load_questions,
    question_file,
    question_type,
    save_questions,
)
from embodmem.eqa.questions import attribute_choices, generate
from embodmem.eqa.run import answer_question_set
from embodmem.eqa.scoring import InvalidAnswerCounter, score, type_scores
from embodmem.eqa.tour import TourMismatchError, replay_tour, walk_tour


def compose_job(overrides: list[str]):
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        return compose("config", overrides=overrides)


@pytest.fixture(scope="module")
def embedder():
    return build_embedder(compose_job([]))


@pytest.fixture(scope="module")
def dev():
    return load_questions(question_file("dev"))


def small_set(dev, tours: int = 3):
    """The first ``tours`` tours of the shipped dev file, as a question set."""
    import dataclasses

    keep = {t.key for t in dev.tours[:tours]}
    questions = [q for q in dev.questions if q.tour in keep]
    truths = {q.id: dev.truths[q.id] for q in questions}
    return dataclasses.replace(dev, tours=dev.tours[:tours], questions=questions, truths=truths)


# ----------------------------------------------------------------------------- ground truth


def test_truth_is_what_entered_the_camera(embedder) -> None:
    """Seen instances were clearly visible in the frames; a kind the world holds but the camera never
    showed is asked about with the answer "no"."""
    tour, truth = walk_tour(EnvConfig(), 1003, 0, 60, embedder)
    assert len(tour.actions) == 60
    items = generate(tour, truth, random.Random(0))
    existence = {q.kinds[0]: t.answer for q, t in items if q.type == QuestionType.existence}
    never = [k for k in TARGET_KINDS if k not in truth.glimpsed_kinds]
    assert never, "a 60-step tour should leave some kind unseen"
    for kind in never:
        assert existence[kind] == "no"  # every world holds every kind: the "no" comes from the camera
    for kind, answer in existence.items():
        if answer == "yes":
            assert truth.seen_instances(kind, 2)
    # the ground truth is the env's own per-frame visibility, over the replayed tour
    from embodmem.eqa.tour import make_env

    env = make_env(EnvConfig(), 1003)
    env.reset(seed=0)
    visible = set(env.visible_instances())
    for a in tour.actions:
        env.step(int(a))
        visible |= set(env.visible_instances())
    assert set(truth.seen) == visible


def test_tours_replay_bit_for_bit_and_refuse_a_mismatch(embedder) -> None:
    tour, _ = walk_tour(EnvConfig(), 1004, 0, 30, embedder)
    a = [obs["image"].tobytes() for _, obs, _ in replay_tour(EnvConfig(), tour)]
    b = [obs["image"].tobytes() for _, obs, _ in replay_tour(EnvConfig(), tour)]
    assert a == b and len(a) == 31
    other, _ = walk_tour(EnvConfig(), 1005, 0, 30, embedder)
    assert other.actions != tour.actions or other.end_pose != tour.end_pose  # other worlds really differ
    bad = Tour(tour.world_seed, tour.seed, tour.actions, (tour.end_pose[0] + 1, tour.end_pose[1], tour.end_pose[2]))
    with pytest.raises(TourMismatchError, match=r"^tour 1004:0: the replay ended at"):
        list(replay_tour(EnvConfig(), bad))


# ----------------------------------------------------------------------------- balance and the file


def test_shipped_files_are_balanced(dev) -> None:
    """Per type and kind, every answer occurs equally often (existence, count); relation answers
    are balanced over kinds, order answers per pair of kinds; so the blind answerer cannot beat chance by more than noise."""
    for qtype in (QuestionType.existence, QuestionType.count):
        by_kind: dict[str, Counter[str]] = {}
        for q in dev.questions:
            if q.type == qtype:
                by_kind.setdefault(q.kinds[0], Counter())[dev.truths[q.id].answer] += 1
        assert by_kind
        for kind, counts in by_kind.items():
            assert len(set(counts.values())) == 1, (qtype, kind, counts)
    relation = Counter(dev.truths[q.id].answer for q in dev.questions if q.type == QuestionType.relation)
    assert len(set(relation.values())) == 1
    by_pair: dict[tuple[str, ...], Counter[str]] = {}
    for q in dev.questions:
        if q.type == QuestionType.order:
            by_pair.setdefault(tuple(sorted(q.kinds)), Counter())[dev.truths[q.id].answer] += 1
    assert by_pair and all(len(c) == 2 and len(set(c.values())) == 1 for c in by_pair.values()), by_pair
    test = load_questions(question_file("test"))
    assert test.split == "test" and len(test.tours) >= 100
    assert {t.world_seed for t in test.tours}.isdisjoint({t.world_seed for t in dev.tours})


def test_file_round_trip_and_refusals(dev, tmp_path: Path) -> None:
    qs = small_set(dev, 2)
    path = save_questions(qs, tmp_path / "q.jsonl")
    back = load_questions(path)
    assert back.questions == qs.questions and back.truths == qs.truths and back.tours == qs.tours
    lines = path.read_text().splitlines()

    def write(name: str, new_lines: list[str]) -> Path:
        p = tmp_path / name
        p.write_text("\n".join(new_lines) + "\n")
        return p

    tampered = write("tampered.jsonl", [lines[0], lines[1].replace('"seed":0', '"seed":1'), *lines[2:]])
    with pytest.raises(
        QuestionFileError, match=r"tampered.jsonl: sha256 of the body is .*changed after it was written"
    ):
        load_questions(tampered)
    header = json.loads(lines[0])
    header["version"] = 99
    with pytest.raises(QuestionFileError, match=r"version=99; this embodmem reads version 1"):
        load_questions(write("version.jsonl", [json.dumps(header), *lines[1:]]))
    # a body line with an unknown type: its checksum is recomputed, the type is refused by name
    from embodmem.eqa.files import checksum

    i = next(i for i, line in enumerate(lines) if '"type":"count"' in line or '"type":"order"' in line)
    body = [
        line.replace('"type":"count"', '"type":"colour"').replace('"type":"order"', '"type":"colour"')
        if j == i
        else line
        for j, line in enumerate(lines)
    ][1:]
    header = json.loads(lines[0])
    header["sha256"] = checksum(body)
    with pytest.raises(QuestionFileError, match=r"line \d+: question type 'colour' is unknown; allowed: existence"):
        load_questions(write("type.jsonl", [json.dumps(header), *body]))
    rec = json.loads(lines[i])
    rec["type"] = rec["type"]
    rec["answer"] = "not-a-choice"
    body = [json.dumps(rec, separators=(",", ":")) if j == i else line for j, line in enumerate(lines)][1:]
    header["sha256"] = checksum(body)
    with pytest.raises(QuestionFileError, match=r"answer 'not-a-choice' is not one of the choices"):
        load_questions(write("answer.jsonl", [json.dumps(header), *body]))
    with pytest.raises(ValueError, match=r"^question type 'size' is unknown; allowed: "):
        question_type("size")


# ----------------------------------------------------------------------------- bad input


def test_unknown_answerer_is_refused_in_one_line(dev, embedder) -> None:
    with pytest.raises(ValueError, match=r"^answerer 'psychic' is unknown; allowed: blind, textlog"):
        check_answerers(["blind", "psychic"])
    with pytest.raises(ConfigError, match=r"^experiment.eqa.answerers: 'psychic' is not allowed; allowed: blind"):
        validate(compose_job(["experiment=eqa", "experiment.eqa.answerers=[psychic]"]))
    with pytest.raises(ValueError, match=r"answerer 'vlm' needs a VLM endpoint"):
        build_answerer("vlm", AnswererContext(embedder, dev, dev.truths))


def test_answer_outside_the_choices_is_scored_wrong_and_counted(caplog) -> None:
    q = Question("t:existence:0", "t", QuestionType.existence, "Did you see oil drums?", ("barrel",), ("yes", "no"))
    counter = InvalidAnswerCounter()
    with caplog.at_level(logging.WARNING, logger="embodmem.eqa"):
        for reply in ("maybe", "perhaps", "yes"):
            counter.add(score("x", q, Truth("yes"), Answer(choice=reply), 5.0), q)
    assert counter.counts == {"x": 2}
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["answerer x gave 'maybe' to question t:existence:0 (allowed: yes, no): scored wrong and counted"]
    where = Question("t:where:0", "t", QuestionType.where, "Point to ...", ("barrel",))
    r = score("x", where, Truth(cells=((3, 4), (4, 4))), Answer(point=(4.0, 7.0)), 5.0)
    assert r.valid and r.error_cells == 3.0 and r.error_m == 15.0 and not r.correct


# ----------------------------------------------------------------------------- answerers


def test_answerers_on_dev_tours(dev, embedder) -> None:
    """Oracle perfect; memory answerers far above the blind one; same input, same records."""
    qs = small_set(dev, 4)
    names = ["blind", "textlog", "frame_memory", "keep_everything", "oracle"]
    ctx = AnswererContext(embedder, dev, qs.truths)
    first = answer_question_set(qs, [build_answerer(n, ctx) for n in names])
    again = answer_question_set(qs, [build_answerer(n, ctx) for n in names])
    assert first.records == again.records
    acc = Counter()
    n = Counter()
    for r in first.records:
        acc[r.answerer] += r.correct
        n[r.answerer] += 1
    assert acc["oracle"] == n["oracle"] == len(qs.questions)
    assert acc["frame_memory"] / n["frame_memory"] >= 0.75
    assert acc["frame_memory"] > acc["blind"] + 0.3 * n["blind"]
    scores = type_scores(first.records, {q.id: q for q in qs.questions}, qs.truths, qs.env.size)
    assert {s.type for s in scores} <= set(QUESTION_TYPES)


def test_counting_on_the_map_explains_sightings_with_the_fewest_instances() -> None:
    """One big thing seen from two sides is one (its look points lie apart); two things seven cells
    apart are two; a stray unsure sighting adds nothing."""
    import numpy as np

    west_side = np.array([[10.0, 10.0], [10.0, 11.0]])
    east_side = np.array([[13.0, 10.0], [13.0, 11.0]])
    far = np.array([[20.0, 10.0]])
    assert count_on_map([west_side, east_side], np.array([1.0, 1.0])) == 1
    assert count_on_map([west_side, far], np.array([1.0, 1.0])) == 2
    assert count_on_map([west_side, far], np.array([2.0, 0.6])) == 1
    assert count_on_map([], np.zeros(0)) == 0


def test_blind_uses_the_prior_only(dev) -> None:
    blind = BlindAnswerer(dev)
    q = Question("a", "t", QuestionType.existence, "Did you see oil drums?", ("barrel",), ("yes", "no"))
    assert blind.answer(q).choice in ("yes", "no")
    where = Question("b", "t", QuestionType.where, "Point", ("barrel",))
    assert blind.answer(where).point == (16.0, 16.0)


# ----------------------------------------------------------------------------- run mode


def test_run_mode_writes_records_with_type_and_answerer(tmp_path: Path, capsys) -> None:
    cfg = compose_job(["experiment=eqa", "experiment.eqa.tours=2", "logger.progress=false"])
    records = run(cfg, tmp_path)
    assert records and {"type", "answerer", "correct", "valid"} <= set(dataclasses.asdict(records[0]))
    lines = (tmp_path / "eqa.jsonl").read_text().splitlines()
    assert len(lines) == len(records)
    report = (tmp_path / "eqa.md").read_text()
    assert "| answerer | existence" in report
    out = capsys.readouterr().out
    assert "Question answering from memory" in out
    # The memory designs side by side, printed and written: every answerer a row, what its memory kept.
    assert "Memory designs side by side (question answering)" in report and "Memory designs side by side" in out
    rows = {line.split(" | ")[0].strip("| "): line for line in report.splitlines() if line.startswith("| ")}
    answerers = {r.answerer for r in records}
    assert answerers <= set(rows)
    frame_row = rows["frame_memory"].split(" | ")
    assert frame_row[3] == "-" and int(frame_row[4]) > 0 and float(frame_row[5]) > 0  # no Δ to itself; frames, kB


def test_run_mode_refuses_a_bad_file_before_work(tmp_path: Path, dev) -> None:
    path = save_questions(small_set(dev, 1), tmp_path / "q.jsonl")
    path.write_text(path.read_text().replace('"yes"', '"no"', 1))
    cfg = compose_job(["experiment=eqa", f"experiment.eqa.questions={path}", "logger.progress=false"])
    with pytest.raises(ConfigError, match=r"^experiment.eqa.questions: .*q.jsonl: sha256 of the body"):
        run(cfg, tmp_path / "out")
    assert not (tmp_path / "out" / "eqa.jsonl").exists()
    cfg = compose_job(["experiment=eqa", "experiment.eqa.prior=test", "logger.progress=false"])
    with pytest.raises(ConfigError, match=r"^experiment.eqa.prior: 'test' is not allowed"):
        run(cfg, tmp_path / "out2")
    cfg = compose_job(["experiment=eqa", "experiment.eqa.prior=attr_test", "logger.progress=false"])
    with pytest.raises(ConfigError, match=r"^experiment.eqa.prior: 'attr_test' is not allowed"):
        run(cfg, tmp_path / "out3")


# ----------------------------------------------------------------------------- the VLM answerer, end to end

GATEWAY_KEY_ENV = "EMBODMEM_TEST_GATEWAY_KEY"
YELLOW_BAND_DRUMS = "the oil drums with a yellow band"
EQA_MODELS = {
    "eqa-yes": '{"answer": "yes"}',
    "eqa-junk": "I think I saw a ship, near the rocks.",
    "eqa-drums": json.dumps({"answer": YELLOW_BAND_DRUMS}),
}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    import os

    from tests.agents.litellm_proxy import LiteLLMProxy, missing_extra

    why = missing_extra()
    if why is not None:
        if os.environ.get("EMBODMEM_REQUIRE_GATEWAY") == "1":  # .ci/run: never a silent skip
            raise RuntimeError(f"EMBODMEM_REQUIRE_GATEWAY=1 but the LiteLLM proxy cannot run: {why}")
        pytest.skip(f"LiteLLM proxy: {why}")
    with LiteLLMProxy(tmp_path_factory.mktemp("litellm"), extra_models=EQA_MODELS) as p:
        yield p


def vlm_overrides(proxy, model: str, *extra: str, tours: int = 1) -> list[str]:
    return [
        "experiment=eqa",
        f"experiment.eqa.tours={tours}",
        "experiment.eqa.answerers=[vlm]",
        f"agent.vlm.base_url={proxy.url}",
        f"agent.vlm.model={model}",
        f"agent.vlm.api_key_env={GATEWAY_KEY_ENV}",
        "agent.vlm.max_retries=1",
        "agent.vlm.backoff_base_s=0.01",
        "logger.progress=false",
        *extra,
    ]


def test_vlm_answerer_through_a_litellm_proxy_counts_format_errors(proxy, tmp_path: Path, monkeypatch) -> None:
    """Retrieved frames + the question in one request through a real gateway; replies outside the
    choices and unreadable replies are counted, not scored as answers; the cache answers a rerun."""
    from tests.agents.litellm_proxy import MASTER_KEY

    monkeypatch.setenv(GATEWAY_KEY_ENV, MASTER_KEY)
    cache = tmp_path / "cache"
    records = run(compose_job(vlm_overrides(proxy, "eqa-yes", f"agent.vlm.cache_dir={cache}")), tmp_path / "a")
    types = Counter(r.type for r in records)
    assert set(r.answerer for r in records) == {"vlm"} and len(records) >= 5
    assert sum(r.format_error for r in records) == types["where"]  # {"answer": "yes"} has no x, y
    yes_no = [r for r in records if r.type == "existence"]
    assert all(r.valid and r.answer == "yes" for r in yes_no)
    other = [r for r in records if r.type in ("count", "order", "relation")]
    assert other and not any(r.valid or r.correct for r in other)  # "yes" is not one of their choices
    report = (tmp_path / "a" / "eqa.md").read_text()
    assert f"format_errors {types['where']}, requests {len(records)}," in report
    assert f"vlm: {len(records) - len(yes_no)} answers outside the choices or unreadable" in report
    again = run(compose_job(vlm_overrides(proxy, "eqa-yes", f"agent.vlm.cache_dir={cache}")), tmp_path / "b")
    assert again == records
    assert f"cache_hits {len(records)}" in (tmp_path / "b" / "eqa.md").read_text()
    junk = run(compose_job(vlm_overrides(proxy, "eqa-junk", "agent.vlm.cache_dir=null")), tmp_path / "c")
    assert all(r.format_error and not r.valid and not r.correct for r in junk)
    assert f"format_errors {len(junk)}, requests {len(junk)}," in (tmp_path / "c" / "eqa.md").read_text()
    # a server that fails (HTTP 500): the client retries (max_retries=1), each question counts as failed
    broken = run(compose_job(vlm_overrides(proxy, "broken", "agent.vlm.cache_dir=null")), tmp_path / "d")
    assert all(not r.valid and not r.correct for r in broken)
    n = len(broken)
    assert f"failed_requests {n}, requests {n}, retries {n}" in (tmp_path / "d" / "eqa.md").read_text()


def test_vlm_request_holds_the_retrieved_frames_and_the_schema(dev, embedder) -> None:
    """One request per question: frames (images with their step, cell and heading) and the question
    with its choices; the schema allows exactly the choices."""
    from embodmem.agents.vlm.backend import CallableBackend
    from embodmem.agents.vlm.config import VLMConfig
    from embodmem.eqa.vlm import VLMAnswerer, answer_schema, read_reply

    seen = []

    def model(messages):
        seen.append(messages)
        return '{"answer": "no"}'

    qs = small_set(dev, 1)
    answerer = VLMAnswerer(embedder, CallableBackend(model), VLMConfig(), frames=4)
    answer_question_set(qs, [answerer])
    assert len(seen) == len(qs.questions)
    parts = seen[0][1]["content"]
    assert sum(p["type"] == "image_url" for p in parts) >= 1
    assert parts[0]["text"].startswith("Frame at step ")
    assert qs.questions[0].text in parts[-1]["text"]
    q = next(q for q in qs.questions if q.type == QuestionType.order)
    assert answer_schema(q)["properties"]["answer"]["enum"] == list(q.choices)
    assert read_reply("not json", q).format_error and read_reply('{"answer": 3}', q).choice == "3"


# ----------------------------------------------------------------------------- attribute questions


@pytest.fixture(scope="module")
def variants_embedder():
    return build_embedder(compose_job(["embedder.pretrained=variants"]))


@pytest.fixture(scope="module")
def attr_dev():
    return load_questions(question_file("attr_dev"))


def test_attribute_truth_only_for_seen_instances(embedder) -> None:
    """In a world with variants, the tour records the variant of every instance that entered the
    camera (and of no other); an attribute question is asked only of a kind with exactly one seen
    instance, its answer that instance's variant. A category world gets no attribute question."""
    from embodmem.eqa.tour import make_env

    env_config = EnvConfig(instance_goals=True)
    tour, truth = walk_tour(env_config, 1003, 0, 120, embedder)
    world = make_env(env_config, 1003)
    world.reset(seed=0)
    assert world.world is not None and world.world.has_variants
    assert set(truth.variants) == set(truth.seen) and truth.seen
    for (kind, inst), value in truth.variants.items():
        assert value == world.world.variant_of(kind, inst).phrase
    unseen = [(k, i) for k in TARGET_KINDS for i in range(3) if (k, i) not in truth.seen]
    assert unseen, "a 120-step tour should leave some instance unseen"
    items = generate(tour, truth, random.Random(0))
    attribute = [(q, t) for q, t in items if q.type == QuestionType.attribute]
    assert attribute
    for q, t in attribute:
        (seen,) = [s for s in truth.seen.values() if s.kind == q.kinds[0]]  # exactly one instance seen
        assert seen.frames >= 2
        assert t.answer == truth.variants[(seen.kind, seen.instance)] and t.answer in q.choices
        assert q.choices == attribute_choices(q.kinds[0]) and len(q.choices) == 3
    _, plain = walk_tour(EnvConfig(), 1003, 0, 60, embedder)
    assert not plain.variants
    assert not [q for q, _ in generate(tour, plain, random.Random(0)) if q.type == QuestionType.attribute]


def test_attribute_files_are_balanced_and_checked(attr_dev, tmp_path: Path) -> None:
    """Per kind, every variant is the answer equally often (a blind guess is at 1/3); the files hold
    attribute questions only, in worlds with variants; a changed body or an answer outside the
    choices is refused."""
    by_kind: dict[str, Counter[str]] = {}
    for q in attr_dev.questions:
        assert q.type == QuestionType.attribute
        by_kind.setdefault(q.kinds[0], Counter())[attr_dev.truths[q.id].answer] += 1
    assert len(by_kind) >= 4
    for kind, counts in by_kind.items():
        assert set(counts) == set(attribute_choices(kind)) and len(set(counts.values())) == 1, (kind, counts)
    test = load_questions(question_file("attr_test"))
    assert attr_dev.env.instance_goals and test.env.instance_goals and test.split == "test"
    assert len(test.tours) >= 100 and {q.type for q in test.questions} == {QuestionType.attribute}
    path = question_file("attr_dev")
    lines = path.read_text().splitlines()
    changed = tmp_path / "changed.jsonl"
    body = [line.replace("the red oil drums", "the toppled oil drums") for line in lines[1:]]
    assert body != lines[1:]
    changed.write_text("\n".join([lines[0], *body]) + "\n")
    with pytest.raises(QuestionFileError, match=r"sha256 of the body"):
        load_questions(changed)
    qs = small_set(attr_dev, 40)
    q = qs.questions[0]
    qs.truths[q.id] = Truth("the purple oil drums")
    with pytest.raises(QuestionFileError, match=r"answer 'the purple oil drums' is not one of the choices"):
        load_questions(save_questions(qs, tmp_path / "bad.jsonl"))


def test_attribute_answerers_on_dev_tours(attr_dev, variants_embedder) -> None:
    """Oracle perfect; frame memory and keep-everything read the variant from their frames, far above
    the blind answerer and the text log (which logs kinds only and answers like a guess)."""
    qs = small_set(attr_dev, 20)
    assert len(qs.questions) >= 20
    names = ["blind", "textlog", "frame_memory", "keep_everything", "oracle"]
    ctx = AnswererContext(variants_embedder, attr_dev, qs.truths)
    result = answer_question_set(qs, [build_answerer(n, ctx) for n in names])
    acc = Counter(r.answerer for r in result.records if r.correct)
    n = len(qs.questions)
    assert acc["oracle"] == n
    assert acc["frame_memory"] >= 0.8 * n and acc["keep_everything"] >= 0.8 * n
    assert acc["frame_memory"] > acc["blind"] + 0.3 * n
    assert acc["frame_memory"] > acc["textlog"] + 0.3 * n
    assert all(r.valid for r in result.records)


def test_vlm_answerer_on_attribute_questions_through_a_litellm_proxy(
    proxy, attr_dev, tmp_path: Path, monkeypatch
) -> None:
    """Attribute questions (worlds with variants, the shipped attr_dev file) through the real gateway:
    a reply naming a variant of the kind asked is scored; one naming another kind's variant is
    counted as outside the choices (not a format error); unreadable replies are format errors."""
    from tests.agents.litellm_proxy import MASTER_KEY

    monkeypatch.setenv(GATEWAY_KEY_ENV, MASTER_KEY)
    attr = ["experiment.eqa.questions=attr_dev", "experiment.eqa.prior=attr_dev", "agent.vlm.cache_dir=null"]
    records = run(compose_job(vlm_overrides(proxy, "eqa-drums", *attr, tours=2)), tmp_path / "a")
    assert records and {r.type for r in records} == {"attribute"} and {r.answerer for r in records} == {"vlm"}
    kind = {q.id: q.kinds[0] for q in attr_dev.questions}
    drums = [r for r in records if kind[r.question] == "barrel"]
    other = [r for r in records if kind[r.question] != "barrel"]
    assert drums and other  # attr_dev's first two tours ask about oil drums and about other kinds
    assert all(r.valid and r.answer == YELLOW_BAND_DRUMS and not r.format_error for r in drums)
    assert [r.correct for r in drums] == [attr_dev.truths[r.question].answer == YELLOW_BAND_DRUMS for r in drums]
    assert not any(r.valid or r.correct or r.format_error for r in other)
    report = (tmp_path / "a" / "eqa.md").read_text()
    assert "| vlm |" in report and "attribute" in report
    assert f"format_errors 0, requests {len(records)}," in report
    assert f"vlm: {len(other)} answers outside the choices or unreadable" in report
    junk = run(compose_job(vlm_overrides(proxy, "eqa-junk", *attr, tours=2)), tmp_path / "b")
    assert len(junk) == len(records)
    assert all(r.format_error and not r.valid and not r.correct for r in junk)
    assert f"format_errors {len(junk)}, requests {len(junk)}," in (tmp_path / "b" / "eqa.md").read_text()


def test_vlm_request_for_an_attribute_question_holds_frames_of_the_kind(attr_dev, variants_embedder) -> None:
    """The request for an attribute question carries the frames retrieved for its kind and the
    kind's three variants as the schema's only allowed answers."""
    from embodmem.agents.vlm.backend import CallableBackend
    from embodmem.agents.vlm.config import VLMConfig
    from embodmem.eqa.vlm import VLMAnswerer, answer_schema

    seen = []

    def model(messages):
        seen.append(messages)
        return json.dumps({"answer": YELLOW_BAND_DRUMS})

    qs = small_set(attr_dev, 2)
    answerer = VLMAnswerer(variants_embedder, CallableBackend(model), VLMConfig(), frames=4)
    result = answer_question_set(qs, [answerer])
    assert len(seen) == len(qs.questions) == len(result.records)
    for q, messages in zip(qs.questions, seen):
        parts = messages[1]["content"]
        assert sum(p["type"] == "image_url" for p in parts) >= 1
        assert q.text in parts[-1]["text"] and all(c in parts[-1]["text"] for c in q.choices)
        assert answer_schema(q)["properties"]["answer"]["enum"] == list(attribute_choices(q.kinds[0]))
    assert result.invalid.get("vlm", 0) == sum(q.kinds != ("barrel",) for q in qs.questions)
