"""CN sets: per-origin sets of change numbers, kept as sorted, disjoint, non-adjacent ranges.

A CN set is immutable and hashable so it can be shared between state-table rows, messages and
backfill entries without copying. Every operation is a linear merge over the range lists, so
sets with thousands of ranges stay cheap. Canonical text: ``PFS1:1-11,17;PFS2:1-20`` (origins
sorted by name, a single CN without a dash, the empty set as the empty string).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

Range = tuple[int, int]
Ranges = tuple[Range, ...]


_RANGE = r"[1-9][0-9]*(?:-[1-9][0-9]*)?"
_SECTION = rf"[^\s;:,](?:[^;:,]*[^\s;:,])?:{_RANGE}(?:,{_RANGE})*"
#: how ``CNSet.text`` writes (the order of origins and ranges is checked apart)
_CANONICAL_SHAPE = re.compile(rf"{_SECTION}(?:;{_SECTION})*")


class CNSetError(ValueError):
    """A CN set given as text or JSON that cannot be read; the message says why."""


#: digits Python turns into an int at once whatever its ``int_max_str_digits`` (640 at least)
_INT_CHUNK = 600


def decimal_int(text: str) -> int:
    """``int(text)``, also for a number of more digits than Python converts at once (its
    ``int_max_str_digits``, 4300 by default): such a number is beyond every bound a field has,
    and is read as its first digits scaled, which keeps its sign and its order against any
    number with fewer digits. Anything else ``int`` refuses still raises ``ValueError``."""
    try:
        return int(text)
    except ValueError:
        s = text.strip()
        digits = s[1:] if s[:1] in ("+", "-") else s
        if not (digits.isascii() and digits.isdigit()):
            raise
        sign = -1 if s[:1] == "-" else 1
        digits = digits.lstrip("0") or "0"
        if len(digits) <= _INT_CHUNK:
            return sign * int(digits)
        scale: int = 10 ** (len(digits) - _INT_CHUNK)  # a positive power: an int (typeshed says Any)
        return sign * int(digits[:_INT_CHUNK]) * scale


def _merge_sorted(ranges: Iterable[Range]) -> Ranges:
    """Merge ranges given in order of their low end: overlapping and adjacent ones join."""
    out: list[list[int]] = []
    for lo, hi in ranges:
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def _normalise(ranges: Iterable[Range]) -> Ranges:
    return _merge_sorted(sorted(ranges))


def _union(a: Ranges, b: Ranges) -> Ranges:
    if not a:
        return b
    if not b:
        return a
    if a[-1][1] + 1 < b[0][0]:  # the common case in a fold: newer CNs after all known ones
        return a + b
    if a[-1][1] + 1 == b[0][0]:  # ... or right after them: the last range grows
        return (*a[:-1], (a[-1][0], b[0][1]), *b[1:])
    if b[-1][1] + 1 < a[0][0]:
        return b + a
    if b[-1][1] + 1 == a[0][0]:
        return (*b[:-1], (b[-1][0], a[0][1]), *a[1:])
    if len(a) + len(b) <= 16:  # small lists: the built-in sort beats a Python-level merge
        return _merge_sorted(sorted(a + b))
    return _merge_sorted(heapq.merge(a, b))


def _intersection(a: Ranges, b: Ranges) -> Ranges:
    out: list[Range] = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _difference(a: Ranges, b: Ranges) -> Ranges:
    if not a or not b or b[0][0] > a[-1][1] or b[-1][1] < a[0][0]:  # nothing in common
        return a
    out: list[Range] = []
    j = 0
    nb = len(b)
    for lo, hi in a:
        while j < nb and b[j][1] < lo:
            j += 1
        k = j
        cur = lo
        while k < nb and b[k][0] <= hi:
            if b[k][0] > cur:
                out.append((cur, b[k][0] - 1))
            cur = max(cur, b[k][1] + 1)
            if cur > hi:
                break
            k += 1
        if cur <= hi:
            out.append((cur, hi))
    return tuple(out)


def _count(r: Ranges) -> int:
    return sum(hi - lo + 1 for lo, hi in r)


class CNSet:
    """An immutable set of CNs, ``origin -> ranges``; no origin maps to an empty tuple."""

    __slots__ = ("_by_origin", "_count", "_hash", "_text")

    def __init__(self, by_origin: Mapping[str, Ranges] | None = None, *, _trusted: bool = False):
        if by_origin is None:
            self._by_origin: dict[str, Ranges] = {}
        elif _trusted:
            self._by_origin = dict(by_origin)
        else:
            self._by_origin = {}
            for origin, ranges in by_origin.items():
                checked = []
                for lo, hi in ranges:
                    _check_range(origin, lo, hi)
                    checked.append((lo, hi))
                norm = _normalise(checked)
                if norm:
                    self._by_origin[origin] = norm
        self._text: str | None = None
        self._hash: int | None = None
        self._count: int | None = None

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def empty(cls) -> CNSet:
        return EMPTY

    @classmethod
    def single(cls, origin: str, cn: int) -> CNSet:
        _check_range(origin, cn, cn)
        return cls({origin: ((cn, cn),)}, _trusted=True)

    @classmethod
    def of(cls, origin: str, lo: int, hi: int) -> CNSet:
        _check_range(origin, lo, hi)
        return cls({origin: ((lo, hi),)}, _trusted=True)

    @classmethod
    def parse(cls, text: str) -> CNSet:
        """Read canonical text (or any order / overlap of the same grammar) into a set."""
        if not isinstance(text, str):
            raise CNSetError(f"CN set text must be a string, not {type(text).__name__}")
        text = text.strip()
        if not text:
            return EMPTY
        acc: dict[str, list[Range]] = {}
        for part in text.split(";"):
            part = part.strip()
            if not part:
                raise CNSetError(f"empty origin section in CN set {text!r}")
            origin, sep, body = part.partition(":")
            origin = origin.strip()
            if not sep or not origin:
                raise CNSetError(f"CN set section {part!r} lacks 'ORIGIN:'")
            for item in body.split(","):
                item = item.strip()
                if not item:
                    raise CNSetError(f"empty range in CN set section {part!r}")
                lo_s, dash, hi_s = item.partition("-")
                try:
                    lo = decimal_int(lo_s)
                    hi = decimal_int(hi_s) if dash else lo
                except ValueError:
                    raise CNSetError(f"range {item!r} is not 'N' or 'LO-HI'") from None
                _check_range(origin, lo, hi)
                acc.setdefault(origin, []).append((lo, hi))
        return cls({o: _normalise(r) for o, r in acc.items()}, _trusted=True)

    @classmethod
    def parse_canonical(cls, text: str) -> CNSet:
        """``parse`` for text that ``text()`` wrote (the job's event columns): read without
        sorting or merging, and kept as the set's text, so a message's set reaching many groups
        is never formatted again. Any other text (ranges out of order, spaces, leading zeros) is
        read by ``parse``: the set is the same either way."""
        if not text:
            return EMPTY
        if not _CANONICAL_SHAPE.fullmatch(text):
            return cls.parse(text)
        by_origin: dict[str, Ranges] = {}
        previous = ""
        for part in text.split(";"):
            origin, _, body = part.partition(":")
            if origin <= previous:
                return cls.parse(text)
            previous = origin
            ranges = []
            last = -1
            for item in body.split(","):
                lo_s, dash, hi_s = item.partition("-")
                lo = int(lo_s)
                hi = int(hi_s) if dash else lo
                if lo <= last + 1 or hi < lo or (dash and hi == lo):
                    return cls.parse(text)
                ranges.append((lo, hi))
                last = hi
            by_origin[origin] = tuple(ranges)
        s = cls(by_origin, _trusted=True)
        s._text = text
        return s

    @classmethod
    def from_json(cls, value: Any) -> CNSet:
        """Read either form of the data contract: canonical text or ``{"S": [[lo, hi], ...]}``."""
        if isinstance(value, str):
            return cls.parse(value)
        if not isinstance(value, dict):
            raise CNSetError(f"CN set must be text or an object, not {type(value).__name__}")
        acc: dict[str, list[Range]] = {}
        for origin, ranges in value.items():
            if not isinstance(origin, str) or not origin:
                raise CNSetError("CN set origin must be a non-empty string")
            if not isinstance(ranges, list):
                raise CNSetError(f"ranges of origin {origin!r} must be a list")
            for r in ranges:
                if (
                    not isinstance(r, list)
                    or len(r) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in r)
                ):
                    raise CNSetError(f"range {r!r} of origin {origin!r} must be [lo, hi] integers")
                _check_range(origin, r[0], r[1])
                acc.setdefault(origin, []).append((r[0], r[1]))
        return cls({o: _normalise(r) for o, r in acc.items()}, _trusted=True)

    # -- views --------------------------------------------------------------------------------
    def to_json(self) -> dict[str, list[list[int]]]:
        return {o: [[lo, hi] for lo, hi in self._by_origin[o]] for o in sorted(self._by_origin)}

    def text(self) -> str:
        if self._text is None:
            parts = []
            for origin in sorted(self._by_origin):
                rs = ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self._by_origin[origin])
                parts.append(f"{origin}:{rs}")
            self._text = ";".join(parts)
        return self._text

    __str__ = text

    def __repr__(self) -> str:
        return f"CNSet({self.text()!r})"

    def origins(self) -> list[str]:
        return sorted(self._by_origin)

    def ranges(self, origin: str) -> Ranges:
        return self._by_origin.get(origin, ())

    def items(self) -> Iterator[tuple[str, Ranges]]:
        for origin in sorted(self._by_origin):
            yield origin, self._by_origin[origin]

    def count(self) -> int:
        if self._count is None:  # immutable: counted once (each history row asks)
            self._count = sum(_count(r) for r in self._by_origin.values())
        return self._count

    def max_cn(self, origin: str) -> int | None:
        r = self._by_origin.get(origin)
        return r[-1][1] if r else None

    def __len__(self) -> int:
        return self.count()

    def __bool__(self) -> bool:
        return bool(self._by_origin)

    def __contains__(self, cn: tuple[str, int]) -> bool:
        origin, n = cn
        for lo, hi in self._by_origin.get(origin, ()):
            if lo <= n <= hi:
                return True
            if lo > n:
                break
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CNSet) and self._by_origin == other._by_origin

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self.text())
        return self._hash

    # -- algebra ------------------------------------------------------------------------------
    def union(self, other: CNSet) -> CNSet:
        if not other._by_origin:
            return self
        if not self._by_origin:
            return other
        out = dict(self._by_origin)
        for origin, rs in other._by_origin.items():
            mine = out.get(origin)
            out[origin] = _union(mine, rs) if mine else rs
        return CNSet(out, _trusted=True)

    def intersection(self, other: CNSet) -> CNSet:
        out = {}
        small, big = (self, other) if len(self._by_origin) <= len(other._by_origin) else (other, self)
        for origin, rs in small._by_origin.items():
            theirs = big._by_origin.get(origin)
            if theirs:
                both = _intersection(rs, theirs)
                if both:
                    out[origin] = both
        return CNSet(out, _trusted=True) if out else EMPTY

    def difference(self, other: CNSet) -> CNSet:
        if not other._by_origin or not self._by_origin:
            return self
        out = {}
        changed = False
        for origin, rs in self._by_origin.items():
            theirs = other._by_origin.get(origin)
            if theirs:
                left = _difference(rs, theirs)
                changed = changed or left != rs
                if left:
                    out[origin] = left
            else:
                out[origin] = rs
        if not changed:
            return self
        return CNSet(out, _trusted=True) if out else EMPTY

    def union_disjoint(self, other: CNSet) -> CNSet:
        """The union with a set that shares no CN with this one (the caller knows, e.g. it is a
        difference against this set): its count is the sum, not recounted."""
        out = self.union(other)
        if out._count is None and self._count is not None and other._count is not None:
            out._count = self._count + other._count
        return out

    def add(self, origin: str, cn: int) -> CNSet:
        """This set with one more CN (the common case: a local change)."""
        _check_range(origin, cn, cn)
        rs = self._by_origin.get(origin)
        if rs and rs[-1][1] + 1 == cn:  # fast path: the next CN of a contiguous run
            out = dict(self._by_origin)
            out[origin] = (*rs[:-1], (rs[-1][0], cn))
            return CNSet(out, _trusted=True)
        return self.union(CNSet({origin: ((cn, cn),)}, _trusted=True))

    def issubset(self, other: CNSet) -> bool:
        for origin, rs in self._by_origin.items():
            theirs = other._by_origin.get(origin)
            if not theirs or _difference(rs, theirs):
                return False
        return True

    def is_strict_subset(self, other: CNSet) -> bool:
        return self.issubset(other) and self != other

    def isdisjoint(self, other: CNSet) -> bool:
        return not self.intersection(other)

    __or__ = union
    __and__ = intersection
    __sub__ = difference
    __le__ = issubset

    def __lt__(self, other: CNSet) -> bool:
        return self.is_strict_subset(other)


def _check_range(origin: str, lo: Any, hi: Any) -> None:
    if not isinstance(lo, int) or not isinstance(hi, int) or isinstance(lo, bool) or isinstance(hi, bool):
        raise CNSetError(f"range of {origin!r} must be integers")
    if lo < 1:
        raise CNSetError(f"CN {_show(lo)} of {origin!r} is below 1")
    if lo > hi:
        raise CNSetError(f"range {_show(lo)}-{_show(hi)} of {origin!r} has lo > hi")


def _show(n: int) -> str:
    """A number for a message: one of thousands of digits as its size (``str`` may refuse it)."""
    return str(n) if -(10**100) < n < 10**100 else f"<a {n.bit_length()}-bit number>"


def union_all(sets: Iterable[CNSet]) -> CNSet:
    out = EMPTY
    for s in sets:
        out = out.union(s)
    return out


EMPTY = CNSet()
