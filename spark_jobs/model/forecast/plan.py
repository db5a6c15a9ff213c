"""A plan as the operator writes it (``pfscope plan``'s ``--action``, the ``/plan`` page's URL;
the data contract's ``pfscope plan``):

- ``down STORE [at T] [until T]``, ``up STORE [at T]``;
- ``remove STORE from FID [at T]``, ``add STORE to FID [at T]``;
- ``decommission STORE [at T] [immediately]`` (without ``immediately``: down once nothing of it
  is at risk);
- ``restore STORE from B [at T]``.

Times are RFC 3339 or relative to the as-of (``+30m``, ``+6h``, ``+2d``); T defaults to the
as-of. A bad action is a :class:`PlanError`: one line, exit status 2.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.model.forecast.actions import (
    Action,
    Decommission,
    ReplicaChange,
    Restore,
    StoreStatus,
    down_for_maintenance,
    in_order,
)
from pfscope.spark_jobs.model.timeutil import DAY, HOUR, MINUTE, TimeError, format_ts, parse_ts

_RELATIVE = re.compile(r"\+(\d+)([mhd])")
_UNIT = {"m": MINUTE, "h": HOUR, "d": DAY}
FORMS = (
    "down STORE [at T] [until T]",
    "up STORE [at T]",
    "remove STORE from FID [at T]",
    "add STORE to FID [at T]",
    "decommission STORE [at T] [immediately]",
    "restore STORE from B [at T]",
)


#: the most actions one plan takes (each touches every folder of its store)
MAX_ACTIONS = 50


class PlanError(OperatorError):
    """An action the planner cannot take: said in one line."""


@dataclass(frozen=True)
class Known:
    """What the run knows that an action is checked against: its as-of, its stores, each folder's
    replica list at the as-of, and when its log starts (a backup before it is not known)."""

    as_of: int
    stores: Collection[str]
    lists: Mapping[str, tuple[str, ...]]
    log_start: int | None = None


def parse_time(text: str, as_of: int) -> int:
    """``+6h`` (after the as-of) or RFC 3339; never before the as-of (the run knows what happened)."""
    m = _RELATIVE.fullmatch(text)
    if m:
        return as_of + int(m.group(1)) * _UNIT[m.group(2)]
    at = _absolute(text)
    if at < as_of:
        raise PlanError(f"time {text} is before the run's as-of: a plan starts at the as-of")
    return at


def _absolute(text: str) -> int:
    try:
        return parse_ts(text)
    except TimeError:
        raise PlanError(
            f"time {text!r} is neither RFC 3339 nor relative to the as-of (+30m, +6h, +2d)"
        ) from None


def parse_plan(texts: Iterable[str], known: Known) -> list[Action]:
    """Every ``--action`` of a plan, and its list changes checked in time order (a replica added
    must not be on the list then, a replica removed must be)."""
    texts = list(texts)
    if len(texts) > MAX_ACTIONS:
        raise PlanError(f"a plan of {len(texts)} actions: a plan takes at most {MAX_ACTIONS}")
    actions = [a for text in texts for a in parse_action(text, known)]
    lists = {fid: set(stores) for fid, stores in known.lists.items()}
    for a in in_order(actions):
        if isinstance(a, ReplicaChange):
            listed = lists[a.fid]
            if a.added and a.store in listed:
                raise PlanError(f"add {a.store} to {a.fid}: {a.store} is on its list already then")
            if not a.added and a.store not in listed:
                raise PlanError(f"remove {a.store} from {a.fid}: {a.store} is not on its list then")
            (listed.add if a.added else listed.discard)(a.store)
    return actions


def parse_action(text: str, known: Known) -> list[Action]:
    """One ``--action``, as one or two actions (a maintenance is a down and an up)."""
    words = text.split()
    if not words:
        raise PlanError(f"an empty action: say {_forms()}")
    verb = words[0].lower()
    reader = _READERS.get(verb)
    if reader is None or len(words) < 2:
        raise PlanError(f"{text!r}: say {_forms()}")
    store = words[1]
    if store not in known.stores:
        raise PlanError(f"{text!r}: the run has no store named {store!r}")
    return reader(text, store, words[2:], known)


def _forms() -> str:
    return ", ".join(FORMS[:-1]) + " or " + FORMS[-1]


def _down(text: str, store: str, rest: list[str], known: Known) -> list[Action]:
    times = _times(text, rest, ("at", "until"))
    start = parse_time(times["at"], known.as_of) if "at" in times else known.as_of
    until = parse_time(times["until"], known.as_of) if "until" in times else None
    try:
        return down_for_maintenance(store, start, until)
    except ValueError as e:
        raise PlanError(f"{text!r}: {e}") from None


def _up(text: str, store: str, rest: list[str], known: Known) -> list[Action]:
    return [StoreStatus(_at(text, rest, known), store, True)]


def _remove(text: str, store: str, rest: list[str], known: Known) -> list[Action]:
    fid = _folder(text, rest, "from", known)
    return [ReplicaChange(_at(text, rest[2:], known), store, fid, False)]


def _add(text: str, store: str, rest: list[str], known: Known) -> list[Action]:
    fid = _folder(text, rest, "to", known)
    return [ReplicaChange(_at(text, rest[2:], known), store, fid, True)]


def _decommission(text: str, store: str, rest: list[str], known: Known) -> list[Action]:
    at_once = bool(rest) and rest[-1].lower() == "immediately"
    return [Decommission(_at(text, rest[:-1] if at_once else rest, known), store, at_once)]


def _restore(text: str, store: str, rest: list[str], known: Known) -> list[Action]:
    if len(rest) < 2 or rest[0].lower() != "from":
        raise PlanError(f"{text!r}: say restore STORE from B [at T] (B: when the backup was taken)")
    taken = parse_time(rest[1], known.as_of) if rest[1].startswith("+") else _absolute(rest[1])
    if taken > known.as_of:
        raise PlanError(
            f"{text!r}: the backup at {rest[1]} is after the run's as-of ({format_ts(known.as_of)})"
        )
    if known.log_start is not None and taken < known.log_start:
        raise PlanError(
            f"{text!r}: the backup at {rest[1]} is before the log starts ({format_ts(known.log_start)}):"
            " pfscope does not know what the store held then"
        )
    return [Restore(_at(text, rest[2:], known), store, taken)]


_READERS = {
    "down": _down,
    "up": _up,
    "remove": _remove,
    "add": _add,
    "decommission": _decommission,
    "restore": _restore,
}


def _folder(text: str, rest: list[str], word: str, known: Known) -> str:
    if len(rest) < 2 or rest[0].lower() != word:
        raise PlanError(f"{text!r}: say {text.split()[0].lower()} STORE {word} FID [at T]")
    fid = rest[1]
    if fid not in known.lists:
        raise PlanError(f"{text!r}: the run has no folder with FID {fid!r}")
    return fid


def _at(text: str, rest: list[str], known: Known) -> int:
    times = _times(text, rest, ("at",))
    return parse_time(times["at"], known.as_of) if "at" in times else known.as_of


def _times(text: str, words: list[str], allowed: tuple[str, ...]) -> dict[str, str]:
    if len(words) % 2:
        raise PlanError(f"{text!r}: each of {', '.join(allowed)} takes a time")
    out: dict[str, str] = {}
    for key, value in zip(words[::2], words[1::2], strict=True):
        if key not in allowed or key in out:
            raise PlanError(f"{text!r}: {key!r} is not one of {', '.join(allowed)} (each at most once)")
        out[key] = value
    return out
