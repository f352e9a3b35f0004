"""Source 1: the official file from Hugging Face (or the mirror named by ``HF_ENDPOINT``).

``GET {HF_ENDPOINT}/{repo}/resolve/{revision}/{file}``, following the hub's redirect to its CDN,
resumed with an HTTP ``Range`` request from what the partial file holds. ``HF_HUB_OFFLINE``
skips the hub. Plain httpx (already a dependency) rather than ``huggingface_hub``: we need one
file, our own partial name and Rich bar, and the pinned SHA-256 check, while ``hf_hub_download``
brings its own cache layout (blobs and symlinks), tqdm bars and several more dependencies.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote

import httpx

from skillgrad.models.catalog.base import (
    PartialFile,
    PullClock,
    PullLimits,
    PullProgress,
    SourceFailed,
)
from skillgrad.models.catalog.entries import CatalogEntry

HF_DEFAULT_ENDPOINT = "https://huggingface.co"
# an unreachable hub must cost seconds, not minutes; a stalled transfer a minute at most
TIMEOUT = httpx.Timeout(60.0, connect=5.0)
ATTEMPTS = 4  # transfers cut mid-way are resumed this many times in one pull
_HEADERS = {"User-Agent": "skillgrad", "Accept-Encoding": "identity"}
# ASCII digits, at most 19 (any real size): int() of thousands of digits raises ValueError
_NUMBER = r"[0-9]{1,19}"
_CONTENT_RANGE = re.compile(rf"bytes ({_NUMBER})-({_NUMBER})/({_NUMBER}|\*)")


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` set to a true value (as huggingface_hub reads it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or HF_DEFAULT_ENDPOINT).rstrip("/")


def file_url(entry: CatalogEntry) -> str:
    if entry.huggingface is None:
        raise ValueError(f"{entry.name} has no Hugging Face source")
    hf = entry.huggingface
    path = f"{hf.repo}/resolve/{quote(hf.revision, safe='')}/{quote(entry.hf_filename)}"
    return f"{hub_endpoint()}/{path}"


class _StartOver(Exception):
    """The partial file cannot be resumed: it was emptied, transfer again from byte 0."""


def download(
    entry: CatalogEntry,
    partial: Path,
    progress: PullProgress,
    client: httpx.Client | None = None,
    clock: PullClock | None = None,
) -> None:
    """Fill ``partial`` with the entry's file, verified: size and SHA-256 equal the pin.

    Resumes from the bytes ``partial`` already holds; a transfer cut mid-way is resumed up to
    ``ATTEMPTS`` times. Raises ``SourceFailed`` when the hub is unreachable, refuses, misbehaves
    (a bad endpoint URL, redirect loops, a compressed body, too slow for ``clock``'s limits):
    what arrived stays in ``partial`` for the next pull to resume; or serves other bytes than
    the pin (``partial`` removed; a resumed file that fails is fetched once more from the start).
    """
    clock = clock or PullLimits().clock()
    url = file_url(entry)
    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise SourceFailed(f"HF_ENDPOINT={hub_endpoint()!r} is not a usable URL ({exc})") from None
    own = client is None
    client = client or httpx.Client(
        timeout=_timeout(clock), follow_redirects=True, headers=_HEADERS
    )
    try:
        resumed, digest = _fill(client, entry, partial, progress, clock)
        if not _verified(entry, partial, digest, resumed):
            progress.note(f"{entry.name}: the resumed file did not verify; downloading it again")
            _verified(entry, partial, _fill(client, entry, partial, progress, clock)[1], False)
    finally:
        if own:
            client.close()


def _timeout(clock: PullClock) -> httpx.Timeout:
    """A read waits no longer than the rate window (a silent server is caught as soon as a
    trickling one) nor past the deadline."""
    wait = min(TIMEOUT.read or 60.0, clock.limits.window_s, max(clock.remaining(), 0.1))
    return httpx.Timeout(wait, connect=min(TIMEOUT.connect or 5.0, wait))


def _fill(
    client: httpx.Client,
    entry: CatalogEntry,
    partial: Path,
    progress: PullProgress,
    clock: PullClock,
) -> tuple[bool, str]:
    """Transfer what ``partial`` lacks; returns (resumed an earlier partial, SHA-256 of it)."""
    url = file_url(entry)
    with PartialFile(partial, keep=lambda size: size if size <= entry.bytes else 0) as part:
        resumed = part.size > 0
        progress.begin(f"{entry.name} from Hugging Face", entry.bytes, part.size)
        if resumed:
            progress.note(f"{entry.name}: resuming at {part.size:,} of {entry.bytes:,} bytes")
        for _ in range(ATTEMPTS):
            before = part.size
            try:
                _get(client, url, part, entry, progress, clock)
                return resumed, part.hexdigest()
            except _StartOver:
                resumed = False
                progress.begin(f"{entry.name} from Hugging Face", entry.bytes, 0)
            except httpx.TransportError as exc:
                clock.check_deadline(part.size, f"the transfer from {url}")  # say why, if so
                if part.size == before:  # nothing arrived: unreachable or stuck, not worth a retry
                    raise SourceFailed(
                        f"Hugging Face is unreachable at {hub_endpoint()} ({_why(exc)})"
                    ) from exc
                progress.note(f"{entry.name}: transfer cut at {part.size:,} bytes; resuming")
            except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
                # redirect loops, a body that cannot be decoded, a Location that is no URL: the
                # endpoint is broken, not the link: another try would meet the same
                raise SourceFailed(f"{hub_endpoint()} cannot serve {url} ({_why(exc)})") from exc
    raise SourceFailed(
        f"the transfer from {url} was cut {ATTEMPTS} times; {part.size:,} bytes are kept in "
        f"{partial} and the next `skillgrad models pull {entry.name}` resumes from there"
    )


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}"


def _verified(entry: CatalogEntry, partial: Path, digest: str, resumed: bool) -> bool:
    """True when ``partial`` is the pinned file (its size is, once the transfer ended); False
    when a resumed one is not (removed, to try again); raises ``SourceFailed`` when a fresh
    download is not (removed)."""
    size = partial.stat().st_size
    if size == entry.bytes and digest == entry.sha256:
        return True
    partial.unlink()
    if resumed:
        return False
    what = f"{size:,} bytes, not {entry.bytes:,}" if size != entry.bytes else "another SHA-256"
    raise SourceFailed(
        f"the file from {file_url(entry)} has {what} (pinned {entry.sha256}): refused and removed"
    )


def _get(
    client: httpx.Client,
    url: str,
    part: PartialFile,
    entry: CatalogEntry,
    progress: PullProgress,
    clock: PullClock,
) -> None:
    if part.size == entry.bytes:
        return
    headers = {"Range": f"bytes={part.size}-"} if part.size else {}
    clock.begin_transfer(part.size)  # the rate window counts the wait for the answer too
    clock.check(part.size, f"the transfer from {url}")
    with client.stream("GET", url, headers=headers, timeout=_timeout(clock)) as resp:
        if resp.status_code == 416:  # the partial holds what the server does not have
            part.reset()
            raise _StartOver
        if resp.status_code not in (200, 206):
            raise SourceFailed(_status_message(resp, url))
        _check_encoding(resp, url)
        if resp.status_code == 200 and part.size:
            part.reset()  # the server ignored Range: it sends the whole file
            clock.begin_transfer(0)
            progress.begin(f"{entry.name} from Hugging Face", entry.bytes, 0)
        _check_length(resp, part.size, entry, url)
        for block in resp.iter_raw():  # as it arrives: a cut keeps every byte received
            if part.size + len(block) > entry.bytes:
                part.reset()
                raise SourceFailed(f"{url} sent more than the pinned {entry.bytes:,} bytes")
            part.write(block)
            progress.advance(len(block))
            clock.check(part.size, f"the transfer from {url}")


def _check_encoding(resp: httpx.Response, url: str) -> None:
    """The file is asked for as it is (``Accept-Encoding: identity``): byte offsets of a
    resumed transfer and the pinned SHA-256 are those of the raw file, never of a compressed
    body."""
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise SourceFailed(
            f"{url} sent the file compressed (Content-Encoding: {encoding[:40]}) though it "
            "was asked for as it is; a mirror or proxy is rewriting it"
        )


def _check_length(resp: httpx.Response, offset: int, entry: CatalogEntry, url: str) -> None:
    """Refuse early a response that cannot be the pinned file (another size or offset)."""
    if resp.status_code == 206:
        match = _CONTENT_RANGE.fullmatch(resp.headers.get("content-range", "").strip())
        if not match or int(match.group(1)) != offset:
            raise SourceFailed(f"{url} answered a range request with another range; not resuming")
        total = match.group(3)
        if total != "*" and int(total) != entry.bytes:
            raise SourceFailed(_size_message(url, int(total), entry))
        return
    length = resp.headers.get("content-length")
    if length is not None and re.fullmatch(_NUMBER, length) and int(length) != entry.bytes:
        raise SourceFailed(_size_message(url, int(length), entry))


def _size_message(url: str, size: int, entry: CatalogEntry) -> str:
    return (
        f"{url} is {size:,} bytes, not the pinned {entry.bytes:,}: another file than the one "
        "skillgrad trusts (the repository changed?)"
    )


def _status_message(resp: httpx.Response, url: str) -> str:
    status = resp.status_code
    if status in (401, 403):
        why = "access refused (a private or gated repository, or a mirror needing a login)"
    elif status == 404:
        why = "no such file (check HF_ENDPOINT, the repository and the revision)"
    else:
        why = "the hub could not serve it"
    return f"{url}: HTTP {status}, {why}"


__all__ = ["HF_DEFAULT_ENDPOINT", "download", "file_url", "hub_endpoint", "hub_offline"]
