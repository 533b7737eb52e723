"""Text the engine stores whatever it contains: error messages and tracebacks, operators'
reasons, who paused a queue. Never refused (a failure must always be recorded), it is made
storable instead: NUL characters and unpaired surrogates become U+FFFD, and long text keeps
its beginning and its end. Input that can be refused is checked in `queues.validation`.
See docs/design/vocabulary.md."""

from __future__ import annotations

import re

#: The longest error message or traceback stored, in characters.
MAX_STORED_TEXT = 65_536
#: The longest traceback kept in the error history (`FailedAttempt.traceback`), in
#: characters: a failing queue writes one per failure, and the head (the outer frames) and
#: the tail (the inner frames and the exception) are what a reader looks for.
MAX_TRACEBACK = 16_384
#: The longest label stored (who paused a queue, who ran the reaper): their columns' size.
MAX_LABEL = 255
REPLACEMENT = "\ufffd"

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_CUT_MARK = "\n[... {} characters cut ...]\n"


def unstorable(text: str) -> str | None:
    """What keeps `text` out of a text column as it is (a NUL character or an unpaired
    surrogate), or None."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    return "a NUL character" if found.group() == "\x00" else "an unpaired surrogate"


def clean(text: str) -> str:
    """`text` with NUL characters and unpaired surrogates replaced by U+FFFD (a surrogate
    pair spelt as two code points is joined into its character)."""
    if _UNSTORABLE.search(text) is None:
        return text
    text = text.replace("\x00", REPLACEMENT)
    # UTF-16 holds surrogates as code units: a proper pair decodes to its character, a lone
    # one is replaced.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def storable(text: object, limit: int = MAX_STORED_TEXT) -> str:
    """`text` (made a string) cleaned and cut to at most `limit` characters."""
    if not isinstance(text, str):
        text = _as_str(text)
    if len(text) > limit:
        text = _cut(text, limit)
    return clean(text)


def storable_or_none(text: object, limit: int = MAX_STORED_TEXT) -> str | None:
    """`storable(text)`, but None stays None (an optional reason)."""
    return None if text is None else storable(text, limit)


def storable_label(text: object, limit: int = MAX_LABEL) -> str | None:
    """A short label (a user name, a process name) cleaned and cut to `limit` characters;
    None stays None."""
    if text is None:
        return None
    if not isinstance(text, str):
        text = _as_str(text)
    return clean(text[:limit])


def _cut(text: str, limit: int) -> str:
    # The mark takes room too; sized for the longest count it can show.
    room = len(_CUT_MARK.format(len(text)))
    if limit <= room:
        return text[:limit]
    keep = limit - room
    head = keep // 2
    mark = _CUT_MARK.format(len(text) - keep)
    return text[:head] + mark + text[len(text) - (keep - head) :]


def _as_str(value: object) -> str:
    try:
        return str(value)
    except Exception:  # an object whose __str__ fails must not stop its failure's record
        return f"<unprintable {type(value).__name__}>"
