"""A plan as the operator writes it, and its result against the baseline forecast
(``pfscope plan``'s actions and verdict; "A plan" in the replication model, the data contract's
``pfscope plan``).

Actions are read from text: ``down STORE [at T] [until T]`` and ``up STORE [at T]``, times RFC
3339 or relative to the as-of (``+6h``, ``+2d``, ``+30m``); the replica-list, decommission and
restore actions are read but refused until the play knows them. A bad action is a
:class:`PlanError`: one line, exit status 2.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.model.forecast.actions import Action, StoreStatus, down_for_maintenance
from pfscope.spark_jobs.model.timeutil import DAY, HOUR, MINUTE, TimeError, parse_ts

_RELATIVE = re.compile(r"\+(\d+)([mhd])")
_UNIT = {"m": MINUTE, "h": HOUR, "d": DAY}
#: actions of the data contract the play does not know yet
_NOT_YET = ("remove", "add", "decommission", "restore")


class PlanError(OperatorError):
    """An action the planner cannot take: said in one line."""


def parse_time(text: str, as_of: int) -> int:
    """``+6h`` (after the as-of) or RFC 3339; never before the as-of (the run knows what happened)."""
    m = _RELATIVE.fullmatch(text)
    if m:
        return as_of + int(m.group(1)) * _UNIT[m.group(2)]
    try:
        at = parse_ts(text)
    except TimeError:
        raise PlanError(
            f"time {text!r} is neither RFC 3339 nor relative to the as-of (+30m, +6h, +2d)"
        ) from None
    if at < as_of:
        raise PlanError(f"time {text} is before the run's as-of: a plan starts at the as-of")
    return at


def parse_action(text: str, as_of: int, stores: Collection[str]) -> list[Action]:
    """One ``--action``: ``down STORE [at T] [until T]`` or ``up STORE [at T]`` (T defaults to
    the as-of)."""
    words = text.split()
    if not words:
        raise PlanError("an empty action: say down STORE [at T] [until T] or up STORE [at T]")
    verb = words[0].lower()
    if verb in _NOT_YET:
        raise PlanError(f"{text!r}: the planner does not play {verb!r} yet (down and up it does)")
    if verb not in ("down", "up") or len(words) < 2:
        raise PlanError(f"{text!r}: say down STORE [at T] [until T] or up STORE [at T]")
    store = words[1]
    if store not in stores:
        raise PlanError(f"{text!r}: the run has no store named {store!r}")
    times = _times(text, words[2:], ("at", "until") if verb == "down" else ("at",))
    start = parse_time(times["at"], as_of) if "at" in times else as_of
    if verb == "up":
        return [StoreStatus(start, store, True)]
    until = parse_time(times["until"], as_of) if "until" in times else None
    try:
        return down_for_maintenance(store, start, until)
    except ValueError as e:
        raise PlanError(f"{text!r}: {e}") from None


def _times(text: str, words: list[str], allowed: tuple[str, ...]) -> dict[str, str]:
    if len(words) % 2:
        raise PlanError(f"{text!r}: each of {', '.join(allowed)} takes a time")
    out: dict[str, str] = {}
    for key, value in zip(words[::2], words[1::2], strict=True):
        if key not in allowed or key in out:
            raise PlanError(f"{text!r}: {key!r} is not one of {', '.join(allowed)} (each at most once)")
        out[key] = value
    return out


@dataclass
class PlanResult:
    """A plan against the baseline: ``changed``, the replicas whose ``in_sync_at`` it moves (store,
    fid, before, after); ``settles_at``, when every replica it touches is in sync (None: one never
    is, within the horizon); ``safe`` and its ``reasons``."""

    changed: list[tuple[str, str, int | None, int | None]] = field(default_factory=list)
    settles_at: int | None = None
    reasons: list[str] = field(default_factory=list)

    @property
    def safe(self) -> bool:
        return not self.reasons


def compare(baseline: Sequence[Mapping[str, Any]], planned: Sequence[Mapping[str, Any]]) -> PlanResult:
    """The forecast under a plan beside the baseline (the ``forecast`` rows of each): not safe when
    the plan leaves a replica unable to get in sync that the baseline gets in sync (content put at
    risk is the other reason, weighed where the plan's actions can put it there)."""
    before = {(r["store"], r["fid"]): r.get("in_sync_at") for r in baseline}
    after = {(r["store"], r["fid"]): r.get("in_sync_at") for r in planned}
    out = PlanResult()
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if b != a:
            out.changed.append((key[0], key[1], b, a))
            if b is not None and a is None:
                out.reasons.append(
                    f"{key[0]} would not get in sync on {key[1]} within 14 days (it does without the plan)"
                )
    settled = [a for _, _, _, a in out.changed if a is not None]
    if len(settled) == len(out.changed):
        out.settles_at = max(settled, default=None)
    return out
