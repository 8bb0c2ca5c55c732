"""Answerers: one interface (watch a tour, then answer), and the baselines the benchmark compares.

An answerer sees the tour only as observations (camera, sonar, pose), step by step, and keeps what its
memory keeps; then it is asked questions (:class:`~embodmem.eqa.questions.Question`, no answer in
them). A user's own memory is one subclass of :class:`Answerer` registered in :data:`ANSWERERS`.

- ``blind``: the question only: per type, the answer most common in the dev questions (a prior).
- ``textlog``: the reference benchmark's memory: a text log of recognitions (step, pose, heading,
  kind, confidence), no image, no map; where a thing was is guessed from the pose it was seen from.
  It logs kinds, not looks: an attribute question (which variant was it?) gets a guess.
- ``frame_memory``: the project's frame memory (CLIP frames in :class:`~embodmem.memory.AgentMemory`)
  plus the sonar occupancy map; a question retrieves the frames of the kinds it names, and what they
  looked at is found on the map. An attribute question reads the variant from those frames (:class:`VariantReader`).
- ``keep_everything``: every frame's vector and pose, unmerged, no retrieval; the same map reading.
- ``vlm``: frames retrieved from the frame memory and the question in one request
  (:mod:`embodmem.eqa.vlm`).
- ``oracle``: the ground truth (the only privileged one: it tops the table).
"""

from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, cast, runtime_checkable

import numpy as np

from embodmem.agents.base import Observation, RecognitionEmbedder
from embodmem.agents.mapping import OccupancyGrid
from embodmem.agents.recognizer import KIND_PROMPT_NAMES, KindLabeller
from embodmem.agents.textlog_agent import LogEntry
from embodmem.envs.objects import TARGET_KINDS
from embodmem.envs.spec import DIR_TO_VEC, SensorSpec
from embodmem.eqa.config import ANSWERER_METHODS, EQA_ANSWERERS, resolve_answerer
from embodmem.eqa.files import POINT_TYPES, Question, QuestionSet, QuestionType, Truth
from embodmem.eqa.questions import phrase
from embodmem.memory import AgentMemory, FrameMeta, Hit, MemoryConfig
from embodmem.memory.protocol import Memory
from embodmem.plugins import PluginError

log = logging.getLogger("embodmem.eqa")

DETECT_PROBABILITY = 0.5
"""A frame counts as a sighting of the kind its labeller ranks first when that probability is at
least this (the memory agent's ``detect_probability``)."""
MIN_SIGHTINGS = 2
"""Sightings of a kind needed to say it was seen (one frame may be a misrecognition)."""
PLACE_VOTES = 1.2
"""Summed sighting probability (times frames) a place needs to count as an instance of a kind."""
LOOK_DISTANCE_CELLS = 2.5
"""How far ahead a recognised thing mostly is (the text log's whole guess; the map snaps it)."""
SNAP_CELLS = 2.0
"""A sighting points at a mapped cell at most this far from its look point."""
LOG_CLUSTER_CELLS = 5.0
"""Sightings of a kind placed closer than this are one thing (counting)."""
RETRIEVE_K = 48
"""Frames the frame memory retrieves per kind a question names."""
COUNT_REACH_CELLS = 5.0
"""Counting on the map: a sighting's thing is among the mapped echoes its view rays first hit
within this many cells (a target far off fills too little of the frame to be recognised)."""
INSTANCE_RADIUS_CELLS = 3.0
"""Counting on the map: one instance explains every sighting with an echo this close to it (the
largest kinds span about four cells, so one wreck seen from two sides is still one)."""
COUNT_VOTES = 0.9
"""Counting on the map: summed confidence (times frames) of sightings no counted instance explains
that a further instance needs: one sure record is enough, a stray unsure one is not."""


@dataclass(frozen=True)
class Answer:
    """A reply: a choice, or a point (x, y in cells) for "where"; ``format_error`` when the reply
    could not be read at all."""

    choice: str = ""
    point: tuple[float, float] | None = None
    format_error: bool = False


class Answerer(ABC):
    """Watches one tour through observations, then answers questions about it."""

    name: str = "answerer"

    @abstractmethod
    def start_tour(self, tour: str, spec: SensorSpec) -> None:
        """A new tour begins: forget the previous one."""

    @abstractmethod
    def observe(self, observation: Observation, step: int) -> None:
        """One step of the tour (``step`` 0 is the start)."""

    @abstractmethod
    def answer(self, question: Question) -> Answer:
        """The answer to ``question`` from what was kept."""

    def stats(self) -> dict[str, float]:
        """Counters for the record (e.g. requests, format errors)."""
        return {}


@runtime_checkable
class AnswererProtocol(Protocol):
    """The answerer protocol: every call the EQA run makes on an answerer (:class:`Answerer` is the
    stock base). A plug-in class or factory is called with the embedder; its records carry its name.

    Example:
        >>> isinstance(OracleAnswerer({}), AnswererProtocol), isinstance(object(), AnswererProtocol)
        (True, False)
    """

    name: str

    def start_tour(self, tour: str, spec: SensorSpec) -> None:
        """A new tour begins: forget the previous one."""
        ...

    def observe(self, observation: Observation, step: int) -> None:
        """One step of the tour."""
        ...

    def answer(self, question: Question) -> Answer:
        """The answer from what was kept."""
        ...

    def stats(self) -> dict[str, float]:
        """Counters for the record."""
        ...


# ----------------------------------------------------------------------------- blind and oracle


class BlindAnswerer(Answerer):
    """The question only: per type, the choice that was most often right in a prior question set
    (the dev split's); "where": the middle of the world."""

    name = "blind"

    def __init__(self, prior: QuestionSet):
        self.prior: dict[object, Counter[str]] = defaultdict(Counter)
        for q in prior.questions:
            self.prior[self.prior_key(q)][prior.truths[q.id].answer] += 1
        self.centre = (prior.env.size / 2.0, prior.env.size / 2.0)

    @staticmethod
    def prior_key(question: Question) -> object:
        """What of the question the prior is kept per: its type."""
        return question.type

    def start_tour(self, tour: str, spec: SensorSpec) -> None:
        """Keeps nothing between tours."""

    def observe(self, observation: Observation, step: int) -> None:
        """Sees nothing."""

    def answer(self, question: Question) -> Answer:
        if not question.choices:
            return Answer(point=self.centre)
        counts = self.prior[self.prior_key(question)]
        return Answer(choice=max(question.choices, key=lambda c: (counts[c], -question.choices.index(c))))


class OracleAnswerer(Answerer):
    """Reads the ground truth (privileged): the upper bound of the table and a check of the scorer."""

    name = "oracle"

    def __init__(self, truths: dict[str, Truth]):
        self.truths = truths

    def start_tour(self, tour: str, spec: SensorSpec) -> None:
        """Keeps nothing between tours."""

    def observe(self, observation: Observation, step: int) -> None:
        """Needs nothing."""

    def answer(self, question: Question) -> Answer:
        t = self.truths[question.id]
        if question.type.value in POINT_TYPES:
            cx, cy = np.mean(np.asarray(t.cells, dtype=float), axis=0)
            return Answer(point=(float(cx), float(cy)))
        return Answer(choice=t.answer)


# ----------------------------------------------------------------------------- sightings


@dataclass(frozen=True)
class Sighting:
    """A remembered frame that shows a target kind: when, from where, how sure."""

    step: int
    pose: tuple[int, int, int]
    kind: str
    probability: float
    frames: int = 1
    """Camera frames behind it (a memory record may merge several adjacent ones)."""
    span: int = 0
    """Steps between the first and the last of those frames: the robot may have moved this many
    cells since the first, so where the record was seen is that much less certain."""


def sightings_of(
    labeller: KindLabeller,
    vectors: np.ndarray,
    steps: list[int],
    poses: list[tuple[int, int, int]],
    frames: list[int] | None = None,
    spans: list[int] | None = None,
) -> list[Sighting]:
    """The frames whose most likely label (over targets and negatives) is a target kind, at least
    ``DETECT_PROBABILITY`` sure."""
    if len(vectors) == 0:
        return []
    probs = labeller.probabilities(vectors)
    best = probs.argmax(axis=1)
    out = []
    for i, (row, b, step, pose) in enumerate(zip(probs, best, steps, poses)):
        kind = KIND_PROMPT_NAMES[int(b)]
        if kind in TARGET_KINDS and row[b] >= DETECT_PROBABILITY:
            out.append(
                Sighting(int(step), pose, kind, float(row[b]), frames[i] if frames else 1, spans[i] if spans else 0)
            )
    return out


@dataclass
class PlaceEvidence:
    """Sightings of each kind, and the places they point at (what answers are read from)."""

    by_kind: dict[str, list[Sighting]] = field(default_factory=dict)
    votes: dict[str, dict[int, float]] = field(default_factory=dict)
    """kind -> place -> summed sighting probability (times frames)."""
    places: dict[int, np.ndarray] = field(default_factory=dict)
    """Place -> its points, (n, 2) x, y in cells."""
    counts: dict[str, int] = field(default_factory=dict)
    """Kind -> instances counted on the map (:func:`count_on_map`); kinds absent here are counted as
    their places (:meth:`instances`)."""

    def seen(self, kind: str) -> bool:
        return len(self.by_kind.get(kind, [])) >= MIN_SIGHTINGS

    def instances(self, kind: str) -> list[int]:
        """Places counted as instances of ``kind``: enough votes."""
        out = []
        for place, v in self.votes.get(kind, {}).items():
            if v >= PLACE_VOTES:
                out.append(place)
        return out

    def best(self, kind: str) -> int | None:
        votes = self.votes.get(kind, {})
        return max(votes, key=lambda c: votes[c]) if votes else None

    def first_step(self, kind: str) -> float:
        steps = sorted(s.step for s in self.by_kind.get(kind, []))
        return float(steps[MIN_SIGHTINGS - 1]) if len(steps) >= MIN_SIGHTINGS else math.inf

    def centre(self, place: int) -> tuple[float, float]:
        x, y = self.places[place].mean(axis=0)
        return (float(x), float(y))

    def distance(self, a: int, b: int) -> float:
        """Smallest distance in cells between two places' cells."""
        pa, pb = self.places[a], self.places[b]
        return float(np.min(np.hypot(pa[:, None, 0] - pb[None, :, 0], pa[:, None, 1] - pb[None, :, 1])))


def answer_from_evidence(ev: PlaceEvidence, question: Question) -> Answer:
    """The answer the evidence supports (shared by every answerer with places to read)."""
    kind = question.kinds[0]
    if question.type == QuestionType.existence:
        return Answer(choice="yes" if ev.seen(kind) else "no")
    if question.type == QuestionType.count:
        n = max(1, ev.counts[kind] if kind in ev.counts else len(ev.instances(kind)))
        return Answer(choice=str(min(n, len(question.choices))))
    if question.type == QuestionType.order:
        return Answer(choice=min(question.choices, key=lambda k: (ev.first_step(k), question.choices.index(k))))
    if question.type == QuestionType.relation:
        anchor = ev.best(kind)
        if anchor is None:
            return Answer(choice=question.choices[0])

        def gap(k: str) -> float:
            places = ev.instances(k) or ([b] if (b := ev.best(k)) is not None else [])
            return min((ev.distance(anchor, p) for p in places if p != anchor), default=math.inf)

        return Answer(choice=min(question.choices, key=lambda k: (gap(k), question.choices.index(k))))
    if question.type == QuestionType.where:
        place = ev.best(kind)
        return Answer(point=ev.centre(place) if place is not None else None)
    # attribute: places and kind labels do not tell variants apart; the first choice (blind's guess)
    return Answer(choice=question.choices[0] if question.choices else "")


# ----------------------------------------------------------------------------- attributes


def kind_frames(labeller: KindLabeller, vectors: np.ndarray, kind: str) -> np.ndarray:
    """The rows of ``vectors`` whose most likely label is ``kind``, at least ``DETECT_PROBABILITY`` sure."""
    if len(vectors) == 0:
        return vectors
    probs = labeller.probabilities(vectors)
    best = probs.argmax(axis=1)
    index = KIND_PROMPT_NAMES.index(kind)
    return vectors[(best == index) & (probs[:, index] >= DETECT_PROBABILITY)]


class VariantReader:
    """Which of an attribute question's choices (variants in words) the remembered frames of its kind
    show: zero-shot, each frame's softmax over the choices' prompts (as an image goal is read, see
    ``agents.recognizer.describe_goal_image``), averaged over the frames."""

    def __init__(self, embedder: RecognitionEmbedder):
        self.embedder = embedder
        self._prompts: dict[tuple[str, ...], np.ndarray] = {}

    def read(self, vectors: np.ndarray, choices: tuple[str, ...]) -> Answer:
        """The choice the frames support; with no frame of the kind, the first choice (a guess)."""
        if len(vectors) == 0:
            return Answer(choice=choices[0])
        if choices not in self._prompts:
            self._prompts[choices] = self.embedder.embed_texts([f"a photo of {c} underwater" for c in choices])
        logits = self.embedder.logit_scale * (vectors @ self._prompts[choices].T)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        return Answer(choice=choices[int(np.argmax(p.mean(axis=0)))])


# ----------------------------------------------------------------------------- map-reading answerers


@dataclass(frozen=True)
class Located:
    """Where a sighting puts its thing: a point, x and y in cell indices."""

    x: float
    y: float


def gather(sightings: list[Sighting], locate: Callable[[Sighting], Located]) -> PlaceEvidence:
    """Group located sightings into places, per kind: a sighting joins the nearest place of its
    kind within ``LOG_CLUSTER_CELLS`` (plus the span of a merged record; those are placed last,
    after the exact ones), else starts one. A place is its sightings' probability-weighted point."""
    ev = PlaceEvidence()
    points: dict[int, list[float]] = {}  # place -> [sum w*x, sum w*y, sum w]
    kinds: dict[int, str] = {}
    for s in sorted(sightings, key=lambda s: (s.span, s.step)):
        ev.by_kind.setdefault(s.kind, []).append(s)
        at = locate(s)
        near = [
            (math.hypot(p[0] / p[2] - at.x, p[1] / p[2] - at.y), i) for i, p in points.items() if kinds[i] == s.kind
        ]
        close = [n for n in near if n[0] < LOG_CLUSTER_CELLS + s.span]
        if close:
            place = min(close)[1]
        else:
            place = len(kinds) + 1
            kinds[place] = s.kind
            points[place] = [0.0, 0.0, 0.0]
        w = s.probability * s.frames
        p = points[place]
        p[0] += w * at.x
        p[1] += w * at.y
        p[2] += w
        votes = ev.votes.setdefault(s.kind, {})
        votes[place] = votes.get(place, 0.0) + w
    ev.places = {place: np.array([[sx / w, sy / w]]) for place, (sx, sy, w) in points.items()}
    for kind in ev.by_kind:
        ev.votes.setdefault(kind, {})
    return ev


def look_point(pose: tuple[int, int, int]) -> tuple[float, float]:
    """The point ``LOOK_DISTANCE_CELLS`` straight ahead of ``pose`` (cell centres at +0.5)."""
    dx, dy = DIR_TO_VEC[pose[2]]
    return (pose[0] + 0.5 + dx * LOOK_DISTANCE_CELLS, pose[1] + 0.5 + dy * LOOK_DISTANCE_CELLS)


def count_on_map(candidates: list[np.ndarray], weights: np.ndarray) -> int:
    """The fewest instances that explain the sightings (each a set of candidate cells, (n, 2) x, y):
    greedily, the mapped cell whose ``INSTANCE_RADIUS_CELLS`` neighbourhood explains the most
    unexplained weight, while that weight reaches ``COUNT_VOTES``. Why not clusters of look points:
    a big instance seen from two sides gives look points far apart (counted twice), two near ones
    seen head-on give look points close together (counted once); the view's echoes do neither."""
    if not candidates:
        return 0
    centres = np.unique(np.concatenate(candidates), axis=0)
    explains = np.stack(
        [
            np.min(np.hypot(centres[:, None, 0] - c[None, :, 0], centres[:, None, 1] - c[None, :, 1]), axis=1)
            <= INSTANCE_RADIUS_CELLS
            for c in candidates
        ],
        axis=1,
    )
    left = np.ones(len(candidates), dtype=bool)
    n = 0
    while left.any():
        gain = explains[:, left].astype(float) @ weights[left]
        best = int(np.argmax(gain))
        if gain[best] < COUNT_VOTES:
            break
        n += 1
        left &= ~explains[best]
    return n


class MapReader:
    """The sonar occupancy map built along the tour, and where remembered frames looked on it."""

    def __init__(self) -> None:
        self.grid: OccupancyGrid | None = None
        self.rays = np.zeros(0)

    def start(self, spec: SensorSpec) -> None:
        self.grid = OccupancyGrid(spec)
        half = math.radians(spec.camera_fov_deg) / 2
        self.rays = np.linspace(-half, half, 11)
        self.reach = spec.view_range_m / spec.cell_size_m

    def observe(self, observation: Observation) -> tuple[int, int, int]:
        assert self.grid is not None
        p = observation["pose"]
        pose = (int(round(float(p[0]))), int(round(float(p[1]))), int(p[2]))
        self.grid.update(pose, observation["sonar"])
        return pose

    def candidates(self, s: Sighting) -> np.ndarray:
        """Where the thing a sighting recognised may be: the mapped cells its view rays first hit
        within ``COUNT_REACH_CELLS``, (n, 2) x, y; with none, the look point's cell."""
        hits = self.grid.ray_hits(s.pose, self.rays, self.reach) if self.grid is not None else []
        near = {h for h in hits if math.hypot(h[0] - s.pose[0], h[1] - s.pose[1]) <= COUNT_REACH_CELLS}
        if not near:
            gx, gy = look_point(s.pose)
            near = {(int(gx), int(gy))}
        return np.array(sorted(near), dtype=float)

    def evidence(self, sightings: list[Sighting]) -> PlaceEvidence:
        """Each sighting is placed at the mapped echo nearest its look point: of the cells its view
        rays first hit on the map, the one nearest the point ``LOOK_DISTANCE_CELLS`` straight ahead,
        if within ``SNAP_CELLS`` (the map corrects the range); else at the look point itself, as the
        text log would. Instances are counted from the sightings' candidate cells (:func:`count_on_map`)."""

        def locate(s: Sighting) -> Located:
            gx, gy = look_point(s.pose)
            hits = self.grid.ray_hits(s.pose, self.rays, self.reach) if self.grid is not None else []
            if hits:
                cell = min(hits, key=lambda c: (c[0] + 0.5 - gx) ** 2 + (c[1] + 0.5 - gy) ** 2)
                if math.hypot(cell[0] + 0.5 - gx, cell[1] + 0.5 - gy) <= SNAP_CELLS:
                    return Located(float(cell[0]), float(cell[1]))
            return Located(gx - 0.5, gy - 0.5)

        ev = gather(sightings, locate)
        for kind, seen in ev.by_kind.items():
            weights = np.array([s.probability * s.frames for s in seen])
            ev.counts[kind] = count_on_map([self.candidates(s) for s in seen], weights)
        return ev


class FrameMemoryAnswerer(Answerer):
    """The project's frame memory plus the map: a question retrieves the frames of the kinds it
    names (by their text), the labeller re-reads them, and the map says what they looked at."""

    name = "frame_memory"

    def __init__(
        self,
        embedder: RecognitionEmbedder,
        memory_config: MemoryConfig | None = None,
        k: int = RETRIEVE_K,
        memory_class: Callable[[MemoryConfig], Memory] = AgentMemory,
    ):
        self.embedder = embedder
        self.labeller = KindLabeller(embedder)
        self.memory_config = memory_config or MemoryConfig(dim=embedder.dim)
        self.k = k
        self.map = MapReader()
        self.memory_class = memory_class
        """The memory kept per tour: the stock one, or a plug-in memory (``experiment.eqa.answerers=[my_pkg.mem:MyMemory]``)."""
        self.memory = memory_class(self.memory_config)
        self.tour = ""
        self._text: dict[str, np.ndarray] = {}
        self.variants = VariantReader(embedder)

    def start_tour(self, tour: str, spec: SensorSpec) -> None:
        self.tour = tour
        self.map.start(spec)
        self.memory = self.memory_class(self.memory_config)

    def observe(self, observation: Observation, step: int) -> None:
        x, y, h = self.map.observe(observation)
        vector = self.embedder.embed_images(observation["image"][None])[0]
        keep = self.memory_config.keep_thumbnails
        meta = FrameMeta(
            self.tour, "tour", 0, step, float(x), float(y), h, thumbnail=observation["image"] if keep else None
        )
        self.memory.observe(vector, meta)

    def text_vector(self, kind: str) -> np.ndarray:
        if kind not in self._text:
            self._text[kind] = self.embedder.embed_texts([phrase(kind)])[0]
        return self._text[kind]

    def recall(self, kinds: tuple[str, ...]) -> list[Sighting]:
        """Sightings among the frames retrieved for each of ``kinds`` (and, for relations, for every
        target kind: the answer may be any of them)."""
        hits = {}
        for kind in kinds:
            for h in cast(list[Hit], self.memory.query(self.text_vector(kind), self.k, count_hits=False)):
                hits[h.id] = h
        found = list(hits.values())
        vectors = self.memory.hit_vectors(found)
        return sightings_of(
            self.labeller,
            vectors,
            [int(h.meta.step_min if h.meta.step_min is not None else h.meta.step) for h in found],
            [(int(h.meta.x), int(h.meta.y), int(h.meta.heading)) for h in found],
            [int(h.meta.count) for h in found],
            [int(h.meta.step_max or h.meta.step) - int(h.meta.step_min or h.meta.step) for h in found],
        )

    def kinds_to_recall(self, question: Question) -> tuple[str, ...]:
        if question.type == QuestionType.relation:
            return (*question.kinds, *question.choices)
        return question.kinds

    def answer(self, question: Question) -> Answer:
        if question.type == QuestionType.attribute:
            kind = question.kinds[0]
            found = cast(list[Hit], self.memory.query(self.text_vector(kind), self.k, count_hits=False))
            frames = kind_frames(self.labeller, self.memory.hit_vectors(found), kind)
            return self.variants.read(frames, question.choices)
        return answer_from_evidence(self.map.evidence(self.recall(self.kinds_to_recall(question))), question)

    def stats(self) -> dict[str, float]:
        """What the tour's memory holds (the designs table's frames and bytes kept)."""
        held = self.memory.stats()
        return {"frames_kept": float(held["frames_kept"]), "bytes_kept": float(held["code_bytes"])}


class KeepEverythingAnswerer(Answerer):
    """Every frame's vector and pose, unmerged and unretrieved, read with the same map."""

    name = "keep_everything"

    def __init__(self, embedder: RecognitionEmbedder):
        self.embedder = embedder
        self.labeller = KindLabeller(embedder)
        self.map = MapReader()
        self.vectors: list[np.ndarray] = []
        self.poses: list[tuple[int, int, int]] = []
        self.steps: list[int] = []
        self._evidence: PlaceEvidence | None = None
        self.variants = VariantReader(embedder)

    def start_tour(self, tour: str, spec: SensorSpec) -> None:
        self.map.start(spec)
        self.vectors, self.poses, self.steps = [], [], []
        self._evidence = None

    def observe(self, observation: Observation, step: int) -> None:
        self.poses.append(self.map.observe(observation))
        self.vectors.append(self.embedder.embed_images(observation["image"][None])[0])
        self.steps.append(step)
        self._evidence = None

    def answer(self, question: Question) -> Answer:
        if question.type == QuestionType.attribute:
            vectors = np.stack(self.vectors) if self.vectors else np.zeros((0, 1), np.float32)
            return self.variants.read(kind_frames(self.labeller, vectors, question.kinds[0]), question.choices)
        if self._evidence is None:
            vectors = np.stack(self.vectors) if self.vectors else np.zeros((0, 1), np.float32)
            self._evidence = self.map.evidence(sightings_of(self.labeller, vectors, self.steps, self.poses))
        return answer_from_evidence(self._evidence, question)

    def stats(self) -> dict[str, float]:
        """Every frame's vector is kept (the designs table's frames and bytes kept)."""
        return {"frames_kept": float(len(self.vectors)), "bytes_kept": float(sum(v.nbytes for v in self.vectors))}


class TextLogAnswerer(Answerer):
    """The reference benchmark's text log (:class:`~embodmem.agents.textlog_agent.LogEntry` lines):
    no image, no map. A logged thing is guessed to lie ``LOOK_DISTANCE_CELLS`` ahead of the pose it
    was seen from; guesses closer than ``LOG_CLUSTER_CELLS`` are one thing."""

    name = "textlog"

    def __init__(self, embedder: RecognitionEmbedder):
        self.embedder = embedder
        self.labeller = KindLabeller(embedder)
        self.log: list[LogEntry] = []

    def start_tour(self, tour: str, spec: SensorSpec) -> None:
        self.log = []
        self.tour = tour

    def observe(self, observation: Observation, step: int) -> None:
        p = observation["pose"]
        pose = (int(round(float(p[0]))), int(round(float(p[1]))), int(p[2]))
        vector = self.embedder.embed_images(observation["image"][None])
        for s in sightings_of(self.labeller, vector, [step], [pose]):
            self.log.append(LogEntry(self.tour, s.step, pose[0], pose[1], pose[2], s.kind, round(s.probability, 3)))

    def evidence(self) -> PlaceEvidence:
        sightings = [Sighting(e.step, (e.x, e.y, e.heading), e.kind, e.confidence) for e in self.log]
        return gather(sightings, lambda s: Located(look_point(s.pose)[0] - 0.5, look_point(s.pose)[1] - 0.5))

    def answer(self, question: Question) -> Answer:
        return answer_from_evidence(self.evidence(), question)

    def stats(self) -> dict[str, float]:
        """The log's size as its lines' text (the designs table's bytes kept; it keeps no frames)."""
        lines = (f"step {e.step} at ({e.x}, {e.y}) facing {e.heading}: {e.kind} ({e.confidence})" for e in self.log)
        return {"bytes_kept": float(sum(len(line.encode()) for line in lines))}


# ----------------------------------------------------------------------------- registry


@dataclass
class AnswererContext:
    """What answerers may be built from: the embedder, the prior (dev) questions for the blind one,
    the ground truth for the oracle, and a factory for the VLM answerer (it needs a server)."""

    embedder: RecognitionEmbedder
    prior: QuestionSet
    truths: dict[str, Truth]
    vlm: Callable[[RecognitionEmbedder], Answerer] | None = None


ANSWERERS: dict[str, Callable[[AnswererContext], Answerer]] = {
    "blind": lambda c: BlindAnswerer(c.prior),
    "textlog": lambda c: TextLogAnswerer(c.embedder),
    "frame_memory": lambda c: FrameMemoryAnswerer(c.embedder),
    "keep_everything": lambda c: KeepEverythingAnswerer(c.embedder),
    "oracle": lambda c: OracleAnswerer(c.truths),
}
ANSWERER_NAMES: tuple[str, ...] = EQA_ANSWERERS
"""The names the config accepts (``experiment.eqa.answerers``): every one above, and ``vlm``."""
assert set(ANSWERER_NAMES) == {*ANSWERERS, "vlm"}, "embodmem.config.EQA_ANSWERERS and ANSWERERS disagree"


def check_answerers(names: list[str]) -> None:
    """Refuse an unknown answerer name or a bad plug-in before any work (one line)."""
    for name in names:
        if name not in ANSWERER_NAMES:
            resolve_answerer(name)


def build_answerer(name: str, context: AnswererContext) -> Answerer:
    """The answerer ``name``: a stock one, or a plug-in (:func:`~embodmem.eqa.config.resolve_answerer`)
    built with the embedder, checked against the protocol and named after the plug-in."""
    if name not in ANSWERER_NAMES:
        kind, target = resolve_answerer(name)
        made: object
        if kind == "memory":
            made = FrameMemoryAnswerer(context.embedder, memory_class=cast(Callable[[MemoryConfig], Memory], target))
        else:
            made = cast(Callable[[RecognitionEmbedder], object], target)(context.embedder)
        missing = [m for m in ANSWERER_METHODS if not callable(getattr(made, m, None))]
        if missing:
            raise PluginError(
                f"experiment.eqa.answerers: {name!r} built a {type(made).__name__}, not an answerer: it lacks "
                f"{', '.join(missing)} (embodmem.api.AnswererProtocol)"
            )
        answerer = cast(Answerer, made)
        answerer.name = name
        return answerer
    if name == "vlm":
        if context.vlm is None:
            raise ValueError("answerer 'vlm' needs a VLM endpoint (agent.vlm.base_url and agent.vlm.model)")
        return context.vlm(context.embedder)
    return ANSWERERS[name](context)
