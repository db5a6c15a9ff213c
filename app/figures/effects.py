"""What an outage caused, per down period, from the published tables (what is so, from every
store's log; nothing here is a store's belief):

- the entries of other stores whose requests went to it while it was down (and, while it is
  still down, those whose next request will, and its own entries waiting for it);
- the entries it opened once back, on mail sent to it while it was down (``opened_by``);
- the mail to it that expired while it was down: sent while it was down, never processed, and 48
  hours old (Exchange's queue expiry) before it came back (mail sent before is not counted: it
  may as well have been lost on the way);
- while it is still down, the content at risk: what only it holds (``replicas.at_risk_count``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from pfscope.app.figures.mail import EXPIRY
from pfscope.app.figures.outages import outage_text, utc_time
from pfscope.app.figures.text import plural


@dataclass(frozen=True)
class OutageEffects:
    """One down period and what followed from it."""

    store: str
    down_at: pd.Timestamp
    up_at: pd.Timestamp | None  # None: still down at the as-of
    asked: int  # entries of other stores that sent it a request while it was down
    asked_by: tuple[str, ...]
    will_ask: int  # still down: entries of other stores whose next request goes to it
    waiting: int  # still down: its own open entries, whose requests wait for it to be back
    reopened: int  # entries it opened once back, on mail sent while it was down
    expired: int  # messages sent to it while it was down that expired before it came back
    at_risk: int | None  # still down: CNs only it holds (None: it is back, or unknown)
    mail_known: bool = True  # False: a run published without ``messages`` (reopened, expired unknown)
    risk_known: bool = True  # False: a run published without the content at risk

    @property
    def caused(self) -> str:
        """``12 entries at other stores sent it requests while it was down, 3 messages to it expired``."""
        parts = []
        if self.asked:
            parts.append(
                f"{plural(self.asked, 'entry', 'entries')} at other stores sent it requests while it was down"
            )
        if self.will_ask:
            parts.append(f"{plural(self.will_ask, 'entry', 'entries')} at other stores will ask it next")
        if self.waiting:
            parts.append(f"{plural(self.waiting, 'entry', 'entries')} of its own wait for it to be back")
        if self.reopened:
            parts.append(
                f"it opened {plural(self.reopened, 'entry', 'entries')} once back, on mail held for it while it was down"
            )
        if self.expired:
            parts.append(
                f"{plural(self.expired, 'message')} sent to it while it was down expired (48 h queue expiry)"
            )
        if not self.mail_known:
            parts.append("the mail held for it is unknown (this run has no messages)")
        elif not parts:
            parts.append(
                "no entry asked it, no mail sent to it while it is down has expired yet"
                if self.up_at is None
                else "no entry asked it, it opened none on mail held for it, no mail to it expired"
            )
        if self.up_at is None and not self.risk_known:
            parts.append("its content at risk is unknown (this run has no content at risk)")
        elif self.at_risk is not None:
            parts.append(
                f"content at risk: {plural(self.at_risk, 'CN')} only it holds"
                if self.at_risk
                else "no content at risk (nothing only it holds)"
            )
        return ", ".join(parts)

    def text(self, as_of: Any) -> str:
        """``down 50 h, Tue 11-03 06:00 to Thu 11-05 08:00 (UTC): ...``."""
        return f"{outage_text(self.down_at, self.up_at, as_of)}: {self.caused}"


def _between(times: pd.Series, start: pd.Timestamp, stop: pd.Timestamp | None) -> pd.Series:
    return (times >= start) & ((times < stop) if stop is not None else True)


def outage_effects(
    periods: pd.DataFrame,
    as_of: Any,
    requests: pd.DataFrame,
    entries: pd.DataFrame,
    held: pd.DataFrame,
    at_risk: dict[str, int] | None = None,
    next_requests: pd.DataFrame | None = None,
    mail_known: bool = True,
) -> list[OutageEffects]:
    """Per down period (``store``, ``down_at``, ``up_at``), newest first. ``requests``:
    entry_id, observer, source, at (``backfill_requests``); ``entries``: entry_id, observer,
    opened_at, opened_by; ``held``: msg, recipient, sent_at, processed_at (the deliveries sent to
    a store while it was down); ``at_risk``: store -> CNs only it holds; ``next_requests``:
    entry_id, observer, source (``next_requests``); ``at_risk`` None, ``mail_known`` False: the run
    has not those figures (they read as unknown, never as zero)."""
    ref = utc_time(as_of)
    req_at = pd.to_datetime(requests["at"], utc=True)
    opened = pd.to_datetime(entries["opened_at"], utc=True)
    held_at = pd.to_datetime(held["sent_at"], utc=True)
    downs: dict[str, list[pd.Timestamp]] = {}
    for s, d in zip(periods["store"], periods["down_at"], strict=True):
        if (t := utc_time(d)) is not None:
            downs.setdefault(str(s), []).append(t)
    out = []
    for r in periods.to_dict("records"):
        store, start, end = str(r["store"]), utc_time(r.get("down_at")), utc_time(r.get("up_at"))
        if start is None:
            continue
        stop = end if end is not None else ref
        asked = requests[
            (requests["source"] == store) & (requests["observer"] != store) & _between(req_at, start, stop)
        ]
        will_ask = waiting = 0
        if end is None and next_requests is not None and not next_requests.empty:
            nxt = next_requests[(next_requests["source"] == store) & (next_requests["observer"] != store)]
            will_ask = int(nxt["entry_id"].nunique())
            waiting = int(next_requests.loc[next_requests["observer"] == store, "entry_id"].nunique())
        mask = (held["recipient"] == store) & _between(held_at, start, stop)
        kept = held[mask]
        reopened = 0
        if end is not None:
            later = [d for d in downs.get(store, []) if d > end]
            mine = entries[
                (entries["observer"] == store) & _between(opened, end, min(later) if later else None)
            ]
            reopened = int(mine["opened_by"].isin(set(kept["msg"])).sum())
        expired = 0
        if stop is not None:
            gone = kept[kept["processed_at"].isna() & (held_at[mask] + EXPIRY <= stop)]
            expired = int(gone["msg"].nunique())
        out.append(
            OutageEffects(
                store=store,
                down_at=start,
                up_at=end,
                asked=int(asked["entry_id"].nunique()),
                asked_by=tuple(sorted(set(asked["observer"].astype(str)))),
                will_ask=will_ask,
                waiting=waiting,
                reopened=reopened,
                expired=expired,
                at_risk=int(at_risk.get(store, 0)) if end is None and at_risk is not None else None,
                mail_known=mail_known,
                risk_known=at_risk is not None,
            )
        )
    return sorted(out, key=lambda e: (e.down_at, e.store), reverse=True)
