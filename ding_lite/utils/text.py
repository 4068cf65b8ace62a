"""Text from files and peers made safe to print: no terminal control sequences.

A run's files (status.json, config.json, tensorboard tags) are written by the run, but a
reader cannot know who edited them since: an ``exp_name`` holding ``ESC [ 2 J`` would clear
the reader's screen, and other sequences can retitle the window or rewrite what was printed
before. :func:`printable` removes them before text reaches a terminal.
"""

from __future__ import annotations

import re
import unicodedata

# An escape sequence whole, so no half of it is left to read as text: CSI (``ESC [ ...
# final``), a string (OSC ``ESC ]``, DCS ``ESC P``, ...) up to BEL or ``ESC \``, or ``ESC``,
# intermediates and a final byte (ECMA-35). Any control character left on its own follows.
_ESCAPE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])?"
)
_C1_CSI = re.compile(r"\x9b[0-?]*[ -/]*[@-~]")  # the 8-bit form of CSI
# Characters that reorder or hide what follows them on screen ("Trojan Source").
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: str, limit: int | None = None) -> str:
    """``text`` without escape sequences and control characters.

    Tabs and line breaks (``\\n``, ``\\r``, U+2028, U+2029) become a space, so one line
    stays one line; other C0 and C1 controls and bidirectional overrides are removed.

    Args:
        text: any text.
        limit: the most characters kept; a longer result ends with ``~``.
    """
    text = _C1_CSI.sub("", _ESCAPE.sub("", text))
    out = []
    for ch in text:
        if ch in "\t\n\r\u2028\u2029":
            out.append(" ")
        elif ch not in _BIDI and unicodedata.category(ch) != "Cc":
            out.append(ch)
    clean = "".join(out)
    if limit is not None and len(clean) > limit:
        clean = clean[: max(limit - 1, 0)] + "~"
    return clean


def shown(value: object, limit: int = 60) -> str:
    """A short, printable ``repr`` of a value from a file, for an error message."""
    if isinstance(value, dict | list):
        return f"a {'JSON object' if isinstance(value, dict) else 'list'} of {len(value)}"
    if isinstance(value, int) and value.bit_length() > 200:  # repr of a huge one may fail
        return f"a whole number of about {int(value.bit_length() * 0.30103)} digits"
    return printable(repr(value), limit)
