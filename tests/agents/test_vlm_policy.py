"""VLMPolicy episodes against a real OpenAI-compatible HTTP server on loopback.

The "model" on the server side is a scripted oracle that reads the prompt the policy sent (position,
legal actions) and answers like a sensible VLM would; the world is a small synthetic corridor (and,
in one test, the real ``EmbodMem/Wreck-v0`` environment), the navigator and memory are test doubles
with the interfaces of ``embodmem.agents.base.Navigator`` and ``AgentMemory``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from embodmem.agents.vlm.config import VLMConfig
from embodmem.agents.vlm.errors import VLMUnavailableError
from embodmem.agents.vlm.images import decode_data_url, message_images
from embodmem.agents.vlm.policy import STAT_KEYS, CallablePolicy, VLMPolicy
from embodmem.envs.spec import DIR_TO_VEC, Action, SensorSpec
from embodmem.memory import FrameMeta, Hit

try:
    from tests.agents.chat_server import ChatServer, Reply
except ImportError:  # pytest put tests/agents itself on sys.path
    from chat_server import ChatServer, Reply  # type: ignore[no-redef]

MISSION = "find the sunken ship"
TARGET_X = 24
IMAGE = 32


# -- test doubles --------------------------------------------------------------------------------


class Corridor:
    """A 1-D-ish world: the agent starts at (0, 0) facing east, the target is at x = TARGET_X."""

    def __init__(self, length: int = 30, max_steps: int = 80, views: tuple[str, ...] = ()) -> None:
        self.length, self.max_steps, self.views = length, max_steps, views
        self.spec = SensorSpec(
            cell_size_m=5.0,
            image_size=IMAGE,
            camera_fov_deg=90.0,
            view_range_m=40.0,
            sonar_beams=4,
            sonar_fov_deg=120.0,
            sonar_max_range_m=40.0,
            grid_size=length,
            extra_views=views,
        )

    def reset(self) -> dict[str, Any]:
        self.x, self.y, self.heading, self.steps = 0, 0, 0, 0
        return self.obs()

    def obs(self) -> dict[str, Any]:
        image = np.zeros((IMAGE, IMAGE, 3), np.uint8)
        image[..., 0] = 8 * self.x  # frames differ along the corridor
        obs = {
            "image": image,
            "sonar": np.full(4, 40.0, np.float32),
            "pose": np.array([self.x, self.y, self.heading], np.float32),
            "mission": MISSION,
        }
        for i, view in enumerate(self.views):
            obs[view] = np.full((IMAGE, IMAGE, 3), 50 * (i + 1), np.uint8)
        return obs

    def step(self, action: int) -> tuple[dict[str, Any], bool]:
        self.steps += 1
        if action == Action.FORWARD:
            dx, dy = DIR_TO_VEC[self.heading]
            self.x = int(np.clip(self.x + dx, 0, self.length - 1))
            self.y = int(np.clip(self.y + dy, -3, 3))
        elif action == Action.TURN_LEFT:
            self.heading = (self.heading - 1) % 4
        elif action == Action.TURN_RIGHT:
            self.heading = (self.heading + 1) % 4
        done = action == Action.STOP or self.steps >= self.max_steps
        return self.obs(), done


class FakeNavigator:
    """Explores eastwards in chunks of ``chunk`` cells; ``goto_node`` drives to a node's x."""

    def __init__(self, nodes: dict[int, int], chunk: int = 8, length: int = 30) -> None:
        self.nodes, self.chunk, self.length = nodes, chunk, length
        self.x, self.heading, self.updates = 0, 0, 0
        self._frontier: int | None = None

    def update(self, observation: dict[str, Any]) -> None:
        self.x, self.heading = int(observation["pose"][0]), int(observation["pose"][2])
        self.updates += 1

    def _toward_east(self) -> int:
        return int(Action.FORWARD) if self.heading == 0 else int(Action.TURN_LEFT)

    def frontier_action(self) -> int | None:
        if self._frontier is None:
            if self.x >= self.length - 1:
                return None
            self._frontier = min(self.x + self.chunk, self.length - 1)
        if self.x >= self._frontier:
            self._frontier = None
            return None
        return self._toward_east()

    def goto_node_action(self, node: int) -> int | None:
        return None if self.x >= self.nodes[node] else self._toward_east()

    def map_summary(self) -> str:
        return f"explored x=0..{self.x}; {len(self.nodes)} memory nodes"


class FakeMemory:
    """``query`` returns fixed hits; node 3 holds a picture of the ship at the target."""

    def __init__(self) -> None:
        thumb = np.zeros((16, 16, 3), np.uint8)
        thumb[4:12, 4:12] = (200, 120, 40)
        self.hits = [
            Hit(0.91, 40, FrameMeta("run", "barrel", 0, 40, float(TARGET_X), 0.0, node=3, thumbnail=thumb)),
            Hit(0.35, 7, FrameMeta("run", "barrel", 0, 7, 6.0, 2.0, node=1)),
        ]
        self.queries: list[tuple[np.ndarray, int]] = []

    def query(self, vec: np.ndarray, k: int) -> list[Hit]:
        self.queries.append((vec, k))
        return self.hits[:k]


class FakeEmbedder:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return np.ones((len(texts), 8), np.float32)

    def embed_images(self, images: np.ndarray) -> np.ndarray:
        return np.ones((len(images), 8), np.float32)


# -- the scripted model --------------------------------------------------------------------------


def user_text(body: dict[str, Any]) -> str:
    return "\n".join(p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text")


def oracle(body: dict[str, Any]) -> Reply:
    """Answer like a good VLM: head east to the target, use memory if it shows the ship, then stop."""
    text = user_text(body)
    x = float(re.search(r"Position x=(-?[\d.]+)", text).group(1))
    legal = re.search(r"Legal actions now: ([a-z_, ]+)", text).group(1).split(", ")
    if x >= TARGET_X:
        return Reply.action("stop", "the ship is right ahead")
    if "goto_node" in legal and "node 3" in text:
        return Reply.action("goto_node", "memory node 3 shows the ship", node=3)
    if "explore" in legal:
        return Reply.action("explore", "nothing in view yet", node=None)
    return Reply.action("forward", "open water ahead")


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(max_requests=400, lifetime_s=40) as s:
        s.respond = oracle
        yield s


def config(server: ChatServer, **overrides: Any) -> VLMConfig:
    values: dict[str, Any] = dict(
        base_url=server.url,
        model="test-vlm",
        timeout_s=2.0,
        max_retries=2,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        max_skill_steps=50,
    )
    values.update(overrides)
    return VLMConfig(**values)


def run_episode(agent: VLMPolicy, env: Corridor) -> tuple[int, list[int]]:
    obs = env.reset()
    agent.reset(obs, env.spec)
    actions: list[int] = []
    done = False
    while not done:
        action = agent.act(obs)
        actions.append(action)
        obs, done = env.step(action)
    agent.end_task(success=env.x >= TARGET_X)
    return env.steps, actions


# -- tests ---------------------------------------------------------------------------------------


def test_low_mode_episode_completes_with_images_and_mission(server: ChatServer) -> None:
    env = Corridor(views=("image_left", "image_right"))
    agent = VLMPolicy(config(server, mode="low"))
    steps, actions = run_episode(agent, env)
    assert actions[-1] == Action.STOP and env.x == TARGET_X and steps == TARGET_X + 1
    stats = agent.episode_stats()
    assert stats["vlm_calls"] == steps == server.count
    assert stats["vlm_invalid_replies"] == stats["vlm_fallbacks"] == stats["vlm_retries"] == 0
    assert stats["vlm_prompt_tokens"] == 100 * steps and stats["vlm_completion_tokens"] == 10 * steps
    body = server.requests[5]
    assert MISSION in user_text(body) and "Position x=5.0" in user_text(body)
    images = list(message_images(body["messages"]))
    assert [im.shape for im in images] == [(IMAGE, IMAGE, 3)] * 3  # front, left, right
    assert images[0][0, 0, 0] == 8 * 5  # the current frame, not a stale one
    urls = [p["image_url"]["url"] for p in body["messages"][-1]["content"] if p["type"] == "image_url"]
    assert all(u.startswith("data:image/png;base64,") for u in urls)
    assert body["response_format"]["json_schema"]["schema"]["properties"]["action"]["enum"] == [
        "turn_left",
        "turn_right",
        "forward",
        "stop",
    ]
    assert agent.trace.extra["vlm_choice"] == "stop" and agent.trace.extra["vlm_reasoning"]


def test_memory_context_reaches_the_prompt_and_high_mode_uses_it(server: ChatServer) -> None:
    env, memory, embedder = Corridor(), FakeMemory(), FakeEmbedder()
    nav = FakeNavigator(nodes={3: TARGET_X, 1: 6})
    agent = VLMPolicy(config(server, mode="high", image_size=64), navigator=nav, memory=memory, embedder=embedder)
    steps, actions = run_episode(agent, env)
    assert actions[-1] == Action.STOP and env.x == TARGET_X
    assert server.count == 2  # goto_node 3, then stop on arrival
    first = server.requests[0]
    text = user_text(first)
    assert "node 3: similarity 0.91" in text and "120.0 m away, ahead" in text  # 24 cells of 5 m
    assert "node 1: similarity 0.35" in text and "to your right" in text
    assert "explored x=0..0" in text  # the navigator's map summary
    images = list(message_images(first["messages"]))
    assert [im.shape for im in images] == [(64, 64, 3), (64, 64, 3)]  # view + node 3 thumbnail (resized)
    assert tuple(images[1][32, 32]) == (200, 120, 40)
    assert first["response_format"]["json_schema"]["schema"]["properties"]["node"] == {"type": ["integer", "null"]}
    assert embedder.texts == [MISSION]  # the mission is embedded once per task
    assert nav.updates == steps
    assert [r.node for r in agent.trace.retrievals] == [3, 1] and agent.trace.query == MISSION
    assert "ran 24 steps, done" in user_text(server.requests[1])  # the prompt reports the finished skill


def test_high_mode_makes_far_fewer_calls_than_low_mode(server: ChatServer, capsys) -> None:
    low = VLMPolicy(config(server, mode="low"))
    low_steps, _ = run_episode(low, Corridor())
    high = VLMPolicy(config(server, mode="high"), navigator=FakeNavigator(nodes={}, chunk=8))
    high_steps, high_actions = run_episode(high, Corridor())
    low_calls, high_calls = low.episode_stats()["vlm_calls"], high.episode_stats()["vlm_calls"]
    assert high_actions[-1] == Action.STOP and low_steps == high_steps == TARGET_X + 1
    assert low_calls == low_steps == 25 and high_calls == 4  # explore x3 (8 cells each) + stop
    assert high_calls * 5 <= low_calls
    assert high.episode_stats()["vlm_prompt_tokens"] * 5 <= low.episode_stats()["vlm_prompt_tokens"]
    with capsys.disabled():
        print(f"\n[vlm] same episode ({low_steps} steps): low mode {low_calls} calls, high mode {high_calls} calls")


def test_max_skill_steps_bounds_a_skill(server: ChatServer) -> None:
    agent = VLMPolicy(config(server, mode="high", max_skill_steps=5), navigator=FakeNavigator(nodes={}, chunk=100))
    steps, _ = run_episode(agent, Corridor())
    # asked at x = 0, 5, 10, 15, 20 (explore, 5 steps each) and x = 25 (stop): one step past the target,
    # because a running skill is not interrupted to ask the model
    assert steps == 26 and agent.episode_stats()["vlm_calls"] == 6
    assert "step limit" in user_text(server.requests[1])


def test_failures_invalid_replies_and_retries_are_survived_and_counted(server: ChatServer) -> None:
    server.enqueue(
        Reply.http_error(500),
        Reply.action("forward"),  # call 1: one retry
        Reply.broken(),
        Reply.action("forward"),  # call 2: body is not JSON, one retry
        Reply.ok("late", delay_s=1.0),
        Reply.action("forward"),  # call 3: timeout, one retry
        Reply.ok("Hmm {not json, and no decision"),  # call 4: invalid -> turn_left
        Reply.action("turn_right", delay_s=0.2),  # call 5: slow but in time
        *[Reply.http_error(502)] * 3,  # call 6: all 3 attempts fail -> turn_left
    )
    agent = VLMPolicy(config(server, mode="low", timeout_s=0.5))
    env = Corridor()
    obs = env.reset()
    agent.reset(obs, env.spec)
    actions = []
    for _ in range(7):
        actions.append(agent.act(obs))
        obs, _ = env.step(actions[-1])
    assert actions == [Action.FORWARD] * 3 + [Action.TURN_LEFT, Action.TURN_RIGHT, Action.TURN_LEFT, Action.FORWARD]
    stats = agent.episode_stats()
    assert stats["vlm_calls"] == 7
    assert stats["vlm_retries"] == 5 and stats["vlm_failures"] == 1
    assert stats["vlm_invalid_replies"] == 1 and stats["vlm_fallbacks"] == 2
    assert server.count == 12
    note = "your last reply could not be used: no JSON object"
    assert note in user_text(server.requests[7]) and "default action turn_left was taken" in user_text(
        server.requests[7]
    )
    assert "could not be used" not in user_text(server.requests[8])  # call 5 was fine: no note for call 6
    assert "could not be reached" in user_text(server.requests[-1])  # after the failed call 6
    assert agent.trace.extra["vlm_error"] is None


def test_structured_output_rejected_then_plain_prompting(server: ChatServer) -> None:
    server.reject_response_format = True
    agent = VLMPolicy(config(server, mode="low"))
    steps, actions = run_episode(agent, Corridor())
    assert actions[-1] == Action.STOP
    assert server.count == steps + 1  # one rejected request, then plain prompting for the rest
    assert "response_format" in server.requests[0]
    assert not any("response_format" in body for body in server.requests[1:])
    stats = agent.episode_stats()
    assert stats["vlm_invalid_replies"] == 0
    assert (stats["vlm_params_dropped"], stats["vlm_dropped_params"]) == (1, "response_format")


def _agent_of_a_dead_server(server: ChatServer) -> tuple[VLMPolicy, Corridor, dict]:
    """A low-level VLM policy whose server answers every call with a 500, reset on a corridor."""
    server.respond = lambda body: Reply.http_error(500)
    agent = VLMPolicy(config(server, mode="low", max_retries=0, max_consecutive_failures=3))
    env = Corridor()
    obs = env.reset()
    agent.reset(obs, env.spec)
    return agent, env, obs


def test_a_dead_server_stops_the_run(server: ChatServer) -> None:
    agent, env, obs = _agent_of_a_dead_server(server)
    assert agent.act(obs) == agent.act(obs) == Action.TURN_LEFT
    with pytest.raises(VLMUnavailableError, match="3 VLM calls in a row failed"):
        agent.act(obs)


def test_cache_replays_an_episode_without_requests(server: ChatServer, tmp_path) -> None:
    first = VLMPolicy(config(server, mode="low", cache_dir=str(tmp_path)))
    steps, actions = run_episode(first, Corridor())
    assert server.count == steps and first.episode_stats()["vlm_cache_hits"] == 0
    replay = VLMPolicy(config(server, mode="low", cache_dir=str(tmp_path)))
    steps2, actions2 = run_episode(replay, Corridor())
    stats = replay.episode_stats()
    assert (steps2, actions2) == (steps, actions)
    assert server.count == steps  # not one new request
    assert stats["vlm_cache_hits"] == stats["vlm_calls"] == steps and stats["vlm_prompt_tokens"] == 0
    # a different image is a different request
    env = Corridor()
    obs = env.reset()
    obs["image"] = obs["image"] + 1
    replay.reset(obs, env.spec)
    replay.act(obs)
    assert server.count == steps + 1
    # so is a different seed (sampled replies are not shared across seeds)
    other_seed = VLMPolicy(config(server, mode="low", cache_dir=str(tmp_path), seed=1))
    run_episode(other_seed, Corridor(max_steps=1))
    assert server.count == steps + 2


def test_callable_policy_shares_the_loop(tmp_path) -> None:
    seen: list[tuple[int, str]] = []

    def local_model(messages: list[dict[str, Any]]) -> str:
        images = list(message_images(messages))
        text = user_text({"messages": messages})
        seen.append((len(images), text))
        x = float(re.search(r"Position x=(-?[\d.]+)", text).group(1))
        if x == 3 and len(seen) == 4:
            return "I am confused"  # invalid: the default action (turn_left) is taken, the next prompt says so
        if "facing north" in text:
            return '{"action": "turn_right"}'
        return json.dumps({"reasoning": "r", "action": "stop" if x >= TARGET_X else "forward"})

    agent = CallablePolicy(local_model, VLMConfig(mode="low", cache_dir=str(tmp_path)), model_name="my-local-vlm")
    steps, actions = run_episode(agent, Corridor())
    stats = agent.episode_stats()
    assert actions[-1] == Action.STOP and stats["vlm_invalid_replies"] == 1 and stats["vlm_fallbacks"] == 1
    assert stats["vlm_calls"] == steps == len(seen) and all(n == 1 for n, _ in seen)
    assert any("could not be used" in text for _, text in seen)
    assert agent.backend.identity() == {"backend": "callable", "model": "my-local-vlm"}
    replay = CallablePolicy(local_model, VLMConfig(mode="low", cache_dir=str(tmp_path)), model_name="my-local-vlm")
    run_episode(replay, Corridor())
    assert len(seen) == steps  # answered from the cache


def test_constructor_checks() -> None:
    with pytest.raises(ValueError, match="needs a navigator"):
        CallablePolicy(lambda m: "", VLMConfig(mode="high"))
    with pytest.raises(ValueError, match="without an embedder"):
        CallablePolicy(lambda m: "", VLMConfig(), memory=FakeMemory())
    with pytest.raises(ValueError, match="unknown key"):
        CallablePolicy(lambda m: "", {"mode": "low", "modle": "x"})


def _real_env() -> Any:
    import gymnasium as gym

    import embodmem.envs  # noqa: F401 - registers the ids

    return gym.make("EmbodMem/Wreck-v0", max_steps=12)


def test_short_real_episode(server: ChatServer) -> None:
    env = _real_env()
    replies = iter(["forward", "turn_left", "forward", "forward", "turn_right"] * 3)
    server.respond = lambda body: Reply.action(next(replies))
    agent = VLMPolicy(config(server, mode="low", image_size=96))
    obs, _ = env.reset(seed=0)
    agent.reset(obs, env.unwrapped.sensor_spec)
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, _ = env.step(agent.act(obs))
        steps += 1
        done = terminated or truncated
    env.close()
    assert steps == 12 and server.count == 12 == agent.episode_stats()["vlm_calls"]
    body = server.requests[0]
    assert obs["mission"] in user_text(body) and "Sonar ranges" in user_text(body)
    url = body["messages"][-1]["content"][1]["image_url"]["url"]
    assert decode_data_url(url).shape == (96, 96, 3)


def test_format_errors_count_every_non_json_reply_even_when_recovered(server: ChatServer) -> None:
    sent = {"replies": 0, "not_json": 0}

    def every_fifth_is_prose(body: dict[str, Any]) -> Reply:
        sent["replies"] += 1
        if sent["replies"] % 5 == 0:
            sent["not_json"] += 1
            return Reply.ok("I think I should go forward maybe {not json")
        return oracle(body)

    server.respond = every_fifth_is_prose
    agent = VLMPolicy(config(server, mode="low"))
    steps, _ = run_episode(agent, Corridor())
    stats = agent.episode_stats()
    assert sent["not_json"] >= 4
    assert stats["vlm_format_errors"] == sent["not_json"]  # all recovered by the keyword fallback ...
    assert stats["vlm_invalid_replies"] == 0 and stats["vlm_fallbacks"] == 0  # ... and still counted
    assert stats["vlm_format_misses"] == sent["not_json"]  # json_schema was sent with every one of them
    assert stats["vlm_attempts_ok"] == stats["vlm_calls"] == sent["replies"] == steps


def test_without_structured_output_non_json_replies_are_errors_not_misses(server: ChatServer) -> None:
    server.respond = lambda body: Reply.ok("forward")
    agent = VLMPolicy(config(server, mode="low", structured_output=False))
    obs = Corridor().reset()
    agent.reset(obs, Corridor().spec)
    agent.act(obs)
    stats = agent.episode_stats()
    assert (stats["vlm_format_errors"], stats["vlm_format_misses"], stats["vlm_invalid_replies"]) == (1, 0, 0)


def test_failed_calls_count_their_latency_and_attempts(server: ChatServer) -> None:
    server.enqueue(Reply.http_error(500), Reply.http_error(429), Reply.ok("late", delay_s=1.0))
    agent = VLMPolicy(config(server, mode="low", timeout_s=0.3, max_retries=2))
    obs = Corridor().reset()
    agent.reset(obs, Corridor().spec)
    assert agent.act(obs) == Action.TURN_LEFT  # the call failed: default action
    stats = agent.episode_stats()
    assert stats["vlm_failures"] == 1 and stats["vlm_latency_s"] >= 0.3
    assert (stats["vlm_attempts_5xx"], stats["vlm_attempts_429"], stats["vlm_attempts_timeout"]) == (1, 1, 1)


def test_consecutive_failures_are_counted_across_tasks(server: ChatServer) -> None:
    agent, env, obs = _agent_of_a_dead_server(server)
    agent.act(obs), agent.act(obs)
    agent.reset(obs, env.spec)  # a new task does not revive a dead server
    with pytest.raises(VLMUnavailableError, match="3 VLM calls in a row failed"):
        agent.act(obs)


def test_episode_stats_keys_and_order_are_unchanged() -> None:
    """metrics.jsonl columns come in this order (records written before must compare line by line)."""
    assert STAT_KEYS == (
        "calls", "cache_hits", "invalid_replies", "format_errors", "format_misses", "retries", "failures",
        "fallbacks", "params_dropped", "prompt_tokens", "completion_tokens", "latency_s", "attempts_ok",
        "attempts_5xx", "attempts_429", "attempts_timeout", "attempts_connection", "attempts_malformed",
        "attempts_oversize", "attempts_redirect",
    )  # fmt: skip
    agent = CallablePolicy(lambda messages: '{"action": "forward"}')
    stats = agent.episode_stats()
    assert list(stats) == [f"vlm_{k}" for k in STAT_KEYS] + ["vlm_dropped_params"]
    assert stats["vlm_latency_s"] == 0.0 and stats["vlm_attempts_429"] == 0 and stats["vlm_dropped_params"] == ""
