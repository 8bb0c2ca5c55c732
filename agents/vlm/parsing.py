"""Turn a model's reply into a legal choice, tolerating how real models actually answer.

Servers without structured output return JSON wrapped in prose, in Markdown fences, with single
quotes, or no JSON at all. The parser tries, in order: the whole reply as JSON; JSON inside
```json fences; the first balanced ``{...}`` block (as JSON, then as a Python literal); and last a
search for one action word. Whatever it finds is validated against the legal actions of the current
mode (and the memory nodes shown in the prompt), so an illegal or ambiguous reply is reported as an
error, never guessed into an action.

Example:
    >>> parse_reply('Sure! ```json\\n{"reasoning": "wall ahead", "action": "turn left"}\\n```',
    ...             ["turn_left", "turn_right", "forward", "stop"])
    ParseResult(choice=Choice(name='turn_left', node=None), reasoning='wall ahead', error=None)
    >>> parse_reply('{"action": "goto_node", "node": 7}', ["goto_node", "explore", "stop"], nodes=[3, 7]).choice
    Choice(name='goto_node', node=7)
    >>> parse_reply("I will jump", ["forward", "stop"]).error
    'no JSON object and no action word found in the reply'
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

ACTION_KEYS = ("action", "next_action", "decision", "command", "move")
NODE_KEYS = ("node", "node_id", "target_node", "goal_node", "target")
REASONING_KEYS = ("reasoning", "reason", "thought", "thoughts", "explanation", "rationale")

ALIASES: dict[str, str] = {
    "left": "turn_left",
    "rotate_left": "turn_left",
    "turnleft": "turn_left",
    "right": "turn_right",
    "rotate_right": "turn_right",
    "turnright": "turn_right",
    "forwards": "forward",
    "move_forward": "forward",
    "go_forward": "forward",
    "ahead": "forward",
    "backwards": "backward",
    "back": "backward",
    "move_backward": "backward",
    "explore_frontier": "explore",
    "frontier": "explore",
    "explore_nearest_frontier": "explore",
    "go_to_node": "goto_node",
    "goto": "goto_node",
    "go_to": "goto_node",
    "navigate_to_node": "goto_node",
    "gotonode": "goto_node",
    "halt": "stop",
    "done": "stop",
}
"""Spellings models use for the canonical action names (applied after lower-casing and joining
words with underscores)."""

MAX_REASONING_CHARS = 500


@dataclass(frozen=True)
class Choice:
    """A parsed decision: an action name, plus the node for ``goto_node``."""

    name: str
    node: int | None = None

    def __str__(self) -> str:
        return f"{self.name} {self.node}" if self.node is not None else self.name


class ParseResult(NamedTuple):
    """``(choice, reasoning, error)``: ``choice`` is ``None`` exactly when ``error`` is set."""

    choice: Choice | None
    reasoning: str
    error: str | None


def parse_reply(text: str, legal: Sequence[str], nodes: Collection[int] | None = None) -> ParseResult:
    """Parse and validate a reply.

    Args:
        text: the raw assistant message.
        legal: canonical action names allowed now (e.g. ``turn_left`` or ``goto_node``).
        nodes: node ids ``goto_node`` may name (those shown in the prompt); ``None`` allows any.

    Returns:
        ``ParseResult(choice, reasoning, error)``; ``error`` says what was wrong, for the next prompt.
    """
    text = text or ""
    obj = _find_object(text)
    if obj is not None:
        return _from_object(obj, legal, nodes)
    reasoning = text.strip()[:MAX_REASONING_CHARS]
    if not text.strip():
        return ParseResult(None, "", "the reply was empty")
    found = _search_words(text, legal)
    if not found:
        return ParseResult(None, reasoning, "no JSON object and no action word found in the reply")
    if len(found) > 1:
        return ParseResult(
            None, reasoning, f"no JSON object, and the text names several actions: {sorted(map(str, found))}"
        )
    return _validate(found[0], reasoning, legal, nodes)


def is_json_object(text: str) -> bool:
    """Whether the whole reply is one JSON object, as structured output promises.

    Anything else is a format error, even when :func:`parse_reply` recovers an action from it.

    >>> is_json_object(' {"action": "stop"} '), is_json_object('```json {"action": "stop"} ```')
    (True, False)
    """
    try:
        return isinstance(json.loads(text), dict)
    except (json.JSONDecodeError, TypeError, RecursionError):
        return False


# -- locating an object ------------------------------------------------------------------------


def _find_object(text: str) -> dict[object, object] | None:
    """The first dict with an action key found by the strict, fenced and block stages (else the
    first dict found at all, so its error message can name its keys), or ``None``. Keys are as the
    model wrote them: a Python literal may use non-string ones."""
    candidates = [text.strip()]
    candidates += re.findall(r"```(?:json|JSON)?\s*(.*?)```", text, flags=re.DOTALL)
    candidates += _brace_blocks(text)
    first = None
    for candidate in candidates:
        obj = _load(candidate)
        if isinstance(obj, dict):
            if _get(obj, ACTION_KEYS) is not None:
                return obj
            first = obj if first is None else first
    return first


def _load(candidate: str) -> object:
    candidate = candidate.strip()
    if not candidate.startswith("{"):
        return None
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        pass
    try:  # {'action': 'forward'} and other Python-literal dicts
        return ast.literal_eval(candidate)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _brace_blocks(text: str, limit: int = 5) -> list[str]:
    """Up to ``limit`` balanced ``{...}`` substrings, outermost first, honouring quoted strings."""
    blocks: list[str] = []
    start = text.find("{")
    while start != -1 and len(blocks) < limit:
        depth, quote, escaped, end = 0, "", False, -1
        for i in range(start, len(text)):
            ch = text[i]
            if quote:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        if end == -1:  # unbalanced (e.g. an apostrophe opened a fake quote): try the next brace
            start = text.find("{", start + 1)
            continue
        blocks.append(text[start : end + 1])
        start = text.find("{", end + 1)
    return blocks


# -- interpreting ------------------------------------------------------------------------------


def _get(obj: dict[object, object], keys: Sequence[str]) -> object:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


def _from_object(obj: dict[object, object], legal: Sequence[str], nodes: Collection[int] | None) -> ParseResult:
    found = _get(obj, REASONING_KEYS)
    reasoning = "" if found is None else str(found)[:MAX_REASONING_CHARS]
    raw = _get(obj, ACTION_KEYS)
    if raw is None or isinstance(raw, (dict, list)):
        return ParseResult(
            None, reasoning, f"the JSON reply has no usable 'action' field (keys: {sorted(obj, key=str)})"
        )
    choice = _normalise(str(raw))
    if choice is None:
        return ParseResult(None, reasoning, f"action {str(raw)[:60]!r} is not one of {list(legal)}")
    if choice.name == "goto_node" and choice.node is None:
        node = _get(obj, NODE_KEYS)
        if node is not None:
            parsed = _as_node(node)
            if parsed is None:
                return ParseResult(None, reasoning, f"node {node!r} is not a node id")
            choice = Choice("goto_node", parsed)
    return _validate(choice, reasoning, legal, nodes)


def _as_node(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    match = re.fullmatch(r"\s*(?:node)?\s*#?\s*(\d+)\s*", str(value), flags=re.IGNORECASE)
    return int(match.group(1)) if match else None


def _normalise(raw: str) -> Choice | None:
    """Map a spelling (``"Turn Left"``, ``"goto_node(7)"``, ``"go to node #7"``) to a :class:`Choice`."""
    s = re.sub(r"[\s\-]+", "_", raw.strip().lower()).strip("_.!\"'`")
    m = re.fullmatch(r"(?:goto_node|go_to_node|goto|go_to|navigate_to_node|node)_?[(:#]?_?(\d+)\)?", s)
    if m:
        return Choice("goto_node", int(m.group(1)))
    s = ALIASES.get(s.removeprefix("action."), s.removeprefix("action."))
    return Choice(s) if re.fullmatch(r"[a-z_]+", s) else None


def _word_pattern(name: str) -> str:
    return r"[\s_-]*".join(re.escape(w) for w in name.split("_"))


def _search_words(text: str, legal: Sequence[str]) -> list[Choice]:
    """Distinct legal choices named in free text; an explicit ``action: X`` wins over mentions."""
    lowered = text.lower()
    patterns = []
    for name in legal:
        if name == "goto_node":
            patterns.append((name, r"\bgo[\s_-]*to[\s_-]*node[\s_#:(]*(\d+)"))
        else:
            patterns.append((name, r"\b" + _word_pattern(name) + r"\b"))
    for prefix in (r"\baction\W{0,5}", ""):
        found: list[Choice] = []
        for name, pattern in patterns:
            for m in re.finditer(prefix + pattern, lowered):
                choice = Choice(name, int(m.group(1))) if name == "goto_node" else Choice(name)
                if choice not in found:
                    found.append(choice)
        if found:
            return found
    return []


def _validate(choice: Choice, reasoning: str, legal: Sequence[str], nodes: Collection[int] | None) -> ParseResult:
    if choice.name not in legal:
        return ParseResult(None, reasoning, f"action {choice.name!r} is not one of {list(legal)}")
    if choice.name == "goto_node":
        shown = sorted(nodes) if nodes is not None else None
        if choice.node is None:
            return ParseResult(None, reasoning, f"goto_node needs a node id (one of {shown})")
        if nodes is not None and choice.node not in nodes:
            return ParseResult(None, reasoning, f"node {choice.node} is not one of the nodes shown: {shown}")
    elif choice.node is not None:
        choice = Choice(choice.name)
    return ParseResult(choice, reasoning, None)
