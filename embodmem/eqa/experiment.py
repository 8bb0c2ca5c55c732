"""The ``experiment=eqa`` run mode: load a question file, build the answerers, answer, report.

Everything that can be refused is checked before the first tour: the question files (format,
version, checksum), the answerer names and a blind prior taken from the test split by the config
layer (embodmem.config.validate, also run by the preflight check), the VLM endpoint here.
Writes ``eqa.jsonl`` (one record per answer, with its type and answerer) and ``eqa.md`` (the table by
question type, then the memory designs side by side) into the run directory and prints both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from embodmem.agents.base import RecognitionEmbedder
from embodmem.agents.vlm.config import VLMConfig
from embodmem.atomic import atomic_write_jsonl, atomic_write_text
from embodmem.eqa.answerers import Answerer, AnswererContext, build_answerer, check_answerers
from embodmem.eqa.config import EQAConfig
from embodmem.eqa.designs import design_rows, format_design_rows
from embodmem.eqa.files import QuestionSet, load_questions, question_file
from embodmem.eqa.run import EQAResult, answer_question_set
from embodmem.eqa.scoring import EQARecord, format_table, type_scores


def vlm_factory(config: VLMConfig, frames: int) -> Callable[[RecognitionEmbedder], Answerer]:
    """Check the endpoint now (before any work); the VLM answerer's factory over one client."""
    from embodmem.agents.vlm.client import ChatClient
    from embodmem.agents.vlm_agent import check_vlm_endpoint
    from embodmem.eqa.vlm import VLMAnswerer

    check_vlm_endpoint(config)
    client = ChatClient(config)

    def make(embedder: RecognitionEmbedder) -> Answerer:
        return VLMAnswerer(embedder, client, config, frames)

    return make


def prepare(eqa: EQAConfig, vlm_config: VLMConfig, embedder: RecognitionEmbedder) -> tuple[QuestionSet, list[Answerer]]:
    """The question set (cut to ``tours``) and the answerers (the config layer has checked the
    names and the files; the VLM endpoint is checked here, before any tour)."""
    names = list(eqa.answerers)
    check_answerers(names)
    qs = load_questions(question_file(eqa.questions))
    prior = load_questions(question_file(eqa.prior))
    if eqa.tours is not None:
        keep = {t.key for t in qs.tours[: eqa.tours]}
        qs = dataclasses.replace(qs, tours=qs.tours[: eqa.tours], questions=[q for q in qs.questions if q.tour in keep])
    vlm = vlm_factory(vlm_config, eqa.vlm_frames) if "vlm" in names else None
    context = AnswererContext(embedder, prior, qs.truths, vlm)
    return qs, [build_answerer(n, context) for n in names]


def report(qs: QuestionSet, result: EQAResult) -> str:
    scores = type_scores(result.records, {q.id: q for q in qs.questions}, qs.truths, qs.env.size)
    lines = [format_table(scores)]
    for name, stats in result.stats.items():
        counters = {k: v for k, v in stats.items() if k not in ("frames_kept", "bytes_kept")}
        if counters:
            lines.append(f"{name}: " + ", ".join(f"{k} {v:g}" for k, v in counters.items()))
    for name, n in result.invalid.items():
        lines.append(f"{name}: {n} answers outside the choices or unreadable (scored wrong)")
    lines += ["", format_design_rows(design_rows(result.records, result.kept, result.answer_ms))]
    return "\n".join(lines)


def run_eqa(
    eqa: EQAConfig, vlm_config: VLMConfig, out_dir: Path, embedder: RecognitionEmbedder, progress: bool = True
) -> list[EQARecord]:
    """Answer ``eqa.questions`` with ``eqa.answerers`` into ``out_dir`` (or, with
    ``eqa.changing.enabled``, the changing-world questions); the records."""
    if eqa.changing.enabled:
        from embodmem.eqa.changing_run import run_changing

        return run_changing(eqa.changing, list(eqa.answerers), out_dir, embedder, progress=progress)
    qs, answerers = prepare(eqa, vlm_config, embedder)
    bar = tqdm(total=len(qs.tours), desc="tours", unit="tour", disable=not progress)

    def tick() -> None:
        bar.update(1)

    result = answer_question_set(qs, answerers, on_tour=tick)
    bar.close()
    atomic_write_jsonl(out_dir / "eqa.jsonl", [dataclasses.asdict(r) for r in result.records])
    table = report(qs, result)
    atomic_write_text(out_dir / "eqa.md", table + "\n")
    print(f"Question answering from memory: {len(qs.questions)} questions on {len(qs.tours)} tours ({qs.split})")
    print(table)
    print(f"\noutputs: {out_dir}")
    return result.records
