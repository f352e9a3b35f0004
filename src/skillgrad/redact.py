"""Keep secrets out of everything skillgrad writes: files, events, logs and error messages.

Applied where text leaves the process: ``redact_text`` by ``runs/io.py`` to every file of a run
directory; ``redact_message`` / ``redact_json`` (which add the patterns below) by the console log
handler, ``print_error``, ``RunDir.event`` and config.json.

- **Known values**: every API key the process reads for a provider (``remember_secret``, called
  by the code that reads it) and the value of every environment variable a config names
  (``remember_env``) is replaced by ``***`` wherever it appears, for example in a server's
  error body that echoes the ``Authorization`` header. Values shorter than ``MIN_SECRET_CHARS``
  are not remembered (replacing them would mangle ordinary text).
- **By name** (``redact_json``): in a JSON-like structure, a string under a key whose name says
  secret (``api_key``, ``api-key``, ``X-Api-Key``, ``Ocp-Apim-Subscription-Key``,
  ``access_token``, ``client_secret``, ``password``, ``Authorization``...) is replaced; a key
  ending in ``_env`` holds a variable's *name* and is kept. A string shaped like a key
  (``sk-...``) is replaced whatever its name.
- **Patterns** (``redact_message``): ``user:password@`` in a URL loses its password,
  ``Bearer <token>`` and ``Authorization: <value>`` their credential.

A leaf module: it imports nothing from skillgrad.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

REDACTED = "***"
MIN_SECRET_CHARS = 8
# Environment variables that hold provider keys by convention: remembered whenever present.
KNOWN_KEY_ENVS = (
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "HF_TOKEN",
)
_SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "authorization", "credential"}
)
_KEY_SHAPE = re.compile(r"^(sk-|sk_|sk-ant-)[A-Za-z0-9_-]{8,}$")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_URL_USERINFO = re.compile(
    r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^:/@\s]*):(?P<password>[^@/\s]+)@"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}")
_AUTH_HEADER = re.compile(
    r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?(?:basic\s+|bearer\s+)?)[^\s'\",}]{4,}"
)

_lock = threading.Lock()
_values: tuple[str, ...] = ()  # longest first, so a key containing another is replaced whole


def remember_secret(value: str | None) -> None:
    """Redact ``value`` from everything written from now on (ignored when short or empty)."""
    global _values
    value = (value or "").strip()
    if len(value) < MIN_SECRET_CHARS:
        return
    with _lock:
        if value not in _values:
            _values = tuple(sorted({*_values, value}, key=len, reverse=True))


def remember_env(*names: str | None) -> None:
    """Remember the values of the environment variables ``names`` (unset ones are skipped)."""
    for name in names:
        if name:
            remember_secret(os.environ.get(name))


def remember_url_password(url: str | None) -> None:
    """Remember the password of a ``scheme://user:password@host`` URL."""
    m = _URL_USERINFO.search(url or "")
    if m:
        remember_secret(m.group("password"))


def remember_known_envs() -> None:
    """Remember the conventional provider key variables (``KNOWN_KEY_ENVS``) that are set."""
    remember_env(*KNOWN_KEY_ENVS)


def is_remembered(value: str) -> bool:
    """True when ``value`` is a secret this process remembered (``remember_secret``)."""
    return value in _values


def is_secret_name(name: str) -> bool:
    """True for option / header / field names that hold a secret (``api-key``, ``X-Api-Key``,
    ``Ocp-Apim-Subscription-Key``, ``access_token``, ``client_secret``, ``Authorization``);
    False for ``*_env`` names (they name a variable) and plurals such as ``max_tokens``."""
    words = [w for w in _WORD_SPLIT.split(name.lower()) if w]
    if not words or words[-1] == "env":
        return False
    return any(w in _SECRET_WORDS for w in words)


def redact_text(text: str) -> str:
    """``text`` with every remembered secret replaced (what every file write applies: exact
    values only, so ordinary content such as a skill's example header is never rewritten)."""
    for value in _values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_message(text: str) -> str:
    """``redact_text`` plus the patterns of a message: a URL's ``user:password@`` loses the
    password, ``Bearer <token>`` and ``Authorization: <value>`` their credential. For logs,
    error messages, events and config.json."""
    text = redact_text(text)
    if "://" in text and "@" in text:
        text = _URL_USERINFO.sub(rf"\g<scheme>\g<user>:{REDACTED}@", text)
    lowered = text.lower()
    if "bearer" in lowered:
        text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    if "authorization" in lowered:
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def redact_json(value: Any) -> Any:
    """A copy of a JSON-like value with secrets replaced: strings under secret names
    (``is_secret_name``) entirely, every other string by ``redact_message``. Values redacted by
    name are remembered, so they are also removed from free text (an echoed header)."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            secret = isinstance(key, str) and is_secret_name(key)
            if isinstance(item, str) and item and (secret or _KEY_SHAPE.match(item)):
                remember_secret(item)
                out[key] = REDACTED
            else:
                out[key] = redact_json(item)
        return out
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_json(v) for v in value)
    if isinstance(value, str):
        return redact_message(value)
    return value


__all__ = [
    "KNOWN_KEY_ENVS",
    "MIN_SECRET_CHARS",
    "REDACTED",
    "is_remembered",
    "is_secret_name",
    "redact_json",
    "redact_message",
    "redact_text",
    "remember_env",
    "remember_known_envs",
    "remember_secret",
    "remember_url_password",
]
