"""Build the chat messages of one decision, and the JSON schema the reply must follow.

Each request is self-contained (no chat history): a system message with the rules and the legal
actions, then one user message holding the current view(s) as images, the mission, the pose, the
sonar, the memory context (retrieved frames as images with node ids, distance and bearing), the map
summary, the last few decisions, and, when the previous reply was unusable, a note saying so.
Self-contained requests keep the token count flat over an episode and make the cache key depend
only on what the model sees.

Example:
    >>> import numpy as np
    >>> from embodmem.agents.vlm.config import VLMConfig
    >>> builder = PromptBuilder(VLMConfig())
    >>> ctx = PromptContext(observation={"image": np.zeros((8, 8, 3), np.uint8), "mission": "find the ship",
    ...                                  "pose": np.zeros(3, np.float32)}, legal=["forward", "stop"])
    >>> messages = builder.build(ctx)
    >>> [m["role"] for m in messages], messages[1]["content"][0]["text"].splitlines()[0]
    (['system', 'user'], 'Mission: find the ship')
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from openai.types.chat import ChatCompletionContentPartImageParam, ChatCompletionContentPartParam

from embodmem.agents.base import Observation
from embodmem.agents.vlm.backend import Messages, PropertySchema, ReplySchema
from embodmem.agents.vlm.config import VLMConfig
from embodmem.agents.vlm.images import encode_image, image_part
from embodmem.agents.vlm.memory import HEADING_NAMES, placement
from embodmem.retrieval import Retrieval

ACTION_HELP: dict[str, str] = {
    "turn_left": "rotate 90 degrees to the left in place",
    "turn_right": "rotate 90 degrees to the right in place",
    "forward": "move one cell ahead",
    "backward": "move one cell back",
    "strafe_left": "move one cell to the left without turning",
    "strafe_right": "move one cell to the right without turning",
    "stop": "end the task: only when the target is right in front of you (stopping far away fails)",
    "goto_node": 'travel to the place of memory node N (give N in "node"); a planner drives there '
    "and you are asked again on arrival",
    "explore": "explore the nearest unexplored area; a planner drives and you are asked again when done",
}

VIEW_LABELS: dict[str, str] = {
    "image": "front camera",
    "image_left": "left camera",
    "image_right": "right camera",
    "image_back": "back camera",
}

DEFAULT_SYSTEM_PROMPT = (
    "You control an underwater robot searching a murky sea floor for a target. You see through its "
    "cameras (visibility is limited by fog and low light) and may be shown frames from its memory of "
    "earlier exploration, with where they were seen. Choose the next action to reach the target."
)


@dataclass
class PromptContext:
    """Everything one decision's prompt shows.

    Attributes:
        observation: the current observation (``image``, optional side views, ``sonar``, ``pose``,
            ``mission``).
        legal: canonical action names allowed now.
        step: steps taken in this task.
        cell_size_m: metres per grid cell (for positions and the forward step).
        memory: retrieved frames, best first (placed around ``observation["pose"]``).
        map_summary: ``Navigator.map_summary()`` text, if any.
        history: the previous decisions, oldest first (e.g. ``"step 4: explore (ran 12 steps)"``).
        previous_error: why the last reply was unusable, if it was.
        default_action: the action taken in that case.
    """

    observation: Observation
    legal: Sequence[str]
    step: int = 0
    cell_size_m: float = 1.0
    memory: list[Retrieval] = field(default_factory=list)
    map_summary: str | None = None
    history: list[str] = field(default_factory=list)
    previous_error: str | None = None
    default_action: str | None = None


class PromptBuilder:
    """Turns a :class:`PromptContext` into OpenAI chat messages according to a :class:`VLMConfig`."""

    def __init__(self, config: VLMConfig) -> None:
        self.config = config

    # -- schema and rules ------------------------------------------------------------------------

    @staticmethod
    def schema(legal: Sequence[str]) -> ReplySchema:
        """JSON schema of a reply: reasoning first (so the model thinks before it commits), the action
        from the legal set, and ``node`` (integer or null) when ``goto_node`` is legal. Every property
        is required and no others are allowed, as strict structured output demands."""
        props: dict[str, PropertySchema] = {
            "reasoning": {"type": "string"},
            "action": {"type": "string", "enum": list(legal)},
        }
        if "goto_node" in legal:
            props["node"] = {"type": ["integer", "null"]}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def system_text(self, legal: Sequence[str], cell_size_m: float) -> str:
        lines = [self.config.system_prompt or DEFAULT_SYSTEM_PROMPT, "", "Actions:"]
        for name in legal:
            help_text = ACTION_HELP.get(name, name)
            if name in ("forward", "backward", "strafe_left", "strafe_right"):
                help_text += f" ({cell_size_m:g} m)"
            lines.append(f"- {name}: {help_text}")
        example: dict[str, str | int] = {"reasoning": "one or two sentences", "action": legal[0]}
        if "goto_node" in legal:
            example = {"reasoning": "one or two sentences", "action": "goto_node", "node": 3}
        lines += ["", "Reply with one JSON object and nothing else, for example:", json.dumps(example)]
        if "goto_node" in legal:
            lines.append('"node" is an integer id of a memory node shown to you, or null for other actions.')
        return "\n".join(lines)

    # -- messages --------------------------------------------------------------------------------

    def _image(self, image: np.ndarray) -> ChatCompletionContentPartImageParam:
        c = self.config
        url = encode_image(image, c.image_format, quality=c.jpeg_quality, size=c.image_size)
        return image_part(url, c.image_detail)

    def build(self, ctx: PromptContext) -> Messages:
        """The messages of one request (system + one user message of text and image parts)."""
        obs = ctx.observation
        parts: list[ChatCompletionContentPartParam] = []

        def text(s: str) -> None:
            last = parts[-1] if parts else None
            if last is not None and last["type"] == "text":
                last["text"] += "\n" + s
            else:
                parts.append({"type": "text", "text": s})

        mission = str(obs.get("mission", "")).strip() or "(no mission given)"
        text(f"Mission: {mission}")
        pose = obs.get("pose")
        if pose is not None:
            x, y, heading = (float(v) for v in np.asarray(pose).reshape(-1)[:3])
            compass = HEADING_NAMES[int(round(heading)) % 4]
            text(
                f"Step {ctx.step}. Position x={x:.1f}, y={y:.1f} (cells of {ctx.cell_size_m:g} m; "
                f"y grows southwards), facing {compass}."
            )
        else:
            text(f"Step {ctx.step}.")
        if self.config.include_sonar and obs.get("sonar") is not None:
            sonar = np.asarray(obs["sonar"], dtype=np.float32).reshape(-1)
            if sonar.size:
                ranges = " ".join(f"{r:.1f}" for r in sonar)
                text(f"Sonar ranges in metres, left to right across the fan: {ranges} (nearest {sonar.min():.1f}).")

        for key in self.config.views:
            image = obs.get(key)
            if image is None:
                continue
            text(f"Current view, {VIEW_LABELS[key]}:")
            parts.append(self._image(np.asarray(image)))

        if ctx.memory:
            text("Memory: frames retrieved for the mission, best match first:")
            here = np.zeros(3) if pose is None else np.asarray(pose, dtype=np.float32).reshape(-1)
            for item in ctx.memory:
                node = f"node {item.node}" if item.node is not None else "no node"
                distance_m, bearing_deg = placement(item, here, ctx.cell_size_m)
                side = (
                    "ahead"
                    if abs(bearing_deg) < 1
                    else (f"{abs(bearing_deg):.0f} deg to your {'right' if bearing_deg > 0 else 'left'}")
                )
                text(
                    f"- {node}: similarity {item.score:.2f}, seen at x={item.pose[0]:.1f}, y={item.pose[1]:.1f}, "
                    f"{distance_m:.1f} m away, {side}"
                )
                if self.config.memory_thumbnails and item.thumbnail is not None:
                    parts.append(self._image(np.asarray(item.thumbnail)))
        if ctx.map_summary:
            text("Map so far:\n" + ctx.map_summary.strip())
        if ctx.history:
            text("Your previous decisions: " + "; ".join(ctx.history))
        if ctx.previous_error:
            text(
                f"Note: your last reply could not be used: {ctx.previous_error}; "
                f"the default action {ctx.default_action} was taken."
            )
        legal = ", ".join(ctx.legal)
        if "goto_node" in ctx.legal:
            nodes = sorted({m.node for m in ctx.memory if m.node is not None})
            legal += f" (goto_node with node one of {nodes})"
        text(f"Legal actions now: {legal}. Answer with the JSON object only.")
        return [
            {"role": "system", "content": self.system_text(ctx.legal, ctx.cell_size_m)},
            {"role": "user", "content": parts},
        ]
