"""``provider: openai``: OpenAI's API (key in $OPENAI_API_KEY; base_url, else $OPENAI_BASE_URL,
else https://api.openai.com/v1; $OPENAI_ORG_ID / $OPENAI_PROJECT_ID as the official SDK reads them).

One provider, one file: it declares its options and abilities; the wire is ``openai.py``.
"""

from __future__ import annotations

from skillgrad.models.openai import wire_provider

PROVIDER = wire_provider("openai", "OpenAI's API (key in $OPENAI_API_KEY)")

__all__ = ["PROVIDER"]
