"""``provider: anthropic``: Anthropic's Messages API (key in $ANTHROPIC_API_KEY).

One provider, one file: it declares its options and abilities; the wire is ``anthropic.py``.
"""

from __future__ import annotations

from skillgrad.models.anthropic import AnthropicBackend
from skillgrad.models.registry import REMOTE_OPTIONS, Provider

PROVIDER = Provider(
    name="anthropic",
    build=AnthropicBackend,
    remote=True,
    options=("base_url", "api_key_env", *REMOTE_OPTIONS),
    extra="anthropic",
    summary="Anthropic's Messages API (key in $ANTHROPIC_API_KEY)",
)

__all__ = ["PROVIDER"]
