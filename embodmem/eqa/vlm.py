"""The VLM answerer: frames retrieved from the frame memory and the question, in one request.

It is the frame-memory answerer whose memory also keeps thumbnails; for a question it retrieves the
``frames`` frames that best match the kinds the question names, and sends them, each captioned with
its step, cell and heading, with the question and its choices, to any OpenAI-compatible server
through the project's client (:class:`~embodmem.agents.vlm.client.ChatClient`: counted retries,
structured-output fallback) and disk cache (:func:`~embodmem.agents.vlm.cache.cached_complete`). The
reply must be one JSON object following the schema (``{"answer": <one of the choices>}``, or
``{"x": .., "y": ..}`` for "where"); a reply that is not is a format error, counted, and scored wrong.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import cast

from openai.types.chat import ChatCompletionContentPartParam

from embodmem.agents.base import RecognitionEmbedder
from embodmem.agents.vlm.backend import ChatBackend, Messages, PropertySchema, ReplySchema
from embodmem.agents.vlm.cache import ResponseCache, cached_complete
from embodmem.agents.vlm.config import VLMConfig
from embodmem.agents.vlm.errors import VLMError
from embodmem.agents.vlm.images import encode_image, image_part
from embodmem.eqa.answerers import Answer, FrameMemoryAnswerer
from embodmem.eqa.files import Question, QuestionType
from embodmem.memory import Hit, MemoryConfig

log = logging.getLogger("embodmem.eqa")

HEADINGS = ("east", "south", "west", "north")
SYSTEM_PROMPT = (
    "You are the memory of an underwater survey robot. You are shown frames the robot's camera "
    "recorded on a tour of a seabed (x grows east, y grows south, in cells) and asked about what it "
    "saw. Reply with one JSON object only, following the schema."
)


def answer_schema(question: Question) -> ReplySchema:
    if question.type == QuestionType.where:
        props: dict[str, PropertySchema] = {"x": {"type": "number"}, "y": {"type": "number"}}
    else:
        props = {"answer": {"type": "string", "enum": list(question.choices)}}
    return {"type": "object", "properties": props, "required": sorted(props), "additionalProperties": False}


def read_reply(text: str, question: Question) -> Answer:
    """The answer in a reply; ``format_error`` when it is not one JSON object with the schema's
    fields (an answer outside the choices is kept as given: the scorer counts it)."""
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return Answer(format_error=True)
    if not isinstance(obj, dict):
        return Answer(format_error=True)
    if question.type == QuestionType.where:
        try:
            return Answer(point=(float(obj["x"]), float(obj["y"])))
        except (KeyError, TypeError, ValueError):
            return Answer(format_error=True)
    value = obj.get("answer")
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return Answer(format_error=True)
    return Answer(choice=str(value))


class VLMAnswerer(FrameMemoryAnswerer):
    """Retrieved frames + the question, one request per question."""

    name = "vlm"

    def __init__(self, embedder: RecognitionEmbedder, backend: ChatBackend, config: VLMConfig, frames: int = 6):
        memory = MemoryConfig(dim=embedder.dim, keep_thumbnails=True, thumbnail_size=64)
        super().__init__(embedder, memory)
        self.backend = backend
        self.config = config
        self.frames = frames
        self.cache = ResponseCache(config.cache_dir) if config.cache_dir else None
        self.counts: Counter[str] = Counter()

    def messages(self, question: Question) -> Messages:
        per_kind = max(1, self.frames // max(1, len(question.kinds)))
        hits = {}
        for kind in question.kinds:
            for h in cast(list[Hit], self.memory.query(self.text_vector(kind), per_kind, count_hits=False)):
                hits[h.id] = h
        content: list[ChatCompletionContentPartParam] = []
        for h in sorted(hits.values(), key=lambda h: h.meta.step):
            m = h.meta
            content.append(
                {
                    "type": "text",
                    "text": f"Frame at step {m.step}, cell ({m.x:.0f}, {m.y:.0f}), facing {HEADINGS[m.heading]}:",
                }
            )
            if m.thumbnail is not None:
                url = encode_image(
                    m.thumbnail, self.config.image_format, quality=self.config.jpeg_quality, size=self.config.image_size
                )
                content.append(image_part(url, self.config.image_detail))
        ask = question.text
        if question.choices:
            ask += " Choices: " + ", ".join(question.choices) + '. Reply {"answer": "<choice>"}.'
        else:
            ask += ' Reply {"x": <cell x>, "y": <cell y>}.'
        content.append({"type": "text", "text": ask})
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]

    def answer(self, question: Question) -> Answer:
        self.counts["requests"] += 1
        try:
            completion = cached_complete(self.backend, self.cache, self.messages(question), answer_schema(question))
        except VLMError as err:
            self.counts["failed_requests"] += 1
            if self.counts["failed_requests"] == 1:  # the rest are counted in the report
                log.warning("vlm answerer: question %s got no reply (counted, scored wrong): %s", question.id, err)
            return Answer(format_error=True)
        self.counts["cache_hits"] += int(completion.cached)
        self.counts["retries"] += completion.retries
        reply = read_reply(completion.text, question)
        self.counts["format_errors"] += int(reply.format_error)
        return reply

    def stats(self) -> dict[str, float]:
        """Requests, cache hits, format errors, failed requests; retries as the client counted them
        (failed calls included)."""
        counts = dict(self.counts)
        client_retries = getattr(self.backend, "retries", None)
        if isinstance(client_retries, int):
            counts["retries"] = client_retries
        return {k: float(v) for k, v in sorted(counts.items())}
