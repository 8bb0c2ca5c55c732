"""Offline pieces of the VLM policy: reply parser, config validation, images, prompt, cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from embodmem.agents.vlm.cache import CacheEntry, ResponseCache
from embodmem.agents.vlm.config import VLMConfig
from embodmem.agents.vlm.images import decode_data_url, encode_image, message_images
from embodmem.agents.vlm.memory import placement
from embodmem.agents.vlm.parsing import Choice, parse_reply
from embodmem.agents.vlm.prompt import PromptBuilder, PromptContext
from embodmem.retrieval import Retrieval

LOW = ["turn_left", "turn_right", "forward", "stop"]
HIGH = ["goto_node", "explore", "stop"]


# -- parser --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"reasoning": "clear water", "action": "forward"}', "forward"),  # strict JSON
        ('Here you go:\n```json\n{"action": "turn_right"}\n```\nGood luck', "turn_right"),  # fenced
        ('I think {"action": "Turn Left", "reasoning": "wall"} is best', "turn_left"),  # first block, spelling
        ("{'action': 'STOP', 'reasoning': 'there it is'}", "stop"),  # Python-literal dict
        ('```\n{"action": "forward",}\n```', "forward"),  # trailing comma -> literal_eval
        ('{"meta": {"v": 1}} and then {"action": "forward"}', "forward"),  # the dict with an action wins
        ("Action: forward. Turning left would hit the rock.", "forward"),  # explicit action word wins
        ("I will move forward now.", "forward"),  # a single action word
        ('{"reasoning": "a } brace in text", "action": "stop"}', "stop"),  # braces inside strings
    ],
)
def test_parser_accepts_common_reply_shapes(text: str, expected: str) -> None:
    choice, _, error = parse_reply(text, LOW)
    assert error is None, error
    assert choice == Choice(expected)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("I am not sure what to do", "no JSON object"),
        ("turn left or go forward?", "several actions"),
        ('{"action": "jump"}', "'jump' is not one of"),
        ('{"reasoning": "no decision"}', "no usable 'action'"),
        ('{"action": "explore"}', "'explore' is not one of"),  # a high-level action in low mode
    ],
)
def test_parser_reports_invalid_replies(text: str, fragment: str) -> None:
    choice, _, error = parse_reply(text, LOW)
    assert choice is None
    assert error is not None and fragment in error


def test_parser_high_level_nodes() -> None:
    assert parse_reply('{"action": "goto_node", "node": 7}', HIGH, nodes=[3, 7]).choice == Choice("goto_node", 7)
    assert parse_reply('{"action": "goto_node(3)"}', HIGH, nodes=[3]).choice == Choice("goto_node", 3)
    assert parse_reply('{"action": "goto_node", "node": "node 3"}', HIGH, nodes=[3]).choice == Choice("goto_node", 3)
    assert parse_reply("Let's go to node #3.", HIGH, nodes=[3]).choice == Choice("goto_node", 3)
    assert parse_reply('{"action": "explore", "node": null}', HIGH, nodes=[3]).choice == Choice("explore")
    assert (
        "not one of the nodes shown: [3, 7]"
        in parse_reply('{"action": "goto_node", "node": 9}', HIGH, nodes=[7, 3]).error
    )
    assert "needs a node id" in parse_reply('{"action": "goto_node"}', HIGH, nodes=[3]).error
    assert str(Choice("goto_node", 4)) == "goto_node 4"


# -- config --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("mode", "medium"),
        ("base_url", "localhost:8000"),
        ("timeout_s", 0),
        ("max_retries", -1),
        ("image_format", "gif"),
        ("views", ["image_up"]),
        ("low_level_actions", ["fly"]),
        ("api_key_env", "sk-abc123"),
        ("default_action", "explore"),
        ("jitter", 2.0),
    ],
)
def test_config_errors_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"VLMConfig.{field}="):
        VLMConfig(**{field: value})


def test_config_from_dict_rejects_unknown_keys_and_the_shipped_options_compose() -> None:
    from hydra import compose, initialize_config_module

    from embodmem.config import VLMConfig as HydraVLMConfig
    from embodmem.config import part_config

    with pytest.raises(ValueError, match="unknown key.*'temprature'"):
        VLMConfig.from_dict({"temprature": 0.2})
    assert HydraVLMConfig is VLMConfig  # the Hydra group agent.vlm is this very dataclass
    built = {}
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        for name in ("vlm", "vlm_ollama", "vlm_openai"):
            cfg = compose("config", overrides=[f"agent={name}"])
            assert cfg.agent.name == "vlm"
            built[name] = part_config("agent.vlm", VLMConfig, cfg)
    assert built["vlm"].image_size == 224 and built["vlm"].cache_dir == ".cache/vlm"  # vlm.yaml's changes
    assert built["vlm"].timeout_s == VLMConfig().timeout_s  # everything else: the dataclass defaults
    assert built["vlm_ollama"].base_url == "http://localhost:11434/v1" and built["vlm_ollama"].image_size == 224
    assert built["vlm_openai"].api_key_env == "OPENAI_API_KEY" and built["vlm_openai"].image_detail == "low"
    assert VLMConfig(mode="high").resolved_default_action() == "explore"
    assert VLMConfig(mode="low").resolved_default_action() == "turn_left"


# -- images, memory placement, prompt ------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["png", "jpeg"])
def test_image_round_trip(fmt: str) -> None:
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, (24, 40, 3), dtype=np.uint8)
    url = encode_image(image, fmt)
    assert url.startswith(f"data:image/{fmt};base64,")
    back = decode_data_url(url)
    assert back.shape == image.shape
    if fmt == "png":
        np.testing.assert_array_equal(back, image)  # lossless, and RGB order preserved
    assert decode_data_url(encode_image(image, fmt, size=64)).shape == (64, 64, 3)
    with pytest.raises(ValueError, match="uint8"):
        encode_image(image.astype(np.float32))


def test_placement_bearing_and_distance() -> None:
    def seen_at(x: float, y: float) -> Retrieval:
        return Retrieval(0.5, 1, (x, y, 0), "wreck", 3)

    facing_east = (5.0, 5.0, 0.0)
    assert placement(seen_at(5, 8), facing_east, 2.0)[1] == pytest.approx(90.0)  # south = right
    assert placement(seen_at(5, 2), facing_east, 2.0)[1] == pytest.approx(-90.0)
    facing_north = (5.0, 5.0, 3.0)
    assert placement(seen_at(8, 5), facing_north, 2.0)[1] == pytest.approx(90.0)  # east = right
    assert placement(seen_at(8, 9), facing_east, 2.0)[0] == pytest.approx(10.0)
    assert placement(seen_at(5, 5), facing_north, 2.0) == (0.0, 0.0)


def test_prompt_contents() -> None:
    cfg = VLMConfig(mode="high", image_size=32)
    thumb = np.full((16, 16, 3), 200, np.uint8)
    obs = {
        "image": np.zeros((8, 8, 3), np.uint8),
        "image_left": np.ones((8, 8, 3), np.uint8),
        "sonar": np.array([3.0, 12.5], np.float32),
        "pose": np.array([2, 3, 1], np.float32),
        "mission": "find the sunken ship",
    }
    ctx = PromptContext(
        observation=obs,
        legal=HIGH,
        step=4,
        cell_size_m=5.0,
        memory=[Retrieval(0.9, 7, (2.0, 9.0, 0), "wreck", 12, thumb)],
        map_summary="3 nodes, 40 cells explored",
        history=["step 0: explore (ran 4 steps, done)"],
        previous_error="no JSON object",
        default_action="explore",
    )
    messages = PromptBuilder(cfg).build(ctx)
    text = "\n".join(p["text"] for p in messages[1]["content"] if p["type"] == "text")
    for fragment in (
        "find the sunken ship",
        "facing south",
        "node 7",
        "30.0 m away",
        "3 nodes, 40 cells",
        "could not be used: no JSON object; the default action explore was taken",
        "goto_node with node one of [7]",
        "nearest 3.0",
    ):
        assert fragment in text, fragment
    images = list(message_images(messages))
    assert [im.shape for im in images] == [(32, 32, 3)] * 3  # front, left, memory thumbnail, resized
    schema = PromptBuilder.schema(HIGH)
    assert schema["properties"]["action"]["enum"] == HIGH and schema["required"] == ["reasoning", "action", "node"]
    assert "goto_node" in messages[0]["content"]


# -- cache ---------------------------------------------------------------------------------------


def test_cache_key_is_canonical_and_entries_persist(tmp_path) -> None:
    cache = ResponseCache(tmp_path)
    a = cache.key({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.0})
    b = cache.key({"temperature": 0.0, "messages": [{"content": "x", "role": "user"}], "model": "m"})
    assert a == b
    assert a != cache.key({"model": "m", "messages": [{"role": "user", "content": "y"}], "temperature": 0.0})
    assert cache.get(a) is None and cache.misses == 1
    cache.put(a, CacheEntry("reply"))
    assert ResponseCache(tmp_path).get(a) == CacheEntry("reply")  # a fresh instance reads it from disk
    cache.path(a).write_text("{ torn")  # a corrupt entry is a miss, not a crash
    assert cache.get(a) is None
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("text", 3, "expected a string"),
        ("prompt_tokens", -1, "expected an integer >= 0"),
        ("model", ["m"], "expected a string or null"),
        ("created", "now", "expected a number"),
        ("key", "other", "expected the entry's own key"),
    ],
)
def test_cache_entry_with_a_bad_field_is_named_and_missed(tmp_path, field, value, allowed) -> None:
    cache = ResponseCache(tmp_path)
    key = cache.key({"identity": {"backend": "callable", "model": "m"}, "messages": [], "schema": None})
    cache.put(key, CacheEntry("reply", 3, 4, "m", 5.0))
    stored = json.loads(cache.path(key).read_text())
    assert CacheEntry.from_json(stored, key) == CacheEntry("reply", 3, 4, "m", 5.0)
    with pytest.raises(ValueError, match=f"^field {field} is .*{allowed}"):
        CacheEntry.from_json({**stored, field: value}, key)
    cache.path(key).write_text(json.dumps({**stored, field: value}))
    assert cache.get(key) is None and cache.misses == 1  # refetched and overwritten, never trusted


def test_cache_entry_file_layout_is_unchanged(tmp_path) -> None:
    """The bytes an entry is stored as (replays read caches written by earlier versions)."""
    cache = ResponseCache(tmp_path)
    key = "ab" * 32
    cache.put(key, CacheEntry("reply", 3, 4, "m", 5.0))
    expected = (
        '{"text": "reply", "prompt_tokens": 3, "completion_tokens": 4, "model": "m", "created": 5.0, "key": "'
        + key
        + '"}\n'
    )
    assert cache.path(key).read_text() == expected
