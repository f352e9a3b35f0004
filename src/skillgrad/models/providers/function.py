"""``provider: function``: a Python function (or backend object) as the model, in process.

One provider, one file: it declares its options and abilities; the wire is ``function.py``.
"""

from __future__ import annotations

from skillgrad.errors import ConfigError, PermanentModelError
from skillgrad.models.base import ModelBackend
from skillgrad.models.function import as_backend
from skillgrad.models.registry import Provider
from skillgrad.models.spec import ModelSpec
from skillgrad.plugins import resolve_object


def build(spec: ModelSpec) -> ModelBackend:
    try:
        obj = resolve_object(spec.model)
    except ConfigError as exc:
        raise PermanentModelError(f"{spec.name}: {exc}") from exc
    return as_backend(obj, spec.name, spec.options)


PROVIDER = Provider(
    name="function",
    build=build,
    remote=False,
    options=("options",),
    summary="a Python function or backend object named module:attr or file.py:attr",
)

__all__ = ["PROVIDER"]
