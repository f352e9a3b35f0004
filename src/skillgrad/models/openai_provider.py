"""``provider: openai``: OpenAI's API (key in $OPENAI_API_KEY; base_url, else $OPENAI_BASE_URL,
else https://api.openai.com/v1; $OPENAI_ORG_ID / $OPENAI_PROJECT_ID as the official SDK reads them).

One provider, one file: it declares its options and abilities; the wire is ``openai_wire.py``.
"""

from __future__ import annotations

from skillgrad.models.openai_wire import COMMON_OPTIONS, OpenAIChatBackend
from skillgrad.models.provider import Provider

PROVIDER = Provider(
    name="openai",
    build=OpenAIChatBackend.from_spec,
    remote=True,
    options=("base_url", "api_key_env", *COMMON_OPTIONS),
    extra=None,
    summary="OpenAI's API (key in $OPENAI_API_KEY)",
)

__all__ = ["PROVIDER"]
