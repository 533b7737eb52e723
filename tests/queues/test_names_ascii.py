"""A queue name or tag of printable ASCII skips the per-character lookup of hidden characters
(queues/validation.py, queues/tags.py): the verdict must be the lookup's for every ASCII
character, and a name beyond ASCII still gets the lookup."""

from __future__ import annotations

import unicodedata

import pytest

from queues.exceptions import InvalidQueueName, InvalidTags
from queues.tags import check_tag
from queues.validation import _HIDDEN_CATEGORIES, validate_queue_name


def _refused(check, value: str, error: type[Exception]) -> bool:
    try:
        check(value)
    except error:
        return True
    return False


@pytest.mark.parametrize(
    ("check", "error"), [(validate_queue_name, InvalidQueueName), (check_tag, InvalidTags)]
)
def test_every_ascii_character_gets_the_categories_verdict(check, error):
    for code in range(128):
        character = chr(code)
        hidden = unicodedata.category(character) in _HIDDEN_CATEGORIES
        assert _refused(check, f"a{character}b", error) is hidden, repr(character)


@pytest.mark.parametrize(
    ("check", "error"), [(validate_queue_name, InvalidQueueName), (check_tag, InvalidTags)]
)
def test_beyond_ascii_the_categories_still_decide(check, error):
    assert check("café-ü") == "café-ü"
    for hidden in ("\u200b", "\u2028", "\u0085", "\ufeff"):  # Cf, Zl, Cc, Cf
        assert _refused(check, f"café{hidden}x", error), repr(hidden)
