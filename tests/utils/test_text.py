"""Text from run files made safe for a terminal (issue 40, findings 7 and 8)."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from ding_lite.utils.text import printable, shown


def test_escape_sequences_go_whole_and_text_stays():
    assert printable("cart\x1b[2J\x1b[31mpole\x1b[0m") == "cartpole"  # clear screen, colour
    assert printable("a\x1b]0;owned\x07b") == "ab"  # a window title
    assert printable("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "alink"  # a hyperlink
    assert printable("a\x1bcb\x1b(Bc") == "abc"  # reset, charset
    assert printable("a\x9b2Jb\x85c") == "abc"  # 8-bit CSI, NEL
    assert printable("one\ntwo\r\tthree\u2028four") == "one two  three four"
    assert printable("\u202eevil\u2066") == "evil"  # bidirectional overrides
    assert printable("état 学习 🙂") == "état 学习 🙂"


def test_a_limit_marks_what_it_cut():
    assert printable("x" * 10, 4) == "xxx~" and printable("xxxx", 4) == "xxxx"


@given(st.text())
def test_nothing_that_drives_a_terminal_is_left(text):
    clean = printable(text)
    assert not any(unicodedata.category(ch) == "Cc" for ch in clean)
    assert "\u202e" not in clean and "\u2028" not in clean


def test_shown_values_are_short_and_printable():
    assert shown("\x1b[2J") == "'\\x1b[2J'"
    assert shown([1, 2]) == "a list of 2" and shown({"a": 1}) == "a JSON object of 1"
    assert shown(10**5000) == "a whole number of about 5000 digits"
    assert len(shown("y" * 500)) == 60
