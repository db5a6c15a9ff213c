"""Backfill time-outs (seed 003, "Default replication event times")."""

from __future__ import annotations

from pfscope.spark_jobs.model.timeutil import HOUR, MINUTE

#: requests already made -> (local, remote) wait before the next request
_TABLE = {
    0: (6 * HOUR, 12 * HOUR),  # first request
    1: (12 * HOUR, 24 * HOUR),  # second request (first retry), after the first
}
_LATER = (24 * HOUR, 48 * HOUR)  # every later request, after the previous
_NEW_REPLICA_FIRST = (15 * MINUTE, 12 * HOUR)

#: Exchange expires replication mail still queued this long after it was sent (the simulator
#: drops it then; rules.transit calls older unprocessed mail expired)
QUEUE_EXPIRY = 48 * HOUR


def backfill_timeout(requests_made: int, local: bool, new_replica: bool) -> int:
    """How long (microseconds) an entry waits for its next request, counted from its opening
    (no request yet) or from its last request."""
    if requests_made == 0 and new_replica:
        pair = _NEW_REPLICA_FIRST
    else:
        pair = _TABLE.get(requests_made, _LATER)
    return pair[0] if local else pair[1]
