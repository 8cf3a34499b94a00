"""Text from submissions, made safe to print on an instructor's terminal.

Contract: :func:`safe` returns ``text`` with every character that is not printable (control
characters such as ESC, carriage return and backspace, bidirectional overrides, other format
characters, line separators) written as a Python escape (``\\x1b``, ``\\u202e``), so nothing a
submission put in a name, a cell type or an error can move the cursor, recolour, hide or
rewrite what the grader prints. Newlines are escaped too: a report line stays one line.
"""

from __future__ import annotations


def safe(text: object) -> str:
    out = []
    for ch in str(text):
        if ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)
