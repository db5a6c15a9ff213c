"""The partition function that streams sorted groups through the fold, without Spark.

Batches are cut in the middle of groups on purpose: a group must be carried across them.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from pfscope.spark_jobs.compute.stream import (
    FOLD_STATE,
    FOLDED_COLUMNS,
    GROUP_START,
    HISTORY,
    OUT_TABLES,
    fold_partitions,
    org_payload,
    row_columns,
)
from pfscope.spark_jobs.model.forecast import Transits
from pfscope.spark_jobs.model.replay import replay
from pfscope.spark_jobs.model.topology import HIERARCHY_FID
from pfscope.spark_jobs.simulator import build, run_scenario
from tests.logbuilder import event_log_from_lines


def stream_rows(topo, log, as_of, after=None, states=None):  # type: ignore[no-untyped-def]
    """The rows Spark would hand the function, as ``compute.group_stream`` makes them and
    ``compute.fold_groups`` sorts them: by folder, each folder's replica-list changes first
    (observer null, once), then each group: a start row where the topology names it, and its
    own events in time order. Also: how many groups only list changes name (folded from those).
    A refresh (``after``: the previous as-of; ``states``: fid -> fold state): the events after
    it, each folder's state first, no start rows."""
    applied = sorted(
        (e for e in log.events if (after is None or e.ts > after) and e.ts <= as_of),
        key=lambda e: (e.ts, e.seq),
    )
    starts = {(s, HIERARCHY_FID) for s in topo.stores} | {
        (s, f.fid) for f in topo.folders.values() for s in f.replicas
    }
    if states is not None:
        starts = set()
    own: dict[tuple[str, str], list] = defaultdict(list)
    lists: dict[str, list] = defaultdict(list)
    for e in applied:
        if e.kind == "replicas":
            lists[e.fid].append(e)
        elif e.kind in ("change", "send", "receive"):
            own[(e.store, e.fid)].append(e)
    groups = starts | set(own)
    rows = []
    for fid in sorted({f for _, f in groups} | set(lists) | set(states or ())):
        if states and fid in states:
            rows.append(
                {"fid": fid, "kind": FOLD_STATE, "ts": -(1 << 63), "seq": -(1 << 63), "blob": states[fid]}
            )
        for e in lists[fid]:
            rows.append(_event_row(None, fid, e))
        for observer in sorted(o for o, f in groups if f == fid):
            if (observer, fid) in starts:
                rows.append(
                    {
                        "observer": observer,
                        "fid": fid,
                        "kind": GROUP_START,
                        "ts": -(1 << 63),
                        "seq": -(1 << 63),
                    }
                )
            rows.extend(_event_row(observer, fid, e) for e in own[(observer, fid)])
    listed_only = {(s, e.fid) for es in lists.values() for e in es for s in e.replicas} - groups
    cols = [
        "observer",
        "fid",
        "kind",
        "ts",
        "seq",
        "cn",
        "msg",
        "type",
        "sender",
        "sent_at",
        "msg_seq",
        "to",
        "cnset",
        "changes",
        "requested",
        "source",
        "responders",
        "replicas",
        "event_store",
        "derived",
        "blob",
    ]
    return pd.DataFrame.from_records(rows, columns=cols), len(listed_only)


def _event_row(observer, fid, e):  # type: ignore[no-untyped-def]
    m = e.message
    row = {"observer": observer, "fid": fid, "kind": e.kind, "ts": e.ts, "seq": e.seq, "cn": e.cn}
    if m is not None:
        row.update(
            msg=m.msg,
            type=m.type,
            sender=m.sender,
            sent_at=m.sent_at,
            msg_seq=m.seq,
            to=list(m.to),
            cnset=m.cnset.text(),
            changes=m.changes.text() if m.changes is not None else None,
            requested=m.requested.text() if m.requested is not None else None,
            source=m.source,
            responders=list(m.responders) if m.responders is not None else None,
            derived=list(m.derived),
        )
    elif e.kind == "change":
        row["derived"] = list(e.derived)
    if e.kind == "replicas":
        row.update(replicas=list(e.replicas or ()), event_store=e.store)
    return row


@pytest.fixture(scope="module")
def demo():  # type: ignore[no-untyped-def]
    sc = build("demo", 2)
    buf = io.StringIO()
    run_scenario(sc, buf, 2)
    log = event_log_from_lines(buf.getvalue().splitlines(), sc.topology)
    return sc.topology, log


def _replica_just_added(topo, log) -> int:  # type: ignore[no-untyped-def]
    """The time of the first list change naming a store that has no group yet: at that as-of,
    the store's group is made of list changes alone."""
    initial = {f.fid: set(f.replicas) for f in topo.folders.values()}
    active = {(e.store, e.fid) for e in log.events if e.kind in ("change", "send", "receive")}
    first_own = {}
    for e in log.in_time_order():
        if e.kind in ("change", "send", "receive"):
            first_own.setdefault((e.store, e.fid), e.ts)
        elif e.kind == "replicas":
            for s in set(e.replicas) - initial.get(e.fid, set()):
                if (s, e.fid) not in active or first_own.get((s, e.fid), e.ts + 1) > e.ts:
                    return e.ts
    raise AssertionError("no replica added in the demo")


@pytest.mark.parametrize("batch", [997, 100_000])
@pytest.mark.parametrize("moment", ["middle", "replica just added"])
def test_stream_equals_replay(demo, batch: int, moment: str) -> None:  # type: ignore[no-untyped-def]
    topo, log = demo
    if moment == "middle":
        as_of = log.last_ts() - 36 * 3_600_000_000  # in the middle of things
    else:
        as_of = _replica_just_added(topo, log)
    expected = replay(topo, log, as_of).tables
    frame, listed_only = stream_rows(topo, log, as_of)
    assert listed_only or moment == "middle"  # some groups come from list changes alone
    batches = [
        pa.RecordBatch.from_pandas(frame.iloc[i : i + batch], preserve_index=False)
        for i in range(0, len(frame), batch)
    ]
    out_batches = list(
        fold_partitions(payload(topo, log, as_of, expected["transits"]), as_of, flush_rows=500)(iter(batches))
    )
    assert len(out_batches) > 1  # flushed as it went, not held to the end
    out = pa.Table.from_batches(out_batches).to_pandas()
    assert list(out.columns) == list(FOLDED_COLUMNS)
    assert set(out["table"]) == {t for t in OUT_TABLES if expected[t]}
    # in the middle of things every table has rows (the forecast may need no request: replicas
    # catch up by the content on its way)
    assert moment != "middle" or set(out["table"]) >= set(OUT_TABLES) - {"forecast_requests"}
    for table in OUT_TABLES:
        mine = out[out["table"] == table]
        if table == HISTORY:
            assert mine["row"].isna().all()
            got = [_row(r) for r in mine.to_dict("records")]
        else:  # the JSON row holds exactly the table's columns; the history's columns are null
            assert mine[list(row_columns(HISTORY))].isna().all().all()
            got = [json.loads(t) for t in mine["row"]]
            assert all(list(r) == list(row_columns(table)) for r in got)
        want = expected[table]
        cols = sorted(want[0]) if want else []
        cols = [c for c in cols if c in row_columns(table) and c not in AFTER_THE_FOLD]
        if table == "state_table" and moment == "middle":
            assert any(r["lag_count"] for r in want)  # the lags compared are not all zero
        if table == "responders" and moment == "middle":
            assert {r["should_respond"] for r in want} == {True, False}
        assert len(got) == len(want), table

        def as_tuple(r, cols=cols):  # type: ignore[no-untyped-def]
            return tuple(_plain(r.get(c)) for c in cols)

        assert sorted(map(as_tuple, got), key=repr) == sorted(map(as_tuple, want), key=repr), table


#: columns the Spark job adds after the fold: the path joined from the folders, the content at risk
#: from the stores' status at the as-of
AFTER_THE_FOLD = ("path", "at_risk_cnset", "at_risk_count")


def _row(r):  # type: ignore[no-untyped-def]
    return {k: _plain(v) for k, v in r.items()}


def _plain(v):  # type: ignore[no-untyped-def]
    if v is None or (not isinstance(v, (str, list)) and pd.isna(v)):
        return None
    return v.item() if hasattr(v, "item") else v


def payload(topo, log, as_of: int, transits: list[dict[str, Any]]) -> str:  # type: ignore[no-untyped-def]
    """The job's payload: the up/down lines by the as-of, the pairs' medians in microseconds."""
    status = [
        (e.store, e.ts, e.seq, e.status == "down")
        for e in log.in_time_order()
        if e.kind == "store_status" and e.ts <= as_of
    ]
    return org_payload(topo.to_json(), status, Transits.from_rows(transits).as_payload())


def _fold(topo, log, frame, as_of, keep_state=False):  # type: ignore[no-untyped-def]
    batches = [
        pa.RecordBatch.from_pandas(frame.iloc[i : i + 997], preserve_index=False)
        for i in range(0, len(frame), 997)
    ]
    transits = replay(topo, log, as_of).tables["transits"]
    fold = fold_partitions(payload(topo, log, as_of, transits), as_of, flush_rows=500, keep_state=keep_state)
    return pa.Table.from_batches(list(fold(iter(batches)))).to_pandas()


def _rows(out, table):  # type: ignore[no-untyped-def]
    mine = out[out["table"] == table]
    if table == HISTORY:
        return [{c: _plain(r[c]) for c in row_columns(HISTORY)} for r in mine.to_dict("records")]
    return [json.loads(t) for t in mine["row"]]


def test_folds_go_on_from_the_state_a_run_kept(demo) -> None:  # type: ignore[no-untyped-def]
    """Fold up to one as-of keeping each folder's state, then fold the later events on from those
    states to a second as-of: the history of both, and the second's snapshot, are the replay's
    of the second as-of (the spine of a refresh, without Spark)."""
    topo, log = demo
    first, second = log.last_ts() - 60 * 3_600_000_000, log.last_ts() - 12 * 3_600_000_000
    out1 = _fold(topo, log, stream_rows(topo, log, first)[0], first, keep_state=True)
    kept = out1[out1["table"] == FOLD_STATE]
    states = dict(zip(kept["fid"], kept["row"], strict=True))
    assert len(states) == len(set(out1["fid"].dropna()))  # one state per folder
    out2 = _fold(
        topo, log, stream_rows(topo, log, second, after=first, states=states)[0], second, keep_state=True
    )
    assert set(out2.loc[out2["table"] == FOLD_STATE, "fid"]) >= set(states)
    expected = replay(topo, log, second).tables
    for table in OUT_TABLES:
        if table in (HISTORY, "backfill_requests", "backfill_candidates", "replica_history"):
            got = _rows(out1, table) + _rows(out2, table)
        elif table == "backfill_entries":  # closed entries' rows are final: the second run has only the rest
            got = [r for r in _rows(out1, table) if r["state"] != "open"] + _rows(out2, table)
        else:
            got = _rows(out2, table)
        want = expected[table]
        cols = [c for c in row_columns(table) if c not in AFTER_THE_FOLD]
        assert len(got) == len(want), table

        def as_tuple(r, cols=cols):  # type: ignore[no-untyped-def]
            return tuple(_plain(r.get(c)) for c in cols)

        assert sorted(map(as_tuple, got), key=repr) == sorted(map(as_tuple, want), key=repr), table
