"""A scriptable OpenAI-compatible chat-completions server on loopback, for tests.

Why a real server: the client's retries, timeouts, structured-output fallback and image encoding
are only tested honestly over real HTTP through the real ``openai`` package. This server speaks the
wire protocol (``POST /v1/chat/completions`` -> ``choices[0].message.content`` + ``usage``), records
every request body, lists its models at ``GET /v1/models``, and answers each request from a script:

    with ChatServer() as server:
        server.enqueue(Reply.http_error(500), Reply.text('{"action": "forward"}'))
        server.respond = lambda body: Reply.text('{"action": "stop"}')   # once the queue is empty
        client = ChatClient(VLMConfig(base_url=server.url, ...))

Safety: it binds 127.0.0.1 on a free port, serves at most ``max_requests`` requests (later ones get
HTTP 503), and shuts itself down after ``lifetime_s`` even if a test forgets to stop it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """How the server answers one request.

    Attributes:
        kind: ``text`` (a normal completion whose content is ``text``), ``error`` (HTTP ``status``
            with an OpenAI-style error body), ``broken`` (HTTP 200 whose body is not JSON),
            ``drip`` (a normal completion sent one byte every ``drip_s`` seconds, status line
            included), ``huge`` (a completion whose body is ``size`` bytes, its length announced or
            not), ``bad_utf8`` (a completion whose content holds bytes that are not UTF-8),
            ``redirect`` (HTTP ``status`` 3xx to ``text``, the ``Location``).
        text: the assistant message content for ``text``; the error message for ``error``.
        status: HTTP status for ``error``.
        delay_s: sleep before answering (slow replies, or longer than the client's timeout).
        usage: token counts to report; ``None`` omits the ``usage`` field.
        headers: extra response headers (e.g. ``Retry-After``).
    """

    kind: str = "text"
    text: str = ""
    status: int = 200
    delay_s: float = 0.0
    usage: dict[str, int] | None = None
    headers: dict[str, str] | None = None
    drip_s: float = 1.0
    size: int = 0
    announce_length: bool = True

    @classmethod
    def drip(cls, text: str = '{"action": "stop"}', drip_s: float = 1.0) -> Reply:
        """A slow server: the whole response, one byte every ``drip_s`` seconds (never idle long enough
        for a per-read timeout)."""
        return cls("drip", text, 200, drip_s=drip_s)

    @classmethod
    def huge(cls, size: int, announce_length: bool = True) -> Reply:
        """A completion whose JSON body is ``size`` bytes (the content padded with spaces)."""
        return cls("huge", "", 200, size=size, announce_length=announce_length)

    @classmethod
    def bad_utf8(cls) -> Reply:
        """A completion whose content carries bytes that are not UTF-8 (0xff 0xfe)."""
        return cls("bad_utf8", "", 200)

    @classmethod
    def redirect(cls, location: str, status: int = 301) -> Reply:
        """A redirect to ``location`` (e.g. another server's URL)."""
        return cls("redirect", location, status)

    @classmethod
    def ok(cls, text: str, delay_s: float = 0.0, usage: dict[str, int] | None = None) -> Reply:
        """A normal completion; usage defaults to a fixed 100 prompt / 10 completion tokens."""
        return cls("text", text, 200, delay_s, usage or {"prompt_tokens": 100, "completion_tokens": 10})

    @classmethod
    def action(cls, action: str, reasoning: str = "scripted", delay_s: float = 0.0, **extra: Any) -> Reply:
        """A well-formed JSON reply choosing ``action``."""
        return cls.ok(json.dumps({"reasoning": reasoning, "action": action, **extra}), delay_s)

    @classmethod
    def http_error(
        cls, status: int, message: str = "scripted failure", delay_s: float = 0.0, headers: dict[str, str] | None = None
    ) -> Reply:
        return cls("error", message, status, delay_s, headers=headers)

    @classmethod
    def hang(cls, seconds: float = 3600.0) -> Reply:
        """Accept the request and never answer (until the server stops)."""
        return cls("text", "", 200, seconds)

    @classmethod
    def broken(cls, delay_s: float = 0.0) -> Reply:
        """HTTP 200 with a body that is not JSON (a crashed proxy, a truncated response)."""
        return cls("broken", "", 200, delay_s)


RESPONSE_FORMAT_REJECTION = "response_format 'json_schema' is not supported by this server"


class ChatServer:
    """Threaded loopback server; see the module docstring.

    Attributes:
        requests: parsed JSON bodies of every chat request, in arrival order.
        headers: their HTTP headers (lower-case names), same order.
        queue: scripted replies, consumed first-in first-out.
        respond: called with the request body when the queue is empty (default: ``stop``).
        reject_response_format: answer 400 to any request carrying ``response_format``.
        reject_params: parameter names answered with one 400 naming those present (as hosted APIs do).
        api_key: when set, any other bearer key gets 401.
        models: the ids ``GET /v1/models`` lists (``None``: that route answers 404).
        model_requests: how many ``GET /v1/models`` requests arrived.
    """

    def __init__(self, max_requests: int = 500, lifetime_s: float = 60.0) -> None:
        self.max_requests = max_requests
        self.lifetime_s = lifetime_s
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.queue: deque[Reply] = deque()
        self.respond: Callable[[dict[str, Any]], Reply] = lambda body: Reply.action("stop")
        self.reject_response_format = False
        self.reject_params: set[str] = set()
        self.api_key: str | None = None
        self.models: list[str] | None = ["test-vlm"]
        self.model_requests = 0
        self.overflow = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL for the client (``http://127.0.0.1:PORT/v1``)."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> ChatServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()
        self._timer = threading.Timer(self.lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        """Stop serving (idempotent); sleeping handlers wake up and drop their connection."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting -------------------------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self.queue.extend(replies)

    @property
    def count(self) -> int:
        """Chat requests received so far."""
        with self._lock:
            return len(self.requests)

    def _next_reply(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if len(self.requests) > self.max_requests:
                self.overflow += 1
                return Reply.http_error(503, f"request budget of {self.max_requests} exhausted")
            if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
                return Reply.http_error(401, "Incorrect API key provided")
            if self.reject_response_format and "response_format" in body:
                return Reply.http_error(400, RESPONSE_FORMAT_REJECTION)
            rejected = sorted(self.reject_params & set(body))
            if rejected:
                return Reply.http_error(
                    400, f"Unsupported parameter(s): {', '.join(rejected)} (not supported with this model)"
                )
            if self.queue:
                return self.queue.popleft()
        return self.respond(body)


class _Handler(BaseHTTPRequestHandler):
    owner: ChatServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; do not wait 40 ms for an ACK

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        owner = self.owner
        with owner._lock:
            owner.model_requests += 1
        key_ok = owner.api_key is None or self.headers.get("Authorization") == f"Bearer {owner.api_key}"
        if self.path.rstrip("/") != "/v1/models" or owner.models is None:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        elif not key_ok:
            self._send(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
        else:
            self._send(
                200,
                {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "test"} for m in owner.models]},
            )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
            return
        reply = self.owner._next_reply(body, {k.lower(): v for k, v in self.headers.items()})
        if reply.delay_s and self.owner._stopping.wait(reply.delay_s):
            return  # shutting down: drop the connection
        if reply.kind == "error":
            param = "response_format" if "response_format" in reply.text else None
            self._send(
                reply.status,
                {
                    "error": {
                        "message": reply.text,
                        "type": "invalid_request_error" if reply.status < 500 else "server_error",
                        "param": param,
                    }
                },
                reply.headers,
            )
        elif reply.kind == "broken":
            self._send_raw(200, b'{"id": "chatcmpl-broken", "choices": [', "application/json")
        elif reply.kind == "redirect":
            self._send_raw(reply.status, b"", "text/plain", {"Location": reply.text})
        elif reply.kind == "drip":
            data = json.dumps(self._completion(body, Reply.ok(reply.text))).encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
            try:
                for i, byte in enumerate(head.encode() + data):
                    if i and self.owner._stopping.wait(reply.drip_s):
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass  # the client gave up
            self.close_connection = True
        elif reply.kind == "huge":
            payload = self._completion(body, Reply.ok(""))
            empty = len(json.dumps(payload).encode())
            payload["choices"][0]["message"]["content"] = " " * max(0, reply.size - empty)
            data = json.dumps(payload).encode()
            if reply.announce_length:
                self._send_raw(200, data, "application/json")
            else:  # no Content-Length: the body ends when the connection closes
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True
        elif reply.kind == "bad_utf8":
            data = (
                json.dumps(self._completion(body, Reply.ok("@@")))
                .encode()
                .replace(b"@@", b'{\\"action\\": \\"st\xff\xfeop\\"}')
            )
            self._send_raw(200, data, "application/json")
        else:
            self._send(200, self._completion(body, reply))

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.owner.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply.text}}],
        }
        if reply.usage is not None:
            usage = dict(reply.usage)
            usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
            payload["usage"] = usage
        return payload

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode("utf-8"), "application/json", headers)

    def _send_raw(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the reply was ready
