"""Requests traced like any message (issue 35, item 4): for each backfill request, whether its
source processed it (or its state by the rule: in transit, queued, expired) and which backfill
responses answered it; for each status request, its responders likewise.

Reads one folder's published ``messages`` (one row per message and recipient), its
``backfill_entries`` and ``backfill_requests`` (a request's row has no message id: an observed
request is the observer's ``backfill_request`` message sent at its time), ``responders`` and the
pairs' usual transits. Which responses answer a request is the model's rule
(``rules.answers``); a message's state is ``figures.delivery``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pfscope.app.figures.delivery import (
    EXPECTED,
    Delivery,
    Usual,
    delivery,
    expected,
    micros,
    not_sent,
    usual_transits,
)
from pfscope.app.figures.text import fmt_time, plural
from pfscope.spark_jobs.model.cnset import CNSet, union_all
from pfscope.spark_jobs.model.rules.answers import REPLY_TYPE, Asked, Reply, answers, is_reply
from pfscope.spark_jobs.model.rules.transit import PROCESSED

#: an observed request whose message the published ``messages`` table has not (an older run)
UNKNOWN = "unknown"
UNKNOWN_TEXT = "no such message in the published messages table"


@dataclass(frozen=True)
class Sent:
    """One message of the folder: who sent it, when, what it carried, to whom."""

    msg: str
    sender: str
    type: str
    sent_at: pd.Timestamp
    changes: str
    cnset: str
    to: dict[str, pd.Timestamp | None]  # recipient -> when it processed it (None: not by the as-of)


@dataclass
class Mail:
    """One folder's messages indexed for tracing, with the run's as-of and the usual transits."""

    as_of: Any
    usual: Usual | None
    sent: dict[str, Sent] = field(default_factory=dict)
    by_send: dict[tuple[str, str, int], list[str]] = field(default_factory=dict)
    _answers: dict[tuple[str, str, str], dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def deliver(self, msg: str, recipient: str) -> Delivery:
        """What became of ``msg`` for ``recipient``, by the rule."""
        m = self.sent[msg]
        if recipient not in m.to:
            return not_sent()
        return delivery(m.sender, recipient, m.sent_at, m.to[recipient], self.as_of, self.usual)

    def answered_by(self, msg: str, responder: str) -> tuple[Sent, ...]:
        """The responses that answer request ``msg`` from ``responder`` (``rules.answers``)."""
        m = self.sent[msg]
        key = (m.type, m.sender, responder)
        if key not in self._answers:
            asked = [
                Asked(s.msg, micros(s.to[responder]))
                for s in self.sent.values()
                if s.type == m.type and s.sender == m.sender and responder in s.to
            ]
            replies = [
                Reply(s.msg, micros(s.sent_at) or 0)
                for s in self.sent.values()
                if s.sender == responder and is_reply(m.type, s.type, s.to, m.sender)
            ]
            self._answers[key] = answers(asked, replies)
        return tuple(self.sent[r] for r in self._answers[key].get(msg, ()))


def index(messages: pd.DataFrame, as_of: Any, usual: Usual | None) -> Mail:
    """``messages`` (one folder's rows) as a :class:`Mail`."""
    mail = Mail(as_of, usual)
    if messages is None or messages.empty:
        return mail
    rows = messages.sort_values(["sent_at", "msg", "recipient"], kind="stable").to_dict("records")
    for r in rows:
        msg = str(r["msg"])
        done = r.get("processed_at")
        done = None if done is None or pd.isna(done) else pd.Timestamp(done)
        if msg not in mail.sent:
            sent = pd.Timestamp(r["sent_at"])
            m = Sent(
                msg,
                str(r["sender"]),
                str(r["type"]),
                sent,
                str(r.get("changes") or ""),
                str(r.get("cnset") or ""),
                {},
            )
            mail.sent[msg] = m
            mail.by_send.setdefault((m.sender, m.type, micros(sent) or 0), []).append(msg)
        mail.sent[msg].to[str(r["recipient"])] = done
    return mail


@dataclass(frozen=True)
class Answer:
    """One response to a request, and what became of it for the requester."""

    msg: str
    sent_at: pd.Timestamp
    carried: str  # a backfill response's changes; a status message's set
    carried_count: int
    delivery: Delivery  # for the requester


def _answer(mail: Mail, m: Sent, requester: str) -> Answer:
    carried = CNSet.parse(m.changes if m.type == "backfill_response" else m.cnset)
    return Answer(m.msg, m.sent_at, carried.text(), carried.count(), mail.deliver(m.msg, requester))


def answers_text(found: tuple[Answer, ...], reached: Delivery, source: str) -> str:
    """``no response: PFDUB01 never processed the request`` or ``2 responses, 1 processed``."""
    if reached.state == EXPECTED:
        return "no message, so no response"
    if not found:
        if reached.state != PROCESSED:
            return f"no response: {source} has not processed the request"
        return "no response"
    done = sum(a.delivery.state == PROCESSED for a in found)
    return f"{plural(len(found), 'response')}, {done} processed by the requester"


@dataclass(frozen=True)
class RequestTrace:
    """One backfill request to one source."""

    entry_id: str | None
    attempt: int | None
    at: pd.Timestamp
    kind: str  # observed (in the log) or expected (the model's)
    observer: str
    source: str
    cnset: str  # the CNs it asked the source for
    msg: str | None  # the request message (None: expected, or not in the messages table)
    reached: Delivery  # for the source
    answers: tuple[Answer, ...]
    answer_text: str


def request_trace(mail: Mail, r: dict[str, Any]) -> RequestTrace:
    """One ``backfill_requests`` row traced: its message, the source's processing, the answers."""
    observer, source = str(r["observer"]), str(r["source"])
    entry = r.get("entry_id")
    attempt = r.get("attempt")
    base: dict[str, Any] = {
        "entry_id": None if entry is None or pd.isna(entry) else str(entry),
        "attempt": None if attempt is None or pd.isna(attempt) else int(attempt),
        "at": pd.Timestamp(r["at"]),
        "kind": str(r["kind"]),
        "observer": observer,
        "source": source,
        "cnset": str(r.get("cnset") or ""),
    }
    if r["kind"] != "observed":
        reached = expected()
        return RequestTrace(
            **base, msg=None, reached=reached, answers=(), answer_text=answers_text((), reached, source)
        )
    msgs = mail.by_send.get((observer, "backfill_request", micros(r["at"]) or 0), [])
    to_source = [m for m in msgs if source in mail.sent[m].to]
    if not msgs:
        reached = Delivery(UNKNOWN, UNKNOWN_TEXT, None, None)
        return RequestTrace(**base, msg=None, reached=reached, answers=(), answer_text="")
    msg = (to_source or msgs)[0]
    reached = mail.deliver(msg, source)
    found = tuple(_answer(mail, m, observer) for m in mail.answered_by(msg, source)) if to_source else ()
    return RequestTrace(
        **base, msg=msg, reached=reached, answers=found, answer_text=answers_text(found, reached, source)
    )


def traced_requests(requests: pd.DataFrame, mail: Mail) -> list[RequestTrace]:
    """Every row of ``requests`` traced, in time order."""
    if requests is None or requests.empty:
        return []
    rows = requests.sort_values(["at", "entry_id", "attempt", "source"], kind="stable", na_position="last")
    return [request_trace(mail, r) for r in rows.to_dict("records")]


def with_reached(requests: pd.DataFrame, mail: Mail) -> pd.DataFrame:
    """``requests`` with what became of each for its source: ``reached`` (the state),
    ``reached_text`` (in words), ``usual`` (the pair's usual transit, when not processed) and
    ``answered`` (how many responses answered it): the folder page's timeline and request list."""
    traced = {(t.entry_id, t.attempt, micros(t.at), t.source): t for t in traced_requests(requests, mail)}
    out = requests.copy()
    keys = [
        (
            None if e is None or pd.isna(e) else str(e),
            None if a is None or pd.isna(a) else int(a),
            micros(at),
            str(s),
        )
        for e, a, at, s in zip(out["entry_id"], out["attempt"], out["at"], out["source"], strict=True)
    ]
    out["reached"] = [traced[k].reached.state for k in keys]
    out["reached_text"] = [traced[k].reached.text for k in keys]
    out["usual"] = [traced[k].reached.usual for k in keys]
    out["answered"] = [len(traced[k].answers) for k in keys]
    return out


def folder_requests(
    requests: pd.DataFrame, messages: pd.DataFrame, transits: pd.DataFrame | None, as_of: Any
) -> pd.DataFrame:
    """One folder's ``backfill_requests`` with what became of each for its source
    (:func:`with_reached`), from its ``messages`` and the published ``transits`` (None: the run
    has no such table)."""
    if as_of is None or pd.isna(as_of):
        return requests.assign(reached=None, reached_text=None, usual=None, answered=None)
    if not messages.empty:  # only requests and their answers matter here
        messages = messages[messages["type"].isin(["backfill_request", REPLY_TYPE["backfill_request"]])]
    return with_reached(requests, index(messages, as_of, usual_transits(transits)))


# -- the trace page: the entries that cover the asked CNs, and their requests ------------------


@dataclass(frozen=True)
class EntryTrace:
    entry_id: str
    opened_at: pd.Timestamp
    cnset_opened: str
    state: str  # open, satisfied, abandoned
    closed_at: pd.Timestamp | None
    next_due_at: pd.Timestamp | None
    requests: tuple[RequestTrace, ...]


def covering(
    entries: pd.DataFrame, requests: pd.DataFrame, mail: Mail, asked: CNSet, store: str
) -> tuple[EntryTrace, ...]:
    """``store``'s backfill entries that cover any of ``asked`` (opened for some of them), oldest
    first, each with its requests traced."""
    if entries is None or entries.empty:
        return ()
    mine = entries[entries["observer"] == store].sort_values(["opened_at", "entry_id"], kind="stable")
    traced = traced_requests(
        requests[requests["observer"] == store] if not requests.empty else requests, mail
    )
    out = []
    for e in mine.to_dict("records"):
        if asked.isdisjoint(CNSet.parse(str(e.get("cnset_opened") or ""))):
            continue
        closed, due = e.get("closed_at"), e.get("next_due_at")
        out.append(
            EntryTrace(
                str(e["entry_id"]),
                pd.Timestamp(e["opened_at"]),
                str(e.get("cnset_opened") or ""),
                str(e["state"]),
                None if closed is None or pd.isna(closed) else pd.Timestamp(closed),
                None if due is None or pd.isna(due) else pd.Timestamp(due),
                tuple(t for t in traced if t.entry_id == str(e["entry_id"])),
            )
        )
    return tuple(out)


def _requests_text(store: str, cns: CNSet, reqs: list[RequestTrace]) -> str:
    """The requests made for ``cns``: how many, and those their source has not processed."""
    observed = [r for r in reqs if r.kind == "observed"]
    head = f"{store} asked for {cns.text()} in {plural(len(reqs), 'backfill request')}"
    if len(observed) < len(reqs):
        head += f" ({len(reqs) - len(observed)} expected by the rules; no such message in the log)"
    never = [r for r in observed if r.reached.state != PROCESSED]
    if not observed:
        return head + "."
    if not never:
        answered = sum(bool(r.answers) for r in observed)
        return head + f"; its source processed each of them, {answered} answered."
    which = "; ".join(
        f"#{r.attempt if r.attempt is not None else '?'} to {r.source} (sent {fmt_time(r.at)}) {r.reached.text}"
        for r in never
    )
    if len(never) == len(observed):
        lead = {1: "its source has not processed it", 2: "neither was processed by its source"}.get(
            len(never), "none was processed by its source"
        )
    else:
        lead = f"{len(never)} of them not processed by their source"
    return f"{head}; {lead}: {which}."


def requests_summary(store: str, asked: str, entries: tuple[EntryTrace, ...]) -> str:
    """The requests for the asked CNs in a few sentences: ``PFDUB02 asked for PFDUB01:61 in 2
    backfill requests; neither was processed by its source: #1 to PFDUB01 (sent …) queued (expires
    …); #2 … PFDUB01:67,71: no request yet (the first is due …). No backfill entry covers
    PFDUB01:68-70,72: PFDUB02 does not know it lacks them.``"""
    wanted = CNSet.parse(asked)
    out = []
    asked_for = [e for e in entries if e.requests]
    if asked_for:
        cns = wanted.intersection(union_all(CNSet.parse(e.cnset_opened) for e in asked_for))
        out.append(_requests_text(store, cns, [r for e in asked_for for r in e.requests]))
    waiting = [e for e in entries if not e.requests]
    if waiting:
        cns = wanted.intersection(union_all(CNSet.parse(e.cnset_opened) for e in waiting))
        due = [e.next_due_at for e in waiting if e.next_due_at is not None]
        then = f" (the first is due {fmt_time(min(due))})" if due else ""
        out.append(f"{cns.text()}: no request yet{then}.")
    covered = union_all(CNSet.parse(e.cnset_opened) for e in entries)
    left = wanted.difference(covered)
    if left:
        out.append(f"No backfill entry of {store} covers {left.text()}: it does not know it lacks them.")
    return " ".join(out)


# -- status requests among the traced messages ------------------------------------------------


@dataclass(frozen=True)
class ResponderTrace:
    responder: str
    named_by: str  # "model and log", "model only", "log only"
    should_respond: bool | None
    reached: Delivery  # for the responder
    answers: tuple[Answer, ...]
    answer_text: str


def status_trace(responders: pd.DataFrame, mail: Mail, msg: str) -> tuple[ResponderTrace, ...]:
    """A status request's responders (``responders`` rows of ``msg``): named by whom, whether
    each processed it, whether it should have answered, and the status messages that did."""
    if responders is None or responders.empty or msg not in mail.sent:
        return ()
    m = mail.sent[msg]
    rows = responders[responders["msg"] == msg].sort_values(
        ["position", "responder"], kind="stable", na_position="last"
    )
    out = []
    for r in rows.to_dict("records"):
        who = str(r["responder"])
        model, log = bool(r.get("expected")), bool(r.get("observed"))
        named = "model and log" if model and log else ("model only" if model else "log only")
        should = r.get("should_respond")
        reached = mail.deliver(msg, who)
        found = tuple(_answer(mail, s, m.sender) for s in mail.answered_by(msg, who)) if who in m.to else ()
        done = sum(a.delivery.state == PROCESSED for a in found)
        if found:
            text = f"{plural(len(found), 'status message')}, {done} processed by the requester"
        elif not log:
            text = "no status message: not named in the request, none due"
        elif reached.state != PROCESSED:
            text = f"no status message: {who} has not processed the request"
        else:
            text = "no status message" + (
                " (it should have: it holds newer content)" if should else " (none due: nothing newer)"
            )
        out.append(
            ResponderTrace(
                who, named, None if should is None or pd.isna(should) else bool(should), reached, found, text
            )
        )
    return tuple(out)
