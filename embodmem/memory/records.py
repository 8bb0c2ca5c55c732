"""Frame records: what memory keeps about each frame besides its embedding.

Long-term memory can hold a million frames, so metadata lives in a columnar :class:`MetaTable`
(numpy arrays, strings interned to small integer codes) rather than a list of Python objects.
:class:`FrameMeta` is the per-frame view that agents write and that :class:`Hit` returns.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Sentinel stored in the ``node`` column for frames that have no map node.
NO_NODE = -1


@dataclass(frozen=True)
class QueryFilter:
    """Which records a memory query may return: every field set must match (``None``: any).

    One value travels from :meth:`AgentMemory.query <embodmem.memory.episodic.AgentMemory.query>` to
    the long-term store's search, :meth:`MetaTable.filter_mask` and the short-term FIFO, so the three
    apply the same rules.

    Attributes:
        task: Task name(s) the frame was written under.
        run_id: Run(s) that saw it.
        episode: Episode index(es).
        step_range: ``(lo, hi)``, inclusive: a record whose merged span ``[step_min, step_max]``
            overlaps it.
        near: ``(x, y, r)``: taken at most ``r`` cells from ``(x, y)`` along each axis.
        heading: Taken facing this way (MiniGrid's 0..3).

    Example:
        >>> QueryFilter(task="task1").is_empty(), QueryFilter().is_empty()
        (False, True)
        >>> QueryFilter(step_range=(5, 1))
        Traceback (most recent call last):
        ...
        ValueError: step_range must be (lo, hi) with lo <= hi, got (5, 1)
    """

    task: str | Sequence[str] | None = None
    run_id: str | Sequence[str] | None = None
    episode: int | Sequence[int] | None = None
    step_range: tuple[int, int] | None = None
    near: tuple[float, float, float] | None = None
    heading: int | None = None

    def __post_init__(self) -> None:
        if self.step_range is not None and self.step_range[0] > self.step_range[1]:
            raise ValueError(f"step_range must be (lo, hi) with lo <= hi, got {self.step_range!r}")

    def is_empty(self) -> bool:
        """True when every record matches."""
        return self == ANY_RECORD

    def matches(self, meta: FrameMeta) -> bool:
        """Whether one record passes (the rules of :meth:`MetaTable.filter_mask`, for a memory that
        keeps its records in a list, e.g. a plug-in's).

        Example:
            >>> QueryFilter(near=(2.0, 3.0, 1.0), heading=1).matches(FrameMeta("r", "t", 0, 5, 3.0, 3.0, heading=1))
            True
        """
        for wanted, value in ((self.task, meta.task), (self.run_id, meta.run_id)):
            if wanted is not None and value not in ([wanted] if isinstance(wanted, str) else list(wanted)):
                return False
        if self.episode is not None:
            episodes = [self.episode] if isinstance(self.episode, (int, np.integer)) else list(self.episode)
            if meta.episode not in episodes:
                return False
        if self.step_range is not None:
            lo, hi = self.step_range
            first = meta.step if meta.step_min is None else meta.step_min
            last = meta.step if meta.step_max is None else meta.step_max
            if last < lo or first > hi:
                return False
        if self.near is not None:
            x, y, r = (float(v) for v in self.near)  # in float64, as the table's columns are
            if abs(float(meta.x) - x) > r or abs(float(meta.y) - y) > r:
                return False
        return self.heading is None or meta.heading == self.heading


ANY_RECORD = QueryFilter()
"""The filter that matches every record (the default of every search)."""


@dataclass
class FrameMeta:
    """Metadata of one kept frame (or of several adjacent frames merged into one record).

    Attributes:
        run_id: Identifier of the run that saw the frame.
        task: Task name (e.g. ``"task3"``).
        episode: Episode index within the run.
        step: Step of the frame. For a merged record: the step of its *latest* frame, whose pose,
            heading, node and thumbnail the record keeps (the agent's most recent view of that stretch).
        x: Pose, in grid cells (MiniGrid's column).
        y: Pose, in grid cells (MiniGrid's row).
        heading: Heading index (MiniGrid's 0..3).
        node: Topological-map node, or ``None``.
        count: Number of raw frames merged into this record.
        step_min: First step of the merged span (defaults to ``step``).
        step_max: Last step of the merged span (defaults to ``step``).
        hits: How often the record was returned by a query (used by ``least_used`` eviction).
        label: The target kind the writer recognised in the frame (``""``: none). Memory treats it as
            an opaque string; the ``kinds`` eviction keeps a view of every label it has seen.
        salience: The writer's confidence in ``label``, in [0, 1] (0 when there is no label).
        thumbnail: Optional small uint8 RGB image, kept only when the config asks for it.

    Example:
        >>> m = FrameMeta(run_id="r0", task="task1", episode=0, step=5, x=2.0, y=3.0)
        >>> (m.step_min, m.step_max, m.count)
        (5, 5, 1)
    """

    run_id: str
    task: str
    episode: int
    step: int
    x: float
    y: float
    heading: int = 0
    node: int | None = None
    count: int = 1
    step_min: int | None = None
    step_max: int | None = None
    hits: int = 0
    label: str = ""
    salience: float = 0.0
    thumbnail: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.step_min is None:
            self.step_min = self.step
        if self.step_max is None:
            self.step_max = self.step
        self.validate()

    def validate(self) -> None:
        """Check every field's type and range (the fields are mutable, so memory checks again
        before writing); raise ``ValueError`` naming the first bad field.

        Example:
            >>> FrameMeta("r", "t", 0, None, 1.0, 0.0)
            Traceback (most recent call last):
            ...
            ValueError: FrameMeta.step must be an int in [0, 2**62), got None
        """
        if self._plainly_valid():
            return
        for name in ("run_id", "task"):
            _need(self, isinstance(getattr(self, name), str), name, "a str")
        _need_int(self, "episode", 0, _I32)
        _need_int(self, "step", 0, _I62)
        for name in ("x", "y"):
            v = getattr(self, name)
            _need(self, isinstance(v, _REAL) and not isinstance(v, bool) and math.isfinite(v), name, "a finite number")
        _need_int(self, "heading", 0, 4)
        if self.node is not None:
            _need_int(self, "node", 0, _I62)
        _need_int(self, "count", 1, _I32)
        _need_int(self, "step_min", 0, int(self.step) + 1)
        _need_int(self, "step_max", int(self.step), _I62)
        _need_int(self, "hits", 0, _I32)
        _need(self, isinstance(self.label, str), "label", "a str")
        s = self.salience
        ok = isinstance(s, _REAL) and not isinstance(s, bool) and 0.0 <= s <= 1.0  # NaN fails the range
        _need(self, ok, "salience", "a number in [0, 1]")
        _need(self, self.label != "" or s == 0.0, "salience", '0 when label is "" (a confidence in no label)')
        t = self.thumbnail
        if t is not None:
            ok = isinstance(t, np.ndarray) and t.ndim == 3 and t.shape[2] == 3 and t.size > 0 and t.dtype.kind in "uif"
            ok = ok and (t.dtype.kind != "f" or bool(np.isfinite(t).all()))
            _need(self, ok, "thumbnail", "None or a finite HxWx3 numeric RGB array")

    def _plainly_valid(self) -> bool:
        """Every check of :meth:`validate` at once for the common case: plain ``int``, ``float`` and
        ``str`` values and no thumbnail. A frame is written every step, and this costs a fifth of the
        field-by-field checks; anything else (numpy scalars, a thumbnail, a bad value) takes those."""
        step, salience = self.step, self.salience
        return (
            type(self.run_id) is str
            and type(self.task) is str
            and type(self.label) is str
            and type(self.episode) is int
            and 0 <= self.episode < _I32
            and type(step) is int
            and 0 <= step < _I62
            and type(self.x) is float
            and math.isfinite(self.x)
            and type(self.y) is float
            and math.isfinite(self.y)
            and type(self.heading) is int
            and 0 <= self.heading < 4
            and (self.node is None or (type(self.node) is int and 0 <= self.node < _I62))
            and type(self.count) is int
            and 1 <= self.count < _I32
            and type(self.step_min) is int
            and 0 <= self.step_min <= step
            and type(self.step_max) is int
            and step <= self.step_max < _I62
            and type(self.hits) is int
            and 0 <= self.hits < _I32
            and type(salience) is float
            and 0.0 <= salience <= 1.0
            and (self.label != "" or salience == 0.0)
            and self.thumbnail is None
        )

    def replace(self, **changes: Any) -> FrameMeta:
        """Return a copy with ``changes`` applied (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


_I32, _I62 = 2**31, 2**62
_INT = (int, np.integer)
_REAL = (int, float, np.integer, np.floating)


def _need(meta: FrameMeta, ok: bool, name: str, what: str) -> None:
    if not ok:
        v = getattr(meta, name)
        shown = f"an array of shape {v.shape}" if isinstance(v, np.ndarray) else repr(v)
        raise ValueError(f"FrameMeta.{name} must be {what}, got {shown}")


def _need_int(meta: FrameMeta, name: str, lo: int, hi: int) -> None:
    """``meta.<name>`` is an int (not a bool) in ``[lo, hi)``."""
    v = getattr(meta, name)
    if not (isinstance(v, _INT) and not isinstance(v, bool) and lo <= v < hi):
        what = f"an int in [{lo}, {_BOUND_NAMES.get(hi, hi)})"
        raise ValueError(f"FrameMeta.{name} must be {what}, got {v!r}")


_BOUND_NAMES = {_I32: "2**31", _I62: "2**62"}


@dataclass
class Hit:
    """One retrieval result.

    Attributes:
        score: Cosine similarity (inner product of unit vectors; approximate for quantised stores).
        id: Stable record id (int64).
        meta: The record's metadata.
        source: ``"long_term"`` or ``"short_term"`` (not yet consolidated).
    """

    score: float
    id: int
    meta: FrameMeta
    source: str = "long_term"


def copy_meta(meta: FrameMeta) -> FrameMeta:
    """A shallow copy of ``meta`` (its fields shared, as :func:`copy.copy` shares them), made by
    copying the instance dictionary: a quarter of ``copy.copy``'s cost, on every write and hit.

    >>> meta = FrameMeta("run", "wreck", 0, 3, 1.0, 2.0)
    >>> twin = copy_meta(meta)
    >>> twin == meta, twin is meta
    (True, False)
    """
    twin = object.__new__(type(meta))
    twin.__dict__.update(meta.__dict__)
    return twin


def merge_metas(metas: Sequence[FrameMeta], hits: int | None = None) -> FrameMeta:
    """Metadata of a record made by merging ``metas`` (given in time order).

    The latest frame's pose, step, heading, node and thumbnail are kept; counts and hits add up and
    the step span covers all members. Keeping the latest frame (rather than, say, the medoid) is
    cheap, deterministic and matches the record id, which is also the latest member's. The label and
    salience are the most salient member's (the latest on ties): a stretch that showed a target
    still says so after it is merged with the open water that followed.
    """
    out = copy_meta(metas[-1])
    if len(metas) > 1:  # one pass (a consolidation merges every few steps), latest member first
        best = out
        count, hits, first, last = 0, 0, out.step_min, out.step_max
        for m in reversed(metas):
            count += m.count
            hits += m.hits
            lo = m.step if m.step_min is None else m.step_min
            hi = m.step if m.step_max is None else m.step_max
            first = lo if first is None or lo < first else first
            last = hi if last is None or hi > last else last
            if m.salience > best.salience:  # strictly: the latest on ties
                best = m
        out.count, out.hits, out.step_min, out.step_max = int(count), int(hits), int(first), int(last)  # type: ignore[arg-type]
        out.label, out.salience = best.label, best.salience
    if hits is not None:
        out.hits = hits
    return out


# Columns of MetaTable: name -> dtype. Strings (run_id, task, label) are stored as int32 codes.
_COLUMNS: dict[str, type] = {
    "ids": np.int64,
    "run": np.int32,
    "task": np.int32,
    "episode": np.int32,
    "step": np.int64,
    "step_min": np.int64,
    "step_max": np.int64,
    "x": np.float64,
    "y": np.float64,
    "heading": np.int32,
    "node": np.int64,
    "count": np.int32,
    "hits": np.int32,
    "label": np.int32,
    "salience": np.float32,
}

_STRING_COLUMNS = ("run", "task", "label")
"""Columns holding codes into the shared string vocabulary."""

_COLUMN_RANGES = (
    ("episode", 0, _I32),
    ("step", 0, _I62),
    ("step_min", 0, _I62),
    ("step_max", 0, _I62),
    ("heading", 0, 4),
    ("node", NO_NODE, _I62),
    ("count", 1, _I32),
    ("hits", 0, _I32),
)
"""``(column, lo, hi)``: the ranges :meth:`FrameMeta.validate` allows, which a loaded table is held
to (its rows are read back without a per-record check)."""

_META_FIELDS: tuple[str, ...] = (
    "run_id",
    "task",
    "episode",
    "step",
    "step_min",
    "step_max",
    "x",
    "y",
    "heading",
    "node",
    "count",
    "hits",
    "label",
    "salience",
)
_META_FIELDS_OF = operator.attrgetter(*_META_FIELDS)
"""The fields :meth:`MetaTable.columns_from_metas` reads, in one call per record."""


class MetaTable:
    """Columnar metadata for long-term records, rows sorted by id (ids strictly increasing).

    Ids are handed out in time order, so row order is also age order (what FIFO eviction needs) and
    ``np.searchsorted`` maps ids to rows. Columns grow by doubling so appends are amortised O(1);
    deletions compact in O(n) numpy.

    Args:
        thumbnail_size: Side of stored thumbnails, or ``None`` to keep none.
    """

    def __init__(self, thumbnail_size: int | None = None) -> None:
        self.thumbnail_size = thumbnail_size
        self._n = 0
        self._cap = 0
        self._cols: dict[str, np.ndarray] = {k: np.empty(0, dtype=t) for k, t in _COLUMNS.items()}
        if thumbnail_size:
            self._cols["thumb"] = np.empty((0, thumbnail_size, thumbnail_size, 3), dtype=np.uint8)
            self._cols["has_thumb"] = np.empty(0, dtype=bool)
        self.vocab: list[str] = []
        self._codes: dict[str, int] = {}

    # ----------------------------------------------------------------------------- basic access
    def __len__(self) -> int:
        return self._n

    def col(self, name: str) -> np.ndarray:
        """A read-only view of column ``name`` (length ``len(self)``)."""
        view = self._cols[name][: self._n]
        view.flags.writeable = False
        return view

    @property
    def ids(self) -> np.ndarray:
        """Record ids, ascending."""
        return self.col("ids")

    def code(self, s: str, create: bool = True) -> int:
        """Integer code of string ``s`` (-2 when unknown and ``create`` is False)."""
        c = self._codes.get(s)
        if c is None:
            if not create:
                return -2
            c = len(self.vocab)
            self.vocab.append(s)
            self._codes[s] = c
        return c

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        """Rows of ``ids``; raises ``KeyError`` naming the first unknown id."""
        ids = np.asarray(ids, dtype=np.int64)
        rows = np.searchsorted(self.ids, ids)
        ok = rows < self._n
        ok[ok] = self._cols["ids"][rows[ok]] == ids[ok]
        if not ok.all():
            raise KeyError(f"unknown record id {int(ids[~ok][0])}")
        return rows

    def nbytes(self, include_ids: bool = True) -> int:
        """Bytes held by the live rows (thumbnails included; vocabulary strings approximately)."""
        per_row = sum(
            a.dtype.itemsize * math.prod(a.shape[1:])  # math's: numpy's costs 3 us a column on a tuple
            for k, a in self._cols.items()
            if include_ids or k != "ids"
        )
        return per_row * self._n + sum(len(s.encode()) + 8 for s in self.vocab)

    # ----------------------------------------------------------------------------- mutation
    def _reserve(self, n: int) -> None:
        if n <= self._cap:
            return
        cap = max(n, 2 * self._cap, 64)
        for k, a in self._cols.items():
            new = np.zeros((cap,) + a.shape[1:], dtype=a.dtype)
            new[: self._n] = a[: self._n]
            self._cols[k] = new
        self._cap = cap

    def columns_from_metas(
        self, ids: np.ndarray, metas: Sequence[FrameMeta], *, checked: bool = False
    ) -> dict[str, np.ndarray]:
        """Turn ``metas`` into column arrays (interning strings) ready for :meth:`append`.

        Args:
            ids: One record id per meta.
            metas: The records.
            checked: The metas are memory's own records, each validated when it was written (the
                short-term frames merged by a consolidation): the per-record checks are skipped.
        """
        if not checked:
            for m in metas:  # before any string is interned
                m.validate()
        n = len(metas)
        if n == 0:
            fields: list[tuple[Any, ...]] = [()] * len(_META_FIELDS)
        else:
            fields = list(zip(*map(_META_FIELDS_OF, metas)))
        run, task, episode, step, step_min, step_max, x, y, heading, node, count, hits, label, salience = fields
        code = self.code
        cols: dict[str, np.ndarray] = {
            "ids": np.asarray(ids, dtype=np.int64),
            "run": np.array([code(s) for s in run], np.int32),
            "task": np.array([code(s) for s in task], np.int32),
            "episode": np.array(episode, np.int32),
            "step": np.array(step, np.int64),
            "step_min": np.array(step_min, np.int64),
            "step_max": np.array(step_max, np.int64),
            "x": np.array(x, np.float64),
            "y": np.array(y, np.float64),
            "heading": np.array(heading, np.int32),
            "node": np.array([NO_NODE if v is None else v for v in node], np.int64),
            "count": np.array(count, np.int32),
            "hits": np.array(hits, np.int32),
            "label": np.array([code(s) for s in label], np.int32),
            "salience": np.array(salience, np.float32),
        }
        if self.thumbnail_size:
            s = self.thumbnail_size
            thumbs = np.zeros((n, s, s, 3), dtype=np.uint8)
            has = np.zeros(n, dtype=bool)
            for i, m in enumerate(metas):
                if m.thumbnail is not None:
                    thumbs[i] = fit_thumbnail(m.thumbnail, s)
                    has[i] = True
            cols["thumb"], cols["has_thumb"] = thumbs, has
        return cols

    def append(self, cols: dict[str, np.ndarray]) -> None:
        """Append rows; their ids must all exceed the current largest id (age order)."""
        ids = np.asarray(cols["ids"], dtype=np.int64)
        m = len(ids)
        if m == 0:
            return
        if np.any(np.diff(ids) <= 0) or (self._n and ids[0] <= self._cols["ids"][self._n - 1]):
            last = int(self._cols["ids"][self._n - 1]) if self._n else None
            raise ValueError(
                f"record ids must be strictly increasing (last stored id {last}, new ids {ids[:5].tolist()}...)"
            )
        missing = set(self._cols) - set(cols)
        if missing:
            raise ValueError(f"missing metadata columns {sorted(missing)}")
        self._reserve(self._n + m)
        for k, a in self._cols.items():
            a[self._n : self._n + m] = cols[k]
        self._n += m

    def delete_rows(self, rows: np.ndarray) -> None:
        """Delete ``rows`` (indices), keeping the others in order."""
        if len(rows) == 0:
            return
        keep = np.ones(self._n, dtype=bool)
        keep[rows] = False
        k = int(keep.sum())
        for a in self._cols.values():
            a[:k] = a[: self._n][keep]
        self._n = k

    def set_values(self, name: str, rows: np.ndarray, values: np.ndarray | int) -> None:
        """Assign ``values`` to column ``name`` at ``rows``."""
        self._cols[name][rows] = values

    def add_hits(self, rows: np.ndarray) -> None:
        """Count one retrieval hit for each of ``rows`` (repeats count repeatedly)."""
        np.add.at(self._cols["hits"], rows, 1)

    # ----------------------------------------------------------------------------- views
    def meta(self, row: int) -> FrameMeta:
        """The :class:`FrameMeta` of one row."""
        return self.metas([row])[0]

    def metas(self, rows: Sequence[int] | np.ndarray) -> list[FrameMeta]:
        """The :class:`FrameMeta` of each of ``rows``, in order: each column is read once for all of
        them (a query returns dozens of records), and the records are built without
        :meth:`FrameMeta.validate`: every row was checked on its way in (:meth:`columns_from_metas`,
        :meth:`from_arrays`)."""
        rows = np.asarray(rows, dtype=np.int64)
        c = self._cols
        run, task, episode, step, x, y, heading, node, count, step_min, step_max, hits, label, salience = (
            c[name][rows].tolist()
            for name in (
                "run",
                "task",
                "episode",
                "step",
                "x",
                "y",
                "heading",
                "node",
                "count",
                "step_min",
                "step_max",
                "hits",
                "label",
                "salience",
            )
        )
        thumbs: list[np.ndarray | None] = [None] * len(rows)
        if self.thumbnail_size:
            thumbs = [c["thumb"][r].copy() if has else None for r, has in zip(rows.tolist(), c["has_thumb"][rows])]
        v = self.vocab
        new = object.__new__
        out = []
        for i in range(len(rows)):
            meta = new(FrameMeta)
            meta.__dict__.update(  # the fields in FrameMeta's order, as its __init__ sets them
                run_id=v[run[i]],
                task=v[task[i]],
                episode=episode[i],
                step=step[i],
                x=x[i],
                y=y[i],
                heading=heading[i],
                node=None if node[i] == NO_NODE else node[i],
                count=count[i],
                step_min=step_min[i],
                step_max=step_max[i],
                hits=hits[i],
                label=v[label[i]],
                salience=salience[i],
                thumbnail=thumbs[i],
            )
            out.append(meta)
        return out

    def filter_mask(self, where: QueryFilter) -> np.ndarray | None:
        """Boolean mask of rows matching ``where``, or ``None`` when it matches every record."""
        mask: np.ndarray | None = None

        def _and(m: np.ndarray) -> None:
            nonlocal mask
            mask = m if mask is None else (mask & m)

        for name, value in (("task", where.task), ("run", where.run_id)):
            if value is None:
                continue
            values = [value] if isinstance(value, str) else list(value)
            codes = [self.code(v, create=False) for v in values]
            _and(np.isin(self.col(name), np.asarray(codes, dtype=np.int32)))
        if where.episode is not None:
            eps = [where.episode] if isinstance(where.episode, (int, np.integer)) else list(where.episode)
            _and(np.isin(self.col("episode"), np.asarray(eps, dtype=np.int32)))
        if where.step_range is not None:
            lo, hi = where.step_range
            _and((self.col("step_max") >= lo) & (self.col("step_min") <= hi))
        if where.near is not None:
            x, y, r = where.near
            _and((np.abs(self.col("x") - x) <= r) & (np.abs(self.col("y") - y) <= r))
        if where.heading is not None:
            _and(self.col("heading") == where.heading)
        return mask

    # ----------------------------------------------------------------------------- persistence
    def to_arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """Arrays for ``np.savez`` (live rows only, plus the string vocabulary)."""
        out = {prefix + k: np.ascontiguousarray(a[: self._n]) for k, a in self._cols.items()}
        out[prefix + "vocab"] = np.asarray(self.vocab, dtype=np.str_)
        return out

    @classmethod
    def from_arrays(cls, arrays: Any, thumbnail_size: int | None, prefix: str = "") -> MetaTable:
        """Inverse of :meth:`to_arrays`; raises ``ValueError`` on inconsistent columns."""
        t = cls(thumbnail_size)
        t.vocab = [str(s) for s in arrays[prefix + "vocab"]]
        t._codes = {s: i for i, s in enumerate(t.vocab)}
        cols = {k: np.asarray(arrays[prefix + k]) for k in t._cols}
        n = len(cols["ids"])
        for k, a in cols.items():
            if len(a) != n or a.dtype != t._cols[k].dtype:
                raise ValueError(
                    f"metadata column {k!r} has length {len(a)} / dtype {a.dtype}, expected {n} / {t._cols[k].dtype}"
                )
        for k in _STRING_COLUMNS:
            if n and (cols[k].min() < 0 or cols[k].max() >= len(t.vocab)):
                raise ValueError(f"metadata column {k!r} has codes outside the vocabulary of {len(t.vocab)} strings")
        for k, lo, hi in _COLUMN_RANGES:
            a = cols[k]
            ok = (a >= lo) & (a < hi)
            if not ok.all():
                raise ValueError(
                    f"metadata column {k!r} has values outside [{lo}, {_BOUND_NAMES.get(hi, hi)}), "
                    f"e.g. {a[~ok][0].item()!r}"
                )
        for k in ("x", "y"):
            if not np.isfinite(cols[k]).all():
                raise ValueError(f"metadata column {k!r} has values that are not finite numbers")
        if not np.all((cols["step_min"] <= cols["step"]) & (cols["step"] <= cols["step_max"])):
            raise ValueError("metadata columns 'step_min', 'step', 'step_max' are out of order for some records")
        sal = cols["salience"]
        if not np.all((sal >= 0) & (sal <= 1)):  # NaN fails too
            raise ValueError("metadata column 'salience' has values outside [0, 1]")
        if n and np.any((sal != 0) & (cols["label"] == t.code("", create=False))):
            raise ValueError("metadata column 'salience' is non-zero for records with no label")
        t.append(cols)
        return t


def fit_thumbnail(image: np.ndarray, size: int) -> np.ndarray:
    """Resize an RGB uint8 image to ``size`` x ``size`` (area interpolation) for storage."""
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"thumbnail must be an HxWx3 RGB image, got shape {img.shape}")
    if img.shape[:2] == (size, size) and img.dtype == np.uint8:
        return img
    import cv2

    return cv2.resize(img.astype(np.uint8, copy=False), (size, size), interpolation=cv2.INTER_AREA)
