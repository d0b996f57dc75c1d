"""The vectorized text helpers of the tally (Arrow where a value is printable ASCII) read
every value as Python does."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from privspec.backends.data.tally import strip_texts, unusual_text

_BITS = st.sampled_from(["a", "1f", " ", "  ", "\t", "\n", "\x0b", "\x1c", "\u2003", "\u00a0", "é", "|", "(1, 2]", ""])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_BITS, max_size=5).map("".join), min_size=1, max_size=30))
def test_strip_texts_is_pythons_strip(texts) -> None:
    """Edge spaces, Unicode spaces and plain texts (the fast path that returns them as they
    are) alike: each value is ``str.strip`` of it, and the input is left as it was."""
    values = np.array(texts, dtype=object)
    before = values.copy()
    got = strip_texts(values)
    assert got.tolist() == [t.strip() for t in texts]
    assert got is not values and values.tolist() == before.tolist()


def test_unusual_text_marks_what_is_not_printable_ascii_and_missing() -> None:
    values = np.array(["a b", "\x0bc", None, "", "é", "~"], dtype=object)
    assert unusual_text(values).tolist() == [False, True, True, False, True, False]
