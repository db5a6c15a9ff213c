"""One replica's forecast explained (``/forecast?fid=<FID>&store=<store>``), decision by decision
as Elasticsearch's allocation explain explains a shard's: what the replica lacks at the as-of
(what is so), when the play says it holds it and the bound, or what blocks it and what would
unblock it; each request of the play with the transit times it used, from the published
``transits`` or, for a pair with none, by the play's own fallback (``model.forecast.world``:
called here, not copied); and the stores that supply the CNs. Pure pandas: the page draws."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from pfscope.app.figures.outages import short_time
from pfscope.app.figures.text import fmt_age, plural
from pfscope.spark_jobs.model.forecast.folder import stores_are, unblock_text
from pfscope.spark_jobs.model.forecast.world import ALL_PAIRS, OWN, SAME_COST, Transits
from pfscope.spark_jobs.model.timeutil import US
from pfscope.spark_jobs.model.topology import Store, Topology

Pair = tuple[str, str]

#: a forecast request's columns, as the page lists them
REQUEST_COLUMNS = [
    "entry_id",
    "attempt",
    "due_at",
    "source",
    "cnset",
    "cnset_count",
    "answered_at",
    "outcome",
    "there",
    "back",
]


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, (str, list, tuple)) and bool(pd.isna(value)))


def sources_of(row: Mapping[str, Any]) -> list[str]:
    """The stores whose messages bring the replica CNs it lacks (the ``sources`` list)."""
    raw = row.get("sources")
    return [str(s) for s in raw] if raw is not None and not isinstance(raw, str) and len(raw) else []


def replica_requests(requests: pd.DataFrame, store: str) -> pd.DataFrame:
    """The requests the play sends for ``store`` (the folder's ``forecast_requests`` rows whose
    observer it is), in the order they go out."""
    if requests.empty:
        return requests
    mine = requests[requests["observer"] == store]
    return mine.sort_values(["due_at", "entry_id", "attempt", "source"], kind="stable").reset_index(drop=True)


def pairs_used(requests: pd.DataFrame, store: str, sources: Iterable[str]) -> list[Pair]:
    """Every (sender, recipient) pair whose transit the forecast of ``store`` used: to each
    request's source and back, and from each store that supplies its CNs; in first use order."""
    out: dict[Pair, None] = {}
    for source in requests["source"] if not requests.empty else []:
        out[(store, str(source))] = None
        out[(str(source), store)] = None
    for source in sources:
        out[(str(source), store)] = None
    return list(out)


def pairs_without_row(transits: pd.DataFrame, pairs: Iterable[Pair]) -> list[Pair]:
    """The pairs the published ``transits`` has no row for (the play took a fallback for them)."""
    have = set(zip(transits["sender"], transits["recipient"], strict=True)) if not transits.empty else set()
    return [p for p in pairs if p not in have]


def site_costs(candidates: pd.DataFrame, stores: pd.DataFrame) -> dict[Pair, int | None]:
    """The cost between two sites (None: no affinity) as the run's candidate rows state it (each
    candidate's ``cost`` from its requester's site; ``candidates``: observer, candidate, cost).
    The run publishes no table of site costs: this is what the dashboard can know of them, and
    all it needs only for a pair the log has no transit of."""
    site = dict(zip(stores["store"].astype(str), stores["site"].astype(str), strict=True))
    out: dict[Pair, int | None] = {}
    if candidates.empty:
        return out
    for observer, candidate, cost in zip(
        candidates["observer"], candidates["candidate"], candidates["cost"], strict=True
    ):
        a, b = site.get(str(observer)), site.get(str(candidate))
        if a is None or b is None or a == b:
            continue
        out.setdefault((a, b), None if _missing(cost) else int(cost))
    return out


def topology_of(stores: pd.DataFrame, costs: Mapping[Pair, int | None]) -> Topology:
    """The stores and the site costs the run tells of, as the model's :class:`Topology` (no
    folders): enough for the play's transit fallback to be called as the play calls it."""
    by_name = {
        str(r["store"]): Store(
            str(r["store"]), str(r.get("server") or ""), str(r["site"]), str(r.get("version") or "")
        )
        for r in stores.to_dict("records")
    }
    sites = tuple(sorted({s.site for s in by_name.values()}))
    return Topology(sites, by_name, {}, {k: v for k, v in costs.items() if v is not None})


def unknown_costs(stores: pd.DataFrame, costs: Mapping[Pair, int | None]) -> list[Pair]:
    """The pairs of distinct sites whose cost the run does not tell (no candidate between them)."""
    sites = sorted(set(stores["site"].astype(str))) if not stores.empty else []
    return [(a, b) for a in sites for b in sites if a != b and (a, b) not in costs]


def _cost_text(cost: int | None) -> str:
    return "0, the same site" if cost == 0 else "none: no affinity" if cost is None else str(cost)


def _basis(rule: str, pair: Pair, messages: Any, topo: Topology | None, unknown: list[Pair]) -> str:
    sender, recipient = pair
    if rule == OWN:
        n = "" if _missing(messages) else f"{plural(int(messages), 'message')} "
        return f"its own: {n}{recipient} processed from {sender} by the as-of"
    cost = topo.cost(sender, recipient) if topo is not None else None
    none = f"no message from {sender} processed by {recipient} by the as-of"
    if rule == SAME_COST:
        text = f"{none}: the lower middle of the pairs at the same site cost ({_cost_text(cost)})"
    elif rule == ALL_PAIRS:
        text = f"{none}, nor of any pair at its site cost ({_cost_text(cost)}): the lower middle of all pairs"
    else:
        text = "no transit in the log at all: an hour"
    if unknown and rule in (SAME_COST, ALL_PAIRS):
        missing = ", ".join(f"{a}-{b}" for a, b in unknown[:4]) + (" …" if len(unknown) > 4 else "")
        text += (
            f" (site costs as the run's candidate rows state them; none states {missing}, taken as "
            "no affinity, so the play's value may differ)"
        )
    return text


def transit_rows(
    transits: pd.DataFrame,
    pairs: Iterable[Pair],
    topo: Topology | None = None,
    unknown: list[Pair] | None = None,
) -> pd.DataFrame:
    """Each pair's transit as the play used it: the median (the forecast) and the longest (the
    bound), in seconds and in words, with where it came from (:meth:`Transits.used`: the pair's own
    messages, or the fallback). ``topo`` (:func:`topology_of`) is needed only for a pair without a
    row; without it such a pair's values are unknown."""
    cols = ["sender", "recipient", "median_s", "longest_s", "median", "longest", "basis"]
    table = Transits.from_rows(transits.to_dict("records")) if not transits.empty else Transits({})
    messages = (
        dict(
            zip(
                zip(transits["sender"], transits["recipient"], strict=True), transits["messages"], strict=True
            )
        )
        if not transits.empty and "messages" in transits.columns
        else {}
    )
    rows: list[dict[str, Any]] = []
    for pair in pairs:
        own = pair in table.medians
        if not own and topo is None:
            rows.append(
                {"sender": pair[0], "recipient": pair[1], "median": "", "longest": "", "basis": "unknown"}
            )
            continue
        world = topo if topo is not None else Topology((), {}, {})
        median, rule = table.used(world, *pair)
        longest, _ = table.used(world, *pair, longest=True)
        rows.append(
            {
                "sender": pair[0],
                "recipient": pair[1],
                "median_s": median / US,
                "longest_s": longest / US,
                "median": fmt_age(median / US) or "0 s",
                "longest": fmt_age(longest / US) or "0 s",
                "basis": _basis(rule, pair, messages.get(pair), topo, unknown or []),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def _transit_text(by_pair: Mapping[Pair, Mapping[str, Any]], pair: Pair) -> str:
    t = by_pair.get(pair)
    if t is None or not t.get("median"):
        return "unknown"
    return f"{t['median']} (longest {t['longest']})"


def request_rows(requests: pd.DataFrame, store: str, transits: pd.DataFrame) -> pd.DataFrame:
    """The replica's requests (:func:`replica_requests`) with the transits used for each: ``there``
    from ``store`` to the source, ``back`` from the source to ``store`` (``transits``: the rows of
    :func:`transit_rows`), median and longest in words."""
    mine = replica_requests(requests, store)
    if mine.empty:
        return pd.DataFrame(columns=REQUEST_COLUMNS)
    by_pair = {(r["sender"], r["recipient"]): r for r in transits.to_dict("records")}
    return mine.assign(
        there=[_transit_text(by_pair, (store, str(s))) for s in mine["source"]],
        back=[_transit_text(by_pair, (str(s), store)) for s in mine["source"]],
    )[REQUEST_COLUMNS]


def source_rows(
    row: Mapping[str, Any], store: str, requests: pd.DataFrame, transits: pd.DataFrame
) -> pd.DataFrame:
    """The stores that supply what the replica lacks, each with how (asked by a request of the
    play, or by mail it sends anyway) and its transit to the replica."""
    by_pair = {(r["sender"], r["recipient"]): r for r in transits.to_dict("records")}
    asked = replica_requests(requests, store)
    counts = asked.groupby("source").size().to_dict() if not asked.empty else {}
    out = []
    for source in sources_of(row):
        n = int(counts.get(source, 0))
        out.append(
            {
                "source": source,
                "how": f"answers {plural(n, 'request')} of the play"
                if n
                else "by mail on its way or due (a change, status message or reply it sends)",
                "transit": _transit_text(by_pair, (source, store)),
            }
        )
    return pd.DataFrame(out, columns=["source", "how", "transit"])


# -- what blocks it, and what would unblock it ------------------------------------------------

#: the parts of the play's ``blocked_by`` (``model.forecast.folder.blocked_by``) and what would
#: unblock each; a part of another wording is said as the play says it, with no remedy guessed
_UNBLOCK: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"^(?P<store>\S+) is down(?: since \S+)?: it processes nothing until it is back$"),
        "{store} coming back up: it then processes the mail held for it (what waited over 48 hours has "
        "expired) and its entries' requests go out",
    ),
    (
        re.compile(r"^only (?P<other>\S+) holds (?P<cns>\S+): down(?: since \S+)?$"),
        "{other} coming back up: then it answers a request for {cns}, or tells of them",
    ),
    (
        re.compile(r"^no store holds (?P<cns>\S+): that content is lost$"),
        "nothing: no replica holds {cns} (the content is lost; only new changes make new CNs)",
    ),
    (
        re.compile(r"^backfill of (?P<cns>\S+) is never answered by a store that holds it$"),
        "a request reaching a store that holds {cns}: the entry's next sources are chosen by the rules "
        "from what it believes each holds; a replica-list change or a store's status changing moves them",
    ),
    (
        re.compile(r"^nothing on its way tells (?P<store>\S+) of (?P<cns>\S+) \(.*\)$"),
        "the folder's next change, or a status message from a store that holds {cns}: either tells "
        "{store} of them, and it files a backfill entry (as in Exchange, it waits until then)",
    ),
    (
        re.compile(r"^(?P<store>\S+) still lacks (?P<cns>\S+) at the horizon$"),
        "more time: the play stops 14 days after the as-of",
    ),
)


def back_text(row: Mapping[str, Any]) -> str:
    """What the return of the stores a blocked replica waits for would do, in the play's own
    words (``model.forecast.folder.unblock_text`` on the row: "in sync ~2 h after PFJNB02 is back,
    …"); empty when it waits for none."""
    stores = row.get("waits_for")
    if stores is None or isinstance(stores, str) or not len(stores):
        return ""

    def seconds(name: str) -> float | None:
        value = row.get(name)
        return None if value is None or _missing(value) else float(value)

    return unblock_text(
        {
            "waits_for": [str(s) for s in stores],
            "after_back_s": seconds("after_back_s"),
            "latest_after_back_s": seconds("latest_after_back_s"),
        }
    )


def block_parts(row: Mapping[str, Any]) -> list[str]:
    """What blocks the replica: ``blocked_by`` in its parts (joined by ``; `` by the play), less
    the closing words on the stores' return (:func:`back_text`), which say what would unblock it."""
    text = row.get("blocked_by")
    if not isinstance(text, str) or not text:
        return []
    back = back_text(row)
    if back and text.endswith("; " + back):
        text = text[: -len(back) - 2]
    return text.split("; ")


def blocks(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What blocks the replica (:func:`block_parts`), each part with what would unblock it (empty
    where the wording is not one the dashboard knows)."""
    out = []
    for part in block_parts(row):
        remedy = ""
        for pattern, text in _UNBLOCK:
            m = pattern.match(part)
            if m:
                remedy = text.format(**m.groupdict())
                break
        out.append((part, remedy))
    return out


# -- the summary ------------------------------------------------------------------------------


def _when(value: Any) -> str:
    return "" if _missing(value) else f"{short_time(value)} UTC"


def _after(value: Any, as_of: Any) -> str:
    if _missing(value) or _missing(as_of):
        return ""
    seconds = (pd.Timestamp(value) - pd.Timestamp(as_of)).total_seconds()
    return "at the as-of" if seconds <= 0 else f"{fmt_age(seconds)} after the as-of"


def summary_lines(row: Mapping[str, Any], store: str, fid: str, as_of: Any) -> list[str]:
    """What the replica lacks at the as-of (what is so), then when it will hold it and the bound,
    or that it will not within the horizon (what blocks it is :func:`blocks`)."""
    count, cnset = int(row.get("lacks_count") or 0), row.get("lacks_cnset") or ""
    lines = [
        f"At the as-of, {_when(as_of)}, {store} lacks {plural(count, 'CN')} of {fid}"
        + (f": {cnset}" if cnset else "")
        + " (what is so, from every store's log: CNs another replica on the list holds and it does not)."
    ]
    at, latest = row.get("in_sync_at"), row.get("latest_in_sync_at")
    if _missing(at):
        back = back_text(row)
        waits = [str(w) for w in row.get("waits_for")] if back else []  # type: ignore[union-attr]
        if waits and not back.startswith("still not in sync"):
            who, verb = stores_are(waits)
            until = (
                f"It will not be in sync until {who} {verb} back, by the forecast (which assumes no "
                "store comes back)"
            )
        else:
            until = "It will not catch up within 14 days, by the forecast"
        lines.append(f"{until}: " + ("; ".join(block_parts(row)) or "blocked") + ".")
        if back:
            lines.append(f"What would unblock it, by the forecast: {back}.")
        return lines
    sources = sources_of(row)
    n = int(row.get("requests") or 0)
    how = f"after {plural(n, 'request')} of the play" if n else "by mail, with no request of its own"
    via = f" via {', '.join(sources)}" if sources else ""
    lines.append(f"In sync by ~{_when(at)} ({_after(at, as_of)}){via}, {how}.")
    if _missing(latest):
        lines.append(
            "At the latest: not within 14 days if the first reply to each entry is lost and every "
            "message takes its pair's longest transit."
        )
    elif pd.Timestamp(latest) == pd.Timestamp(at):
        lines.append(f"At the latest {_when(latest)} too: a lost reply or slow mail would not delay it.")
    else:
        lines.append(
            f"At the latest {_when(latest)} ({_after(latest, as_of)}), if the first reply to each entry "
            "is lost and every message takes its pair's longest transit."
        )
    return lines


def no_forecast_text(store: str, fid: str, replicas: pd.DataFrame) -> str:
    """Why a replica has no forecast: it lacks nothing at the as-of, it is not on the folder's
    list, or the folder has no replica on that store (``replicas``: the folder's rows)."""
    mine = replicas[replicas["store"] == store] if not replicas.empty else replicas
    if mine.empty:
        return f"{store} holds no replica of {fid} in this run: nothing to forecast."
    r = mine.iloc[0]
    if str(r.get("health")) == "deleted":
        return f"{store}'s replica of {fid} is deleted: nothing to forecast."
    on_list = r.get("on_list")
    if not _missing(on_list) and not bool(on_list):
        return (
            f"{store}'s replica of {fid} is not on the folder's replica list (it leaves it): the "
            "forecast plays only replicas on the list."
        )
    return f"{store} lacks nothing on {fid} at the as-of: nothing to forecast."
