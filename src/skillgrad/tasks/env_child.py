"""What an environment process gets from the run and what the run keeps of it: a copy of the
run's environment variables without its secrets (``child_environment``), and the bounded tail of
whatever the process prints (``OutputTail``: the last ``LOG_TAIL_BYTES``, the rest dropped).
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Iterable, Mapping

from skillgrad.redact import KNOWN_KEY_ENVS, is_remembered, is_secret_name

LOG_TAIL_BYTES = 64 * 1024
"""What is kept of an environment process's output (stdout and stderr): its last 64 KiB."""

SECRET_PARTS = ("API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def looks_secret(name: str, value: str) -> bool:
    """A variable an environment is not given unless named in ``pass_env``: a provider's key
    variable, a name holding ``API_KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``CREDENTIAL``
    (any case), a name whose words say secret (``AWS_ACCESS_KEY_ID``), or a value the run
    holds as a secret (the variable a config's ``api_key_env`` names, whatever its name)."""
    upper = name.upper()
    return (
        upper in KNOWN_KEY_ENVS
        or any(part in upper for part in SECRET_PARTS)
        or is_secret_name(name)
        or is_remembered(value)
    )


def child_environment(
    pass_env: Iterable[str] = (), base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The run's environment variables (``base``: ``os.environ``) without the secret-looking
    ones (``looks_secret``); each name in ``pass_env`` is passed as it is."""
    source = os.environ if base is None else base
    keep = set(pass_env)
    return {k: v for k, v in source.items() if k in keep or not looks_secret(k, v)}


class OutputTail:
    """Reads a process's output pipe in a thread and keeps its last ``limit`` bytes, so a
    chatty environment costs bounded memory and no disk; ``text`` is what was kept."""

    def __init__(self, fd: int, limit: int = LOG_TAIL_BYTES) -> None:
        self.fd, self.limit = fd, limit
        self.kept = bytearray()
        self.dropped = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while True:
                ready = select.select([self.fd], [], [], 0.2)[0]
                if not ready:
                    if self.stopping.is_set():  # a helper that kept the pipe open: let go
                        return
                    continue
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    return
                with self.lock:
                    self.kept += chunk
                    extra = len(self.kept) - self.limit
                    if extra > 0:
                        del self.kept[:extra]
                        self.dropped += extra
        except OSError:
            return
        finally:
            os.close(self.fd)

    def text(self, chars: int, wait: float = 0.0) -> str:
        """The last ``chars`` characters of the output kept; ``wait``: seconds to let the reader
        drain a process that just ended."""
        if wait:
            self.thread.join(wait)
        with self.lock:
            data = bytes(self.kept[-chars * 4 :])
        return data.decode("utf-8", "replace")[-chars:].strip()

    def stop(self) -> None:
        """Stop reading once the pipe is quiet (the process group is dead)."""
        self.stopping.set()


__all__ = ["LOG_TAIL_BYTES", "OutputTail", "child_environment", "looks_secret"]
