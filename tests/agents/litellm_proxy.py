"""A real LiteLLM proxy on loopback, for tests of the VLM client through a gateway.

Why: gateways behave unlike model servers: they answer auth and model errors with a 400, reject
parameters a provider lacks (``UnsupportedParamsError``), may drop them silently (``drop_params``),
and retry on their own. The proxy runs as a subprocess from the ``gateway`` extra
(``pip install -e '.[gateway]'``), with mock-response models only, so no request leaves the machine,
and with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so it does not fetch its price list at start.

Models (each a ``mock_response``; the provider prefix decides which parameters LiteLLM accepts):
``json`` (a JSON action), ``prose`` (a sentence naming an action), ``junk`` (no action at all),
``broken`` (HTTP 500), ``busy`` (HTTP 429), ``no-seed`` (an Anthropic model: rejects ``seed``),
``no-seed-no-format`` (a Petals model: rejects ``seed`` and ``response_format``) and
``silent-drop`` (the Petals model behind ``drop_params: true``: both removed without a word, prose
reply).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

MASTER_KEY = "sk-embodmem-test-key"
JSON_REPLY = '{"reasoning": "open water ahead", "action": "forward"}'
PROSE_REPLY = "The water ahead looks open, so I would go forward now."
JUNK_REPLY = "%%% ### ~~~"
START_TIMEOUT_S = 240.0


def missing_extra() -> str | None:
    """Why the proxy cannot run here (the ``gateway`` extra is not installed), or ``None``."""
    for module in ("litellm", "fastapi", "uvicorn", "yaml"):
        if importlib.util.find_spec(module) is None:
            return f"module {module!r} missing: the 'gateway' extra is not installed (pip install -e '.[gateway]')"
    return None


def model_list() -> list[dict]:
    def mock(name: str, provider_model: str, reply: str, **extra: object) -> dict:
        params = {"model": provider_model, "api_key": "unused", "mock_response": reply, **extra}
        return {"model_name": name, "litellm_params": params}

    return [
        mock("json", "openai/json", JSON_REPLY),
        mock("prose", "openai/prose", PROSE_REPLY),
        mock("junk", "openai/junk", JUNK_REPLY),
        mock("broken", "openai/broken", "litellm.InternalServerError"),
        mock("busy", "openai/busy", "litellm.RateLimitError"),
        mock("no-seed", "anthropic/claude-3-haiku-20240307", JSON_REPLY),
        mock("no-seed-no-format", "petals/petals-team/StableBeluga2", JSON_REPLY),
        mock("silent-drop", "petals/petals-team/StableBeluga2", PROSE_REPLY, drop_params=True),
    ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiteLLMProxy:
    """``litellm --config ... --host 127.0.0.1 --port P`` as a context manager.

    Gateway retries are off (``num_retries: 0``) so the client's own retries are the only ones.
    """

    def __init__(self, workdir: Path, extra_models: dict[str, str] | None = None) -> None:
        """``extra_models``: more mock models, name -> the reply each request gets (an OpenAI model)."""
        self.workdir = Path(workdir)
        self.extra_models = dict(extra_models or {})
        self.port = _free_port()
        self.log_path = self.workdir / "litellm.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LiteLLMProxy:
        config = {
            "model_list": model_list()
            + [
                {
                    "model_name": name,
                    "litellm_params": {"model": f"openai/{name}", "api_key": "unused", "mock_response": reply},
                }
                for name, reply in self.extra_models.items()
            ],
            "litellm_settings": {"num_retries": 0, "request_timeout": 30},
            "general_settings": {"master_key": MASTER_KEY},
        }
        config_path = self.workdir / "litellm.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LITELLM_", "DATABASE_URL", "OPENAI_"))}
        env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR", NO_DOCS="True")
        code = "import sys; from litellm import run_server; sys.exit(run_server())"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    code,
                    "--config",
                    str(config_path),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--num_workers",
                    "1",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.workdir,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the LiteLLM proxy exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health/liveliness", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the LiteLLM proxy did not answer within {START_TIMEOUT_S:g} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)

    def __enter__(self) -> LiteLLMProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
