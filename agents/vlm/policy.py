"""``VLMPolicy``: a vision-language model chooses the actions, with memory in its prompt.

The loop of one step, in one screen (:meth:`VLMPolicy.act`):

1. fold the observation into the navigator (if any);
2. low mode: ask the model for a primitive action, every step.
   High mode: keep running the current skill (``goto_node N`` or ``explore``, executed by the
   Navigator) until it finishes or ``max_skill_steps`` pass; only then ask the model again. That is
   what makes high mode cheap: one call per skill, not per step.
3. asking = retrieve memory frames for the mission, build the prompt, look in the disk cache, else
   call the backend; parse the reply; an unusable reply or an unreachable model gives the default
   action, and the next prompt says so.

Counts for ``metrics.jsonl`` come from :meth:`VLMPolicy.episode_stats`, reset with each task.
:class:`CallablePolicy` is the same class with a Python function as the model.

Example:
    >>> import numpy as np
    >>> from embodmem.envs.spec import SensorSpec
    >>> spec = SensorSpec(cell_size_m=2.0, image_size=8, camera_fov_deg=90, view_range_m=20,
    ...                   sonar_beams=0, sonar_fov_deg=120, sonar_max_range_m=40, grid_size=16)
    >>> agent = CallablePolicy(lambda messages: '{"reasoning": "nothing here", "action": "forward"}')
    >>> obs = {"image": np.zeros((8, 8, 3), np.uint8), "pose": np.zeros(3, np.float32), "mission": "find the ship"}
    >>> agent.reset(obs, spec)
    >>> agent.act(obs), agent.episode_stats()["vlm_calls"]
    (2, 1)
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodmem.agents.base import Agent, Navigator, Observation, Retrieval
from embodmem.agents.vlm.backend import (
    ATTEMPT_OUTCOMES,
    CallableBackend,
    ChatBackend,
    Completion,
    Messages,
    ReplySchema,
)
from embodmem.agents.vlm.cache import ResponseCache, cached_complete
from embodmem.agents.vlm.config import HIGH_LEVEL_ACTIONS, VLMConfig
from embodmem.agents.vlm.errors import VLMError, VLMUnavailableError
from embodmem.agents.vlm.memory import Embedder, QueryableMemory, retrieve
from embodmem.agents.vlm.parsing import Choice, is_json_object, parse_reply
from embodmem.agents.vlm.prompt import PromptBuilder, PromptContext
from embodmem.envs.spec import Action, SensorSpec


@dataclass
class VLMCounts:
    """One task's counters (see :data:`STAT_KEYS`), reported by :meth:`VLMPolicy.episode_stats`."""

    calls: int = 0
    cache_hits: int = 0
    invalid_replies: int = 0
    format_errors: int = 0
    format_misses: int = 0
    retries: int = 0
    failures: int = 0
    fallbacks: int = 0
    params_dropped: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: Counter[str] = field(default_factory=Counter)
    """HTTP attempts by outcome (:data:`ATTEMPT_OUTCOMES`)."""

    def as_stats(self) -> dict[str, float]:
        """``vlm_<key>`` -> value in :data:`STAT_KEYS` order (seconds rounded to 0.1 ms)."""
        stats: dict[str, float] = {
            f"vlm_{f.name}": getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "attempts"
        }
        stats["vlm_latency_s"] = round(self.latency_s, 4)
        stats.update({f"vlm_attempts_{o}": self.attempts[o] for o in ATTEMPT_OUTCOMES})
        return stats


STAT_KEYS = (
    *(f.name for f in dataclasses.fields(VLMCounts) if f.name != "attempts"),
    *(f"attempts_{o}" for o in ATTEMPT_OUTCOMES),
)
"""Per-episode counters, reported as ``vlm_<key>``: ``calls`` = decisions asked of the model
(cache hits included), ``invalid_replies`` = replies no action could be read from, ``format_errors``
= replies from the server that were not one JSON object (counted even when the tolerant parser
recovered an action), plus HTTP bodies that were no completion at all (not UTF-8, not JSON, over
``max_reply_bytes``), ``format_misses`` = those among them sent while JSON-schema structured output
was requested (the server or a gateway ignored it), ``failures`` = calls that got no reply after
all retries, ``fallbacks`` = default actions taken (invalid reply or failure), ``params_dropped`` =
request parameters dropped because the server rejected them, ``latency_s`` = seconds spent waiting,
failed calls included, ``attempts_<outcome>`` = HTTP attempts by how they ended. Besides these,
``vlm_dropped_params`` names every parameter dropped so far in the run (comma-separated)."""

log = logging.getLogger("embodmem.vlm")


class VLMPolicy(Agent):
    """A VLM behind an OpenAI-compatible server (or any :class:`ChatBackend`) as the policy.

    Args:
        config: a :class:`VLMConfig` (or a mapping of its fields).
        backend: the model transport; default a :class:`embodmem.agents.vlm.client.ChatClient` for ``config``.
        navigator: runs the skills in high mode (required there); in low mode only its map summary
            is used.
        memory: object with ``query(vec, k) -> list[embodmem.memory.Hit]`` (e.g. ``AgentMemory``).
        embedder: object with ``embed_texts(list[str]) -> (N, D)``; turns the mission into the query.
        memory_writer: called with every observation, e.g. to write frames into ``memory``; the
            policy itself only reads memory.
    """

    name = "vlm"
    _mission: str
    _query_vec: np.ndarray | None
    _step: int
    _skill: Choice | None
    _skill_steps: int
    _history: list[str]
    _previous_error: str | None
    _stats: VLMCounts

    def __init__(
        self,
        config: VLMConfig | Mapping[str, Any] | None = None,
        *,
        backend: ChatBackend | None = None,
        navigator: Navigator | None = None,
        memory: QueryableMemory | None = None,
        embedder: Embedder | None = None,
        memory_writer: Callable[[Observation], None] | None = None,
    ) -> None:
        super().__init__()
        if config is None:
            config = VLMConfig()
        elif not isinstance(config, VLMConfig):
            config = VLMConfig.from_dict(config)
        self.config = config
        if config.mode == "high" and navigator is None:
            raise ValueError("VLMConfig.mode='high' needs a navigator to run goto_node/explore skills")
        if memory is not None and embedder is None and config.memory_k > 0:
            raise ValueError("a memory was given without an embedder: the mission cannot become a query vector")
        if backend is None:
            from embodmem.agents.vlm.client import ChatClient  # imports openai only when a server is used

            backend = ChatClient(config)
        self.backend = backend
        self.navigator = navigator
        self.recall = memory
        """What the prompts' memory frames are retrieved from (``Agent.memory`` is the frame memory
        the runner reads; the harness's VLMAgent sets it to its navigator's)."""
        self.embedder = embedder
        self.memory_writer = memory_writer
        self.cache = ResponseCache(config.cache_dir, config.cache_max_bytes) if config.cache_dir else None
        self.prompts = PromptBuilder(config)
        self.default_choice = Choice(config.resolved_default_action())
        self.dropped_params: list[str] = []
        """Request parameters the server rejected and the backend dropped, over the policy's life."""
        self._format_miss_reported = False
        self._consecutive_failures = 0  # across tasks: a server that died stays dead in the next episode
        self.cell_size_m = 1.0
        self._new_task("")

    @classmethod
    def from_config(cls, config: VLMConfig | Mapping[str, Any], **kwargs: Any) -> VLMPolicy:
        """Build from a config object or mapping (e.g. the Hydra ``agent`` node)."""
        return cls(config, **kwargs)

    # -- Agent interface ---------------------------------------------------------------------------

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        super().reset(observation, spec)
        self.cell_size_m = float(spec.cell_size_m)
        self._new_task(str(observation.get("mission", "")))

    def act(self, observation: Observation) -> int:
        self.trace.extra["vlm_called"] = False
        if self.navigator is not None:
            self.navigator.update(observation)
        if self.memory_writer is not None:
            self.memory_writer(observation)
        if self.config.mode == "low":
            choice = self._decide(observation, self.config.low_level_actions)
            action = int(Action[choice.name.upper()])
            self.trace.mode = f"vlm-low:{choice}"
        else:
            action = self._act_high(observation)
        self._step += 1
        return action

    def episode_stats(self) -> dict[str, float | str]:
        stats: dict[str, float | str] = {**self._stats.as_stats()}
        stats["vlm_dropped_params"] = ",".join(self.dropped_params)
        return stats

    def close(self) -> None:
        """Release the backend's connections (if it has any)."""
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()

    # -- high mode ---------------------------------------------------------------------------------

    def _act_high(self, observation: Observation) -> int:
        if self._skill is not None:
            if self._skill_steps < self.config.max_skill_steps:
                action = self._skill_action(self._skill)
                if action is not None:
                    self._skill_steps += 1
                    return action
                self._end_skill("done")
            else:
                self._end_skill("step limit")
        for _ in range(2):  # a skill that is over at once (already there) gets one more question
            choice = self._decide(observation, HIGH_LEVEL_ACTIONS)
            if choice.name == "stop":
                self.trace.mode = "vlm-high:stop"
                return int(Action.STOP)
            action = self._skill_action(choice)
            if action is not None:
                self._skill, self._skill_steps = choice, 1
                self.trace.mode = f"vlm-high:{choice}"
                return action
            self._annotate_last("finished at once: already there, unreachable or nothing left")
        self.trace.mode = "vlm-high:stuck"
        return int(Action.TURN_LEFT)  # neither skill can move: turn to see something new

    def _skill_action(self, choice: Choice) -> int | None:
        assert self.navigator is not None
        if choice.name == "explore":
            action = self.navigator.frontier_action()
        elif choice.name == "goto_node" and choice.node is not None:
            action = self.navigator.goto_node_action(choice.node)
        else:
            raise ValueError(f"not a skill: {choice}")
        return None if action is None else int(action)

    def _end_skill(self, reason: str) -> None:
        self._annotate_last(f"ran {self._skill_steps} steps, {reason}")
        self._skill, self._skill_steps = None, 0

    # -- one decision ------------------------------------------------------------------------------

    def _decide(self, observation: Observation, legal: tuple[str, ...] | list[str]) -> Choice:
        """Ask the model (or the cache) for a choice among ``legal``; fall back on failure."""
        items = self._retrieve()
        nodes = sorted({item.node for item in items if item.node is not None})
        legal = [a for a in legal if a != "goto_node" or nodes]  # goto_node only with nodes to name
        map_summary = None
        if self.navigator is not None and self.config.include_map_summary:
            map_summary = self.navigator.map_summary()
        context = PromptContext(
            observation=observation,
            legal=legal,
            step=self._step,
            cell_size_m=self.cell_size_m,
            memory=items,
            map_summary=map_summary,
            history=self._history[-self.config.history_len :] if self.config.history_len else [],
            previous_error=self._previous_error,
            default_action=str(self.default_choice),
        )
        messages = self.prompts.build(context)
        schema = self.prompts.schema(legal) if self.config.structured_output else None
        self._stats.calls += 1
        reasoning: str | None = ""
        error: str | None = None
        try:
            completion = self._complete(messages, schema)
        except VLMError as err:
            self._count_attempts(err.attempts, err.latency_s)
            if not isinstance(err, VLMUnavailableError):
                raise  # refused (key, model, request) or out of budget: retrying cannot help
            self._stats.failures += 1
            self._stats.retries += err.retries
            self._consecutive_failures += 1
            limit = self.config.max_consecutive_failures
            if limit and self._consecutive_failures >= limit:
                raise VLMUnavailableError(
                    f"{self._consecutive_failures} VLM calls in a row failed "
                    f"(VLMConfig.max_consecutive_failures={limit}); last: {err}",
                    retries=err.retries,
                ) from err
            choice, error = None, f"the model could not be reached ({err})"
        else:
            self._consecutive_failures = 0
            self._count(completion)
            self._check_format(completion)
            choice, reasoning, error = parse_reply(completion.text, legal, nodes)
            if error is not None:
                self._stats.invalid_replies += 1
        if choice is None:
            self._stats.fallbacks += 1
            choice = self.default_choice
        self._previous_error = error
        self._history.append(f"step {self._step}: {choice}" + (" (default, reply unusable)" if error else ""))
        self.trace.extra.update(vlm_called=True, vlm_choice=str(choice), vlm_reasoning=reasoning, vlm_error=error)
        return choice

    def _complete(self, messages: Messages, schema: ReplySchema | None) -> Completion:
        """The backend's answer, through the disk cache when one is configured."""
        return cached_complete(self.backend, self.cache, messages, schema)

    def _count(self, completion: Completion) -> None:
        s = self._stats
        s.cache_hits += int(completion.cached)
        s.retries += completion.retries
        s.prompt_tokens += completion.prompt_tokens
        s.completion_tokens += completion.completion_tokens
        s.params_dropped += len(completion.params_dropped)
        self.dropped_params += [p for p in completion.params_dropped if p not in self.dropped_params]
        self._count_attempts(completion.attempts, completion.latency_s)

    def _count_attempts(self, attempts: Mapping[str, int], latency_s: float) -> None:
        self._stats.latency_s += latency_s
        self._stats.attempts.update(attempts)
        # bodies that were not a completion at all (not UTF-8, not JSON, over the size cap) are format errors too
        self._stats.format_errors += attempts.get("malformed", 0) + attempts.get("oversize", 0)

    def _check_format(self, completion: Completion) -> None:
        """Count a server reply that is not one JSON object; say once if structured output was ignored."""
        if completion.cached or is_json_object(completion.text):
            return
        self._stats.format_errors += 1
        if completion.structured:
            self._stats.format_misses += 1
            if not self._format_miss_reported:
                self._format_miss_reported = True
                log.warning(
                    "VLM: the reply is not JSON although a json_schema response_format was sent: the server "
                    "(or a gateway with drop_params) does not honour structured output; counted as vlm_format_misses"
                )

    def _retrieve(self) -> list[Retrieval]:
        """Memory frames for the mission, best first; also recorded in the trace."""
        if self.recall is None or self.embedder is None or self.config.memory_k == 0:
            return []
        if self._query_vec is None:
            self._query_vec = np.asarray(self.embedder.embed_texts([self._mission]), dtype=np.float32)[0]
        self.trace.query = self._mission
        self.trace.retrievals = retrieve(self.recall, self._query_vec, self.config.memory_k)
        return self.trace.retrievals

    # -- bookkeeping -------------------------------------------------------------------------------

    def _new_task(self, mission: str) -> None:
        self._mission = mission
        self._query_vec = None
        self._step = 0
        self._skill = None
        self._skill_steps = 0
        self._history = []
        self._previous_error = None
        self._stats = VLMCounts()

    def _annotate_last(self, note: str) -> None:
        if self._history:
            self._history[-1] += f" ({note})"


class CallablePolicy(VLMPolicy):
    """:class:`VLMPolicy` whose model is a Python callable ``(messages) -> str`` (e.g. a local VLM).

    The callable receives the very messages a server would (images as data URLs; decode them with
    :func:`embodmem.agents.vlm.images.message_images`), and its reply goes through the same parser, fallbacks,
    cache and counters. ``model_name`` names it in the cache key (default: the callable's name).
    """

    name = "vlm_callable"

    def __init__(
        self,
        fn: Callable[[Messages], str],
        config: VLMConfig | Mapping[str, Any] | None = None,
        *,
        model_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(config, backend=CallableBackend(fn, model=model_name), **kwargs)
