"""ChatClient against a real OpenAI-compatible HTTP server on loopback (tests/agents/chat_server.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from embodmem.agents.vlm.client import LOCAL_API_KEY, ChatClient
from embodmem.agents.vlm.config import VLMConfig
from embodmem.agents.vlm.errors import (
    VLMAuthError,
    VLMBudgetError,
    VLMModelError,
    VLMRequestError,
    VLMUnavailableError,
)

try:
    from tests.agents.chat_server import ChatServer, Reply
except ImportError:  # pytest put tests/agents itself on sys.path
    from chat_server import ChatServer, Reply  # type: ignore[no-redef]

MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "Mission: find the ship"}]}]
SCHEMA = {
    "type": "object",
    "properties": {"action": {"type": "string"}},
    "required": ["action"],
    "additionalProperties": False,
}


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(max_requests=100, lifetime_s=30) as s:
        yield s


def make_client(server: ChatServer, sleep=time.sleep, **overrides: object) -> ChatClient:
    values: dict[str, object] = dict(
        base_url=server.url, model="test-vlm", timeout_s=2.0, max_retries=2, backoff_base_s=0.01, backoff_max_s=0.05
    )
    values.update(overrides)
    return ChatClient(VLMConfig(**values), sleep=sleep)  # type: ignore[arg-type]


def free_port_url() -> str:
    """A loopback URL on which nothing listens (the port was free a moment ago)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


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
    completion = client.complete(MESSAGES)
    assert completion.text == "finally"
    assert completion.retries == 3 and client.retries == 3 and client.failures == 0
    assert server.count == 4
    # the slow reply was abandoned at the timeout (counted as one), not awaited and accepted
    assert client.attempts == {"5xx": 1, "malformed": 1, "timeout": 1, "ok": 1}


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


# -- parameters a server rejects -----------------------------------------------------------------


def test_rejected_seed_and_format_are_dropped_once_each(server: ChatServer, caplog) -> None:
    server.reject_params = {"seed", "response_format"}
    server.enqueue(Reply.ok("first"), Reply.ok("second"))
    client = make_client(server, seed=5)
    with caplog.at_level(logging.WARNING, logger="embodmem.vlm"):
        first = client.complete(MESSAGES, SCHEMA)
        second = client.complete(MESSAGES, SCHEMA)
    assert (first.text, second.text) == ("first", "second")
    assert first.params_dropped == ["response_format", "seed"] and second.params_dropped == []
    assert client.dropped_params == ["response_format", "seed"] and not client.structured_supported
    assert server.count == 3 and client.retries == 0  # one rejected request, then two plain ones
    assert all("seed" not in b and "response_format" not in b for b in server.requests[1:])
    assert all(b["model"] == "test-vlm" and b["messages"] for b in server.requests)
    assert len(caplog.records) == 1 and "seed" in caplog.records[0].message and "\n" not in caplog.records[0].message


def test_a_server_rejecting_only_seed_keeps_structured_output(server: ChatServer) -> None:
    server.reject_params = {"seed"}
    server.enqueue(Reply.ok('{"action": "forward"}'))
    client = make_client(server)
    completion = client.complete(MESSAGES, SCHEMA)
    assert completion.params_dropped == ["seed"] and completion.structured
    assert "response_format" in server.requests[1] and "seed" not in server.requests[1]


def test_extra_body_fields_can_be_dropped_required_ones_never(server: ChatServer) -> None:
    server.reject_params = {"top_k"}
    server.enqueue(Reply.ok("ok"))
    client = make_client(server, extra_body={"top_k": 5})
    assert client.complete(MESSAGES).params_dropped == ["top_k"] and "top_k" not in server.requests[1]
    server.enqueue(Reply.http_error(400, "Unsupported parameter: 'messages' and 'model' are not supported here"))
    with pytest.raises(VLMRequestError, match="HTTP 400"):
        client.complete(MESSAGES)
    assert client.dropped_params == ["top_k"]


def test_a_parameter_rejected_again_after_its_drop_is_an_error(server: ChatServer) -> None:
    server.enqueue(Reply.http_error(400, "seed is not supported"), Reply.http_error(400, "seed is not supported"))
    client = make_client(server)
    with pytest.raises(VLMRequestError, match="seed is not supported"):
        client.complete(MESSAGES)  # the resend carries no seed, so the second 400 is a plain refusal
    assert client.dropped_params == ["seed"] and server.count == 2


# -- what failures cost --------------------------------------------------------------------------


def test_every_attempt_is_timed_and_counted_by_outcome(server: ChatServer) -> None:
    server.enqueue(
        Reply.http_error(500), Reply.http_error(429), Reply.ok("late", delay_s=1.0), Reply.broken(), Reply.ok("finally")
    )
    client = make_client(server, timeout_s=0.3, max_retries=4)
    completion = client.complete(MESSAGES)
    assert completion.attempts == {"5xx": 1, "429": 1, "timeout": 1, "malformed": 1, "ok": 1}
    assert completion.latency_s >= 0.3 and completion.retries == 4
    server.enqueue(*[Reply.http_error(503)] * 5)
    with pytest.raises(VLMUnavailableError) as info:
        client.complete(MESSAGES)
    assert info.value.attempts == {"5xx": 5} and info.value.latency_s > 0
    assert client.attempts["5xx"] == 6 and client.waited_s >= completion.latency_s + info.value.latency_s


def test_connection_failures_are_counted_and_timed() -> None:
    client = ChatClient(
        VLMConfig(
            base_url=free_port_url(), model="m", timeout_s=1.0, max_retries=1, backoff_base_s=0.01, backoff_max_s=0.01
        )
    )
    with pytest.raises(VLMUnavailableError, match="after 2 attempt") as info:
        client.complete(MESSAGES)
    assert info.value.attempts == {"connection": 2} and info.value.latency_s > 0


def test_retry_after_is_honoured(server: ChatServer) -> None:
    server.enqueue(
        Reply.http_error(429, "slow down", headers={"Retry-After": "0.7"}),
        Reply.http_error(503, "busy", headers={"retry-after-ms": "250"}),
        Reply.ok("ok"),
    )
    slept: list[float] = []
    client = make_client(server, sleep=slept.append, max_retries=3)
    assert client.complete(MESSAGES).text == "ok"
    assert slept == [0.7, 0.25]  # the server's delays, not the 0.01 s backoff


def test_a_retry_after_beyond_the_deadline_ends_the_call_at_once(server: ChatServer) -> None:
    server.enqueue(Reply.http_error(429, "quota", headers={"Retry-After": "120"}), Reply.ok("never"))
    slept: list[float] = []
    client = make_client(server, sleep=slept.append, max_retries=3, call_deadline_s=5.0)
    with pytest.raises(VLMUnavailableError, match="call deadline of 5 s.*Retry-After 120"):
        client.complete(MESSAGES)
    assert slept == [] and server.count == 1


def test_the_call_deadline_covers_all_retries(server: ChatServer) -> None:
    server.respond = lambda body: Reply.hang()
    client = make_client(server, timeout_s=0.4, max_retries=10, call_deadline_s=1.0)
    with pytest.raises(VLMUnavailableError, match="call deadline of 1 s") as info:
        client.complete(MESSAGES)
    assert 2 <= info.value.attempts["timeout"] <= 3  # 0.4 + 0.4 + what is left, not 11 attempts


def test_a_hanging_server_ends_the_run_with_the_silence_budget(server: ChatServer) -> None:
    server.respond = lambda body: Reply.hang()
    client = make_client(server, timeout_s=0.2, max_retries=1, max_silent_s=1.0)
    outcomes = []
    for _ in range(20):
        try:
            client.complete(MESSAGES)
        except VLMBudgetError as err:
            outcomes.append("budget")
            assert "max_silent_s=1" in str(err) and "\n" not in str(err)
            break
        except VLMUnavailableError:
            outcomes.append("unavailable")
    assert outcomes[-1] == "budget" and set(outcomes[:-1]) == {"unavailable"}
    assert len(outcomes) <= 4 and client.silent_s >= 1.0 - 0.05  # the budget caps the last call (50 ms slack)


def test_a_reply_resets_the_silence(server: ChatServer) -> None:
    server.enqueue(Reply.hang(), Reply.hang(), Reply.ok("ok"))
    client = make_client(server, timeout_s=0.2, max_retries=1, max_silent_s=100.0)
    with pytest.raises(VLMUnavailableError):
        client.complete(MESSAGES)
    assert client.silent_s > 0
    client.complete(MESSAGES)
    assert client.silent_s == 0.0


def test_the_run_budget_stops_further_calls(server: ChatServer) -> None:
    delays = iter([0.2, 0.2] + [3.0] * 8)  # the third reply would come long after the budget
    server.respond = lambda body: Reply.ok("ok", delay_s=next(delays))
    client = make_client(server, max_total_s=1.5)
    waited: list[float] = []
    with pytest.raises(VLMBudgetError, match="max_total_s=1.5"):
        for _ in range(10):
            waited.append(client.waited_s)
            client.complete(MESSAGES)
    # the call that reaches the budget is cut at it (the budget is its deadline), not after its
    # reply at 3.4 s; the budget and the upper bound leave room for a loaded machine (two 0.2 s
    # replies took over 0.5 s under a niced full test run beside four benchmarks)
    assert all(w < 1.5 for w in waited) and 1.45 <= client.waited_s <= 2.9
    assert server.count == len(waited)


# -- refusals and the endpoint check -------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (401, "Incorrect API key provided", VLMAuthError),
        (403, "forbidden", VLMAuthError),
        (400, "No connected db.", VLMAuthError),  # LiteLLM without a database, wrong key
        (400, "/chat/completions: Invalid model name passed in model=nope.", VLMModelError),
        (404, "The model `nope` does not exist", VLMModelError),
        (400, "messages: at least one message is required", VLMRequestError),
    ],
)
def test_refusals_are_classified_by_status_and_message(server: ChatServer, status, message, kind) -> None:
    server.enqueue(Reply.http_error(status, message))
    with pytest.raises(VLMRequestError) as info:
        make_client(server).complete(MESSAGES)
    assert type(info.value) is kind and "\n" not in str(info.value) and server.count == 1


def test_check_endpoint_passes_and_lists_models(server: ChatServer) -> None:
    server.models = ["other", "test-vlm"]
    assert make_client(server).check_endpoint() == ["other", "test-vlm"]
    server.models = None  # no models route: the first call will tell
    assert make_client(server).check_endpoint() == []
    assert server.count == 0  # no chat request was made


def test_check_endpoint_stops_on_unknown_model_wrong_key_and_no_server(server: ChatServer, monkeypatch) -> None:
    with pytest.raises(VLMModelError, match="does not serve model 'nope'.*it lists: test-vlm"):
        make_client(server, model="nope").check_endpoint()
    server.api_key = "right"
    monkeypatch.setenv("EMBODMEM_TEST_KEY", "wrong")
    with pytest.raises(VLMAuthError, match=r"refused the credentials.*\$EMBODMEM_TEST_KEY"):
        make_client(server, api_key_env="EMBODMEM_TEST_KEY").check_endpoint()
    with pytest.raises(VLMUnavailableError, match="cannot be reached"):
        ChatClient(VLMConfig(base_url=free_port_url(), model="m")).check_endpoint(timeout_s=2.0)


def test_http_request_logs_are_quiet(server: ChatServer, caplog) -> None:
    client = make_client(server)
    with caplog.at_level(logging.INFO):
        client.complete(MESSAGES)
    assert [r.name for r in caplog.records if r.name.split(".")[0] in ("httpx", "httpx2", "httpcore", "openai")] == []


# -- hostile servers: slow, huge, not UTF-8, redirecting --------------------------------------


def test_a_server_dripping_one_byte_a_second_is_cut_at_the_deadline(server: ChatServer) -> None:
    """The bar: timeout_s=2, max_retries=1 ends within 2 x timeout x (retries + 1) + 1 s."""
    server.respond = lambda body: Reply.drip(drip_s=1.0)
    client = make_client(server, timeout_s=2.0, max_retries=1, backoff_base_s=0.5, backoff_max_s=0.5)
    start = time.monotonic()
    with pytest.raises(VLMUnavailableError, match="after 2 attempt") as info:
        client.complete(MESSAGES)
    elapsed = time.monotonic() - start
    assert elapsed <= 2 * 2.0 * 2 + 1 and elapsed >= 2 * 2.0  # both attempts ran their full 2 s
    assert info.value.attempts == {"timeout": 2} and server.count == 2


def test_max_silent_s_bounds_a_dripping_call(server: ChatServer) -> None:
    server.respond = lambda body: Reply.drip(drip_s=0.5)
    client = make_client(server, timeout_s=30.0, max_retries=3, max_silent_s=1.5)
    start = time.monotonic()
    with pytest.raises(VLMBudgetError, match="max_silent_s=1.5"):
        client.complete(MESSAGES)
    assert time.monotonic() - start < 2.5


@pytest.mark.parametrize("announce", [True, False])
def test_a_reply_over_the_size_cap_is_cut_and_counted(server: ChatServer, announce: bool) -> None:
    server.enqueue(Reply.huge(3 * 2**20, announce_length=announce), Reply.action("forward"))
    client = make_client(server, max_reply_bytes=2**20)
    completion = client.complete(MESSAGES)
    assert completion.text == '{"reasoning": "scripted", "action": "forward"}'
    assert completion.attempts == {"oversize": 1, "ok": 1}


def test_invalid_utf8_is_a_malformed_reply(server: ChatServer) -> None:
    server.respond = lambda body: Reply.bad_utf8()
    client = make_client(server, max_retries=1)
    with pytest.raises(VLMUnavailableError, match="not valid UTF-8") as info:
        client.complete(MESSAGES)
    assert info.value.attempts == {"malformed": 2}


def test_a_redirect_to_another_port_is_refused_in_one_line(server: ChatServer) -> None:
    with ChatServer(lifetime_s=30) as other:
        server.respond = lambda body: Reply.redirect(other.url + "/chat/completions")
        client = make_client(server)
        with pytest.raises(VLMRequestError, match="redirects are not followed") as info:
            client.complete(MESSAGES)
        assert other.url in str(info.value) and "\n" not in str(info.value)
        assert info.value.attempts == {"redirect": 1}
        assert other.count == 0 and other.model_requests == 0  # nothing was sent there
