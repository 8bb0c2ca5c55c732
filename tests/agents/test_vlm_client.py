"""ChatClient against a real OpenAI-compatible HTTP server on loopback (tests/agents/chat_server.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from embodmem.agents.vlm.backend import VLMRequestError, VLMUnavailableError
from embodmem.agents.vlm.client import LOCAL_API_KEY, ChatClient
from embodmem.agents.vlm.config import VLMConfig

try:
    from tests.agents.chat_server import ChatServer, Reply
except ImportError:  # pytest put tests/agents itself on sys.path
    from chat_server import ChatServer, Reply  # type: ignore[no-redef]

MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "Mission: find the ship"}]}]
SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"],
          "additionalProperties": False}


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(max_requests=100, lifetime_s=30) as s:
        yield s


def make_client(server: ChatServer, **overrides: object) -> ChatClient:
    values: dict[str, object] = dict(base_url=server.url, model="test-vlm", timeout_s=2.0, max_retries=2,
                                     backoff_base_s=0.01, backoff_max_s=0.05)
    values.update(overrides)
    return ChatClient(VLMConfig(**values))  # type: ignore[arg-type]


def test_request_shape_and_usage(server: ChatServer) -> None:
    server.enqueue(Reply.ok('{"action": "forward"}', usage={"prompt_tokens": 321, "completion_tokens": 12}))
    client = make_client(server, seed=7, temperature=0.2, extra_body={"top_k": 5})
    completion = client.complete(MESSAGES, SCHEMA)
    assert completion.text == '{"action": "forward"}' and completion.structured
    assert (completion.prompt_tokens, completion.completion_tokens, completion.retries) == (321, 12, 0)
    body = server.requests[0]
    assert body["model"] == "test-vlm" and body["seed"] == 7 and body["temperature"] == 0.2 and body["top_k"] == 5
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert server.headers[0]["authorization"] == f"Bearer {LOCAL_API_KEY}"
    assert (client.calls, client.requests, client.prompt_tokens) == (1, 1, 321)


def test_missing_usage_counts_zero_tokens(server: ChatServer) -> None:
    server.enqueue(Reply("text", "hi", usage=None))
    completion = make_client(server).complete(MESSAGES)
    assert (completion.text, completion.prompt_tokens, completion.completion_tokens) == ("hi", 0, 0)
    assert "response_format" not in server.requests[0]


def test_retries_survive_500_broken_body_and_timeout(server: ChatServer) -> None:
    server.enqueue(Reply.http_error(500), Reply.broken(), Reply.ok("late", delay_s=1.5), Reply.ok("finally"))
    client = make_client(server, timeout_s=0.4, max_retries=3)
    start = time.monotonic()
    completion = client.complete(MESSAGES)
    assert completion.text == "finally"
    assert completion.retries == 3 and client.retries == 3 and client.failures == 0
    assert server.count == 4
    assert time.monotonic() - start < 1.5  # the slow reply was abandoned at the timeout, not awaited


def test_slow_reply_within_timeout_is_not_retried(server: ChatServer) -> None:
    server.enqueue(Reply.ok("slow but fine", delay_s=0.3))
    completion = make_client(server, timeout_s=2.0).complete(MESSAGES)
    assert completion.text == "slow but fine" and completion.retries == 0 and completion.latency_s >= 0.3


def test_retries_exhausted_raise_unavailable_with_count(server: ChatServer) -> None:
    server.enqueue(*[Reply.http_error(503)] * 3, Reply.ok("never reached"))
    client = make_client(server, max_retries=2)
    with pytest.raises(VLMUnavailableError, match="after 3 attempt") as info:
        client.complete(MESSAGES)
    assert info.value.retries == 2 and client.failures == 1 and server.count == 3


def test_rate_limit_is_retried_other_4xx_is_not(server: ChatServer) -> None:
    server.enqueue(Reply.http_error(429, "slow down"), Reply.ok("ok"))
    client = make_client(server)
    assert client.complete(MESSAGES).retries == 1
    server.enqueue(Reply.http_error(404, "model 'test-vlm' does not exist"))
    with pytest.raises(VLMRequestError, match="HTTP 404.*does not exist"):
        client.complete(MESSAGES)
    assert server.count == 3  # no retry after the 404


def test_backoff_is_exponential_capped_and_seeded() -> None:
    cfg = VLMConfig(backoff_base_s=1.0, backoff_max_s=5.0, jitter=0.1, seed=3)
    a, b = ChatClient(cfg), ChatClient(cfg)
    delays = [a.backoff_s(r) for r in range(1, 6)]
    assert delays == [b.backoff_s(r) for r in range(1, 6)]  # same seed, same jitter
    for delay, base in zip(delays, [1, 2, 4, 5, 5]):
        assert base <= delay <= base * 1.1


def test_response_format_rejection_falls_back_once(server: ChatServer, caplog) -> None:
    server.reject_response_format = True
    server.enqueue(Reply.ok("first"), Reply.ok("second"))
    client = make_client(server)
    with caplog.at_level(logging.WARNING, logger="embodmem.vlm"):
        first = client.complete(MESSAGES, SCHEMA)
    assert [r.message.count("\n") for r in caplog.records] == [0]  # one line
    assert "rejected response_format" in caplog.records[0].message
    second = client.complete(MESSAGES, SCHEMA)
    assert (first.text, second.text) == ("first", "second")
    assert not first.structured and not client.structured_supported
    assert "response_format" in server.requests[0]
    assert all("response_format" not in body for body in server.requests[1:])
    assert server.count == 3 and client.format_fallbacks == 1 and client.retries == 0
    assert client.dropped_params == ["response_format"] and first.params_dropped == ["response_format"]


def test_api_key_comes_from_the_named_environment_variable(server: ChatServer, monkeypatch) -> None:
    monkeypatch.delenv("EMBODMEM_TEST_KEY", raising=False)
    with pytest.raises(ValueError, match="'EMBODMEM_TEST_KEY'"):
        make_client(server, api_key_env="EMBODMEM_TEST_KEY")
    monkeypatch.setenv("EMBODMEM_TEST_KEY", "secret-123")
    server.enqueue(Reply.ok("ok"))
    make_client(server, api_key_env="EMBODMEM_TEST_KEY").complete(MESSAGES)
    assert server.headers[0]["authorization"] == "Bearer secret-123"


def test_null_key_env_for_a_remote_host_warns() -> None:
    with pytest.warns(UserWarning, match="not local"):
        ChatClient(VLMConfig(base_url="https://vlm.example.org/v1"))


def test_server_request_budget_is_bounded() -> None:
    with ChatServer(max_requests=1, lifetime_s=10) as s:
        client = make_client(s, max_retries=0)
        client.complete(MESSAGES)
        with pytest.raises(VLMUnavailableError, match="budget"):
            client.complete(MESSAGES)
        assert s.overflow == 1
