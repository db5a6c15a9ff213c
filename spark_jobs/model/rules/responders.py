"""The responder list a status request should name (seed 001): up to three stores from six
groups, plus the oldest copy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GROUP_OLDEST = "oldest"
MAX_RESPONDERS = 3


@dataclass(frozen=True, slots=True)
class ResponderCandidate:
    """Another replica of the folder, as the requester sees it when it sends the request."""

    name: str
    same_site: bool
    cost: int | None  # None: no affinity (only for other sites)
    backfilled_at: int | None  # last backfill request to it, or group-1 pick (None: never)
    heard: bool  # the requester has processed a message from it about the folder
    mean_transit_us: int | None
    believed_count: int  # CNs of believed(R, F, T); 0 when there is no row
    last_message_at: int | None


@dataclass(frozen=True, slots=True)
class Responder:
    name: str
    position: int  # 1-based
    group: str  # "1".."6" or "oldest"


def _groups(others: Sequence[ResponderCandidate]) -> list[list[ResponderCandidate]]:
    same = [c for c in others if c.same_site]
    costed = [c for c in others if not c.same_site and c.cost is not None]
    uncosted = [c for c in others if not c.same_site and c.cost is None]
    by_name = lambda c: c.name  # noqa: E731
    by_cost = lambda c: (c.cost, c.name)  # noqa: E731
    return [
        # 1. same site, backfilled from before, longest ago first
        sorted((c for c in same if c.backfilled_at is not None), key=lambda c: (c.backfilled_at, c.name)),
        # 2. other sites with a cost, heard from about the folder, lowest cost first
        sorted((c for c in costed if c.heard), key=by_cost),
        # 3. same site, the rest
        sorted(same, key=by_name),
        # 4. other sites with a cost, the rest, lowest cost first
        sorted(costed, key=by_cost),
        # 5. other sites with no cost and a known mean transit time, shortest first
        sorted(
            (c for c in uncosted if c.mean_transit_us is not None),
            key=lambda c: (c.mean_transit_us, c.name),
        ),
        # 6. other sites, the rest, by name
        sorted((c for c in others if not c.same_site), key=by_name),
    ]


def responder_list(others: Sequence[ResponderCandidate]) -> list[Responder]:
    """Walk the groups taking stores not yet taken until three are taken, then add the oldest
    copy (fewest believed CNs; ties: earliest last message, never first, then name)."""
    taken: list[Responder] = []
    names: set[str] = set()
    for number, group in enumerate(_groups(others), start=1):
        for c in group:
            if len(taken) >= MAX_RESPONDERS:
                break
            if c.name not in names:
                names.add(c.name)
                taken.append(Responder(c.name, len(taken) + 1, str(number)))
    if others:
        oldest = min(
            others,
            key=lambda c: (
                c.believed_count,
                c.last_message_at is not None,
                c.last_message_at or 0,
                c.name,
            ),
        )
        if oldest.name not in names:
            taken.append(Responder(oldest.name, len(taken) + 1, GROUP_OLDEST))
    return taken
