"""What happened, read from a published run: the frames the incidents and the outages' effects
are built from, and both built once per run (cached like every overview figure).

The reads live here rather than in :mod:`app.data` (which they would push past a readable
size); the logic is pure, in :mod:`app.figures.incidents`, :mod:`.mail` and :mod:`.effects`.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from pfscope.app import figures as f
from pfscope.app.data import RunData, empty_frame, read_table
from pfscope.app.figures import effects as fx
from pfscope.app.figures import incidents as inc
from pfscope.app.figures import mail

TRANSIT_COLUMNS = ["sender", "recipient", "longest_transit_s"]


def entries_overdue(data: RunData) -> pd.DataFrame:
    """Every backfill entry (no CN-set text) with ``overdue_at``: when its second request went
    out (NaT: never overdue; :func:`figures.overdue_since`, as the trend counts them)."""

    def compute() -> pd.DataFrame:
        cols = ["entry_id", "observer", "fid", "opened_at", "opened_by", "state", "closed_at", "requests"]
        entries = read_table(data.run, "backfill_entries", [*cols, "last_request_at"])
        later = pc.field("attempt") >= 2
        attempts = pd.concat(
            [
                read_table(data.run, t, ["entry_id", "attempt", "at"], where=later)
                for t in ("backfill_requests", "backfill_candidates")
            ],
            ignore_index=True,
        )
        return entries.assign(overdue_at=f.overdue_since(entries, attempts))

    return data.memo("entries_overdue", (), compute).copy()


def request_sources(data: RunData) -> pd.DataFrame:
    """Every backfill request's entry, observer, attempt, time and source (no CN-set text)."""
    return data.table("backfill_requests", ["entry_id", "observer", "fid", "attempt", "at", "source"])


def changed_lists(data: RunData) -> pd.DataFrame:
    """The ``replica_lists`` rows of the folders whose list changed in the log, the topology's
    list included (a change is told against the list before it)."""

    def compute() -> pd.DataFrame:
        cols = ["fid", "at", "seq", "replicas"]
        changed = read_table(data.run, "replica_lists", ["fid"], where=pc.field("at").is_valid())
        if changed.empty:
            return empty_frame("replica_lists", cols)
        return read_table(data.run, "replica_lists", cols, filters={"fid": sorted(set(changed["fid"]))})

    return data.memo("changed_lists", (), compute).copy()


def mail_flow(data: RunData) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One scan of ``messages``: (the deliveries never processed by the as-of: msg, fid, sender,
    type, sent_at, recipient; the deliveries sent to a store while it was down, processed or not:
    msg, recipient, sent_at, processed_at)."""

    def compute() -> tuple[pd.DataFrame, pd.DataFrame]:
        cols = ["msg", "fid", "sender", "type", "sent_at", "recipient", "processed_at"]
        path = data.run.table_path("messages")
        if not path.exists():
            return empty_frame("messages", cols[:-1]), empty_frame("messages", HELD_COLUMNS)
        arrow = ds.dataset(str(path), format="parquet").to_table(columns=cols)
        never = arrow.filter(pc.is_null(arrow["processed_at"])).drop_columns(["processed_at"]).to_pandas()
        never["sent_at"] = pd.to_datetime(never["sent_at"], utc=True)
        return never, _held(arrow, data.store_periods())

    never, held = data.memo("mail_flow", (), compute)
    return never.copy(), held.copy()


def pair_transits(data: RunData) -> pd.DataFrame:
    """Each sender and recipient's longest transit (sender, recipient, longest_transit_s): the
    published ``transits``, or for a run published before it, the same taken from ``messages``
    (the longest ``processed_at - sent_at`` of what the recipient processed from the sender)."""
    if "transits" not in data.missing():
        return data.transits()

    def compute() -> pd.DataFrame:
        path = data.run.table_path("messages")
        if not path.exists():
            return pd.DataFrame({c: pd.Series(dtype=object) for c in TRANSIT_COLUMNS})
        done = ds.dataset(str(path), format="parquet").to_table(
            columns=["sender", "recipient", "sent_at", "processed_at"],
            filter=pc.field("processed_at").is_valid(),
        )
        unit = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}[done.schema.field("sent_at").type.unit]
        took = pc.subtract(done["processed_at"].cast(pa.int64()), done["sent_at"].cast(pa.int64()))
        pairs = (
            pa.table({"sender": done["sender"], "recipient": done["recipient"], "transit": took})
            .group_by(["sender", "recipient"])
            .aggregate([("transit", "max")])
            .to_pandas()
        )
        return pd.DataFrame(
            {
                "sender": pairs["sender"],
                "recipient": pairs["recipient"],
                "longest_transit_s": pairs["transit_max"].astype("float64") / unit,
            },
            columns=TRANSIT_COLUMNS,
        )

    return data.memo("pair_transits", (), compute).copy()


HELD_COLUMNS = ["msg", "recipient", "sent_at", "processed_at"]


def _held(arrow: pa.Table, periods: pd.DataFrame) -> pd.DataFrame:
    """The deliveries sent to a store while it was down (by ``store_periods``)."""
    if periods.empty:
        return empty_frame("messages", HELD_COLUMNS)
    sent_type = arrow.schema.field("sent_at").type
    keep = None
    for store, start, end in zip(periods["store"], periods["down_at"], periods["up_at"], strict=True):
        since = pa.scalar(pd.Timestamp(start).tz_convert(None), sent_type)
        cond = pc.and_(pc.equal(arrow["recipient"], str(store)), pc.greater_equal(arrow["sent_at"], since))
        if end is not None and not pd.isna(end):
            cond = pc.and_(
                cond, pc.less(arrow["sent_at"], pa.scalar(pd.Timestamp(end).tz_convert(None), sent_type))
            )
        keep = cond if keep is None else pc.or_(keep, cond)
    frame = arrow.filter(keep).select(HELD_COLUMNS).to_pandas()
    for col in ("sent_at", "processed_at"):
        frame[col] = pd.to_datetime(frame[col], utc=True)
    return frame


def mail_states(data: RunData) -> pd.DataFrame:
    """Every delivery never processed, with its state at the as-of (in transit, queued, expired)."""

    def compute() -> pd.DataFrame:
        never, _ = mail_flow(data)
        return mail.mail_states(never, pair_transits(data), data.summary().get("as_of"))

    return data.memo("mail_states", (), compute).copy()


def outage_effects(data: RunData, store: str | None = None) -> list[fx.OutageEffects]:
    """What each down period caused (of one store, or of every store), newest first."""

    def compute() -> list[fx.OutageEffects]:
        periods = data.store_periods(store=store)
        if periods.empty:
            return []
        stores = set(periods["store"].astype(str))
        entries = entries_overdue(data)
        returning = entries[entries["observer"].isin(stores)]
        replicas = data.replica_summary()
        at_risk = (
            pd.to_numeric(replicas["at_risk_count"], errors="coerce")
            .fillna(0)
            .groupby(replicas["store"])
            .sum()
        )
        missing = data.missing()
        return fx.outage_effects(
            periods,
            data.summary().get("as_of"),
            request_sources(data),
            returning,
            mail_flow(data)[1],
            None
            if "at_risk_count" in missing.get("replicas", [])
            else {str(k): int(v) for k, v in at_risk.items()},
            data.next_requests(),
            mail_known="messages" not in missing,
        )

    return data.memo("outage_effects", (store,), compute)


def incidents(data: RunData) -> inc.Incidents:
    """The organisation's incidents in time order (outages with what they caused, replica-list
    changes, mail never processed, entries overdue)."""

    def compute() -> inc.Incidents:
        as_of = data.summary().get("as_of")
        periods = data.store_periods()
        effects = {(e.store, e.down_at): e.caused for e in outage_effects(data)}
        outages = inc.outage_incidents(periods, as_of, effects)
        changes = inc.list_changes(changed_lists(data))
        paths = data.folders().set_index("fid")["path"].to_dict() if not changes.empty else {}
        lists = inc.list_incidents(changes, paths)
        lost, deliveries = mail.mail_incidents(mail_states(data), periods)
        entries = entries_overdue(data)
        overdue = inc.overdue_incidents(entries, inc.first_request_sources(request_sources(data)))
        events = {
            "outage": len(periods),
            "lists": len(changes),
            "mail": deliveries,
            "overdue": int(entries["overdue_at"].notna().sum()),
        }
        absent = [t for tables in inc.KIND_TABLES.values() for t in tables if t in data.missing()]
        unknown = inc.unknown_kinds(t for t in absent if not data.run.table_path(t).exists())
        return inc.timeline([*outages, *lists, *lost, *overdue], events, unknown)

    return data.memo("incidents", (), compute)
