"""``hoodie.properties`` read as Hudi reads it: ``java.util.Properties.load(InputStream)``.

TMS's own quick reader (:func:`tms.formats.hudi.timeline.parse_properties`) takes the
``key=value`` lines Hudi writes. A hostile writer need not write them so, and Java reads more:
the bytes as ISO 8859-1, ``:`` or a blank as the separator (``hoodie.archivelog.folder:../x``
sets the key), ``\\uXXXX`` escapes (``\\u002e\\u002e`` is ``..``), a line ending in an odd
number of backslashes continued on the next one, leading blanks skipped, ``#`` / ``!``
comments. A guard must see what Hudi will see, so this reader follows Java's ``LineReader``
and ``loadConvert`` exactly; a malformed ``\\u`` escape (Java throws, and Hudi then falls back
to the backup file) is refused.
"""

from __future__ import annotations

import re

_BLANKS = " \t\f"  # what Java skips at a line's start and around the separator
_NATURAL_LINES = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "f": "\f"}
_HEX = re.compile(r"[0-9A-Fa-f]{4}")


class MalformedProperties(ValueError):
    """Java's ``Properties.load`` would throw on this text."""


def java_properties(data: bytes) -> list[tuple[str, str]]:
    """Every (key, value) pair of ``data`` in file order, duplicates kept (Java keeps the
    last one; a guard checks each)."""
    lines = _NATURAL_LINES.split(data.decode("latin-1"))
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_BLANKS)
        i += 1
        if not line or line[0] in "#!":
            continue  # a comment never continues, whatever it ends with
        while _continues(line):
            line = line[:-1]
            if i >= len(lines):
                break
            line += lines[i].lstrip(_BLANKS)
            i += 1
        out.append(_split(line))
    return out


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """Java's key / value split: the key ends at the first unescaped ``=``, ``:`` or blank;
    blanks and at most one ``=`` / ``:`` follow before the value."""
    n = len(line)
    key_end = value_start = n
    has_sep = escaped = False
    for k, c in enumerate(line):
        if c in "=:" and not escaped:
            key_end, value_start, has_sep = k, k + 1, True
            break
        if c in _BLANKS and not escaped:
            key_end, value_start = k, k + 1
            break
        escaped = c == "\\" and not escaped
    while value_start < n:
        c = line[value_start]
        if c not in _BLANKS:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return _unescape(line[:key_end]), _unescape(line[value_start:])


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        i += 1
        if c != "\\" or i >= len(text):
            if c != "\\":
                out.append(c)
            continue
        c = text[i]
        i += 1
        if c == "u":
            digits = text[i:i + 4]
            if not _HEX.fullmatch(digits):
                raise MalformedProperties("a malformed \\uxxxx escape (Java's Properties.load "
                                          "throws; Hudi then reads the other file)")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)


__all__ = ["MalformedProperties", "java_properties"]
