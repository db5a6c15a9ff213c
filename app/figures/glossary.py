"""The model's words: the glossary's terms and meanings, and the anchors the dashboard links to."""

from __future__ import annotations

#: a cell state's name, and its glossary anchor: the one wording of the dashboard's matrix, the
#: reports' matrix and the glossary's terms (:func:`cell_label`); never "told later" or "not told"
CELL_LABELS: dict[str, tuple[str, str | None]] = {
    "current": ("current", "current"),
    "not_told": ("not told yet", "not-told"),
    "told_later": ("not told, holds them", "told-later"),
    "lacks": ("really lacks", "really-lacks"),
    "owned": ("owned", "owned"),
    "unknown": ("no row", None),
}


def cell_label(state: str) -> str:
    """A who-knows-what cell state in words, the same wherever it is shown (``CELL_LABELS``)."""
    return CELL_LABELS[state][0] if state in CELL_LABELS else state.replace("_", " ")


#: The glossary (``/glossary``): anchor -> (term, meaning), in reading order. Meanings follow
#: docs/replication-model; every "?" link of the dashboard points at one of these anchors.
GLOSSARY: dict[str, tuple[str, str]] = {
    "as-of": (
        "as of",
        "The time every table describes: by default the last event of the input. Requests due "
        "at or before it have happened; events after it are not applied.",
    ),
    "store": (
        "store",
        "A public folder database (PFS1). It lives on a server, in a site, and runs an Exchange "
        "version (5.5, 2000, 2003, 2007, 2010).",
    ),
    "down": (
        "down",
        "A store is down while its last store status event says down. Its replicas keep the health "
        "they last had: the model does not pause time-outs for a down store, and nothing it holds "
        'can be verified until it is back. The overview draws them as out of reach ("store down", '
        "their last known health in the hover) and marks the store (down) on the lag heatmap.",
    ),
    "down-period": (
        "down period (outage)",
        "A period a store was down: from its down status event to the up "
        "event that ended it, or still down at the as-of. Kept for every "
        "store long after it came back (the store page, the overview's "
        '"what happened").',
    ),
    "incident": (
        "incident (what happened)",
        'A line of the overview\'s "what happened": a period a store was down (with what it caused: the '
        "entries of other stores whose requests went to it while it was down, the entries it opened once "
        "back on mail held for it, the mail sent to it while it was down that expired), replica-list "
        "changes, mail never processed, or entries that became overdue. Events of one kind close in time "
        "are one incident (changes within an hour, a store's overdue entries within six hours, its "
        "deliveries within an hour; at most a day), and those of several stores at the same time too; "
        "each line says how many events it groups. From every store's log: what is so, not a store's belief.",
    ),
    "never-processed": (
        "mail never processed (in transit, queued, expired)",
        "A delivery (a message and one of its recipients) the recipient had not processed by the as-of. "
        "By the model's rule it is in transit while younger than the pair's usual transit (the longest "
        "the recipient took for the sender's mail, or an hour), then queued until 48 hours after it was "
        "sent, then expired: Exchange drops queued replication mail after 48 hours. Deliveries to one "
        "store within an hour of each other, three or more, are a burst; fewer are scattered losses, "
        "told one line a day.",
    ),
    "hierarchy": (
        "hierarchy (1-1)",
        "The folder 1-1 is the public folder hierarchy itself; every store is a "
        "replica of it. It has no path.",
    ),
    "replica-list": ("replica list", "The stores that should hold a folder; it changes over time."),
    "cn": (
        "CN (change number)",
        "Each change made on store S to a folder is numbered by S: written S:n. CNs of "
        "one origin only increase.",
    ),
    "cn-set": ("CN set", "A set of CNs, per origin as ranges: PFS1:1-11,17;PFS2:1-20. ∅ is the empty set."),
    "owned": (
        cell_label("owned"),
        "The row of a store about itself in its replication state table: every CN it holds. "
        "The CN it last assigned is its last sent CN.",
    ),
    "believed": (
        "believed",
        "The row of an observer about another store: the CN set that store's last "
        "message (by send time) about the folder carried.",
    ),
    "state-table": (
        "replication state table",
        "Per observer and folder, one row per store: its own owned set "
        "and what it believes each other store holds.",
    ),
    "lag": (
        "knowledge lag",
        "The CNs a subject really owns that the observer's believed row lacks, both as of the same time.",
    ),
    "not-told": (
        cell_label("not_told"),
        "A who-knows-what cell whose observer lags: the subject holds CNs the observer "
        "has not heard of yet (knowledge lag), and the observer itself lacks some of "
        "them: it does not know this subject could backfill it (amber). Of what a "
        "replica lacks, the part not told yet is what it does not know it lacks "
        "(see lacks).",
    ),
    "told-later": (
        cell_label("told_later"),
        "A who-knows-what cell whose observer lags (knowledge lag), but holds "
        "every CN it was not told of itself: nothing is missing. The usual "
        "state between status messages, above all in the hierarchy 1-1, "
        "where a store tells its partners what it received only in its next "
        "message (shown healthy).",
    ),
    "really-lacks": (
        cell_label("lacks"),
        "A who-knows-what cell whose observer is current, while the subject really "
        "lacks CNs some other replica holds.",
    ),
    "current": (
        cell_label("current"),
        "The observer's believed row equals the subject's owned set, and the subject lacks "
        "nothing another replica holds.",
    ),
    "derived": (
        "derived (≥ lower bound)",
        "The CN set was inferred from Exchange's event logs, which print CN "
        "ranges, not CN sets: the store holds at least these CNs, so figures "
        "built on it are lower bounds.",
    ),
    "missing": (
        "known missing CNs",
        "A store's belief: CNs it believes other stores on the replica list hold "
        "and it does not own: what its backfill entries are for. The part of what "
        "it lacks that it knows of.",
    ),
    "forecast": (
        "forecast (in sync by, at the latest)",
        "When a replica that lacks CNs at the as-of will hold them: the model's own rules played "
        "forward from every store's state at the as-of (the same due requests, source choices, "
        "answers and status messages), assuming no new changes, no replica-list changes, no store "
        "going down or coming back, and that mail between two stores takes the pair's median "
        "transit (a pair with no message of its own: the lower middle of the pairs at the same site "
        "cost, else of all pairs, else an hour; mail for a store that is down waits, and expires after "
        '48 hours). Mail already on its way arrives first. "At the latest" plays it again with the '
        "first backfill reply of each entry lost, the common failure (the next request, at its "
        "time-out, goes where the rules then send it), every message taking its pair's longest "
        "transit, and mail on its way at the as-of already older than that lost. A replica that will "
        "not catch up within 14 days says why: its store is down, only stores that are down hold what "
        "it lacks, or nothing will tell it of them (as in Exchange, it waits for the folder's next "
        "change); one waiting for stores that are down says how long after they are back it is in "
        "sync. Each forecast on a folder's verdict links to its "
        "explanation (/forecast?fid=<FID>&store=<store>): what the replica lacks, the requests of the "
        "play in order with the transit times each used and where they came from, the stores that "
        "supply the CNs, and for a replica that will not catch up what blocks it and what would "
        "unblock it.",
    ),
    "plan": (
        "plan (what-if, dry run)",
        "Is it safe to do X? Actions on the published run (a store down for maintenance or back, a "
        "replica added to or removed from a folder's list, a store decommissioned or restored from a "
        "backup), played forward like the forecast from every store's state at the as-of, under the "
        "plan and without it (the baseline): what is so by the model's rules, not a store's belief. A "
        "plan is safe when it puts no content at risk (CNs held only on a store when it goes down, is "
        "removed from a list or is restored to an older copy, until another replica that is up holds "
        "them) and leaves no replica unable to get in sync that gets in sync without it. The /plan page "
        "keeps the actions in its URL (send it to a change board); a plan made on an older run says so. "
        "Nothing of a plan is written into the run.",
    ),
    "lacks": (
        "lacks: known missing and not told yet",
        "What is so: the CNs the stores on a folder's replica "
        "list hold that this replica does not hold, in two "
        "parts. Known missing: it knows it lacks them (its "
        "backfill entries are for them). Not told yet: it does "
        "not know it lacks them; they arrive, or it learns of "
        "them, with the next message from a store that holds "
        "them. A replica off the list lacks nothing.",
    ),
    "backfill-entry": (
        "backfill entry",
        "Opened by a store for missing CNs no open entry covers. It keeps its "
        "remaining CNs; it is satisfied when none remain, and abandoned when the "
        "store leaves the replica list.",
    ),
    "locality": (
        "local / remote",
        "An entry is local when every remaining CN is believed held by an up store "
        "on the list in the same site; otherwise remote (longer time-outs).",
    ),
    "new-replica": (
        "new replica",
        "An entry opened while the store owned nothing of the folder: its first "
        "request falls due after 15 minutes (local).",
    ),
    "next-due": (
        "next due",
        "When the entry's next backfill request falls due (time-outs: 6 h / 12 h, then "
        "12 h / 24 h, then 24 h / 48 h, local / remote). Requests due at or before the as-of "
        "have happened, so an open entry's next due is after the as-of, unless its store is "
        "down: a store that is down sends nothing, and its requests wait for it (the next "
        "due stays when they fell due; they are sent when the store comes back up).",
    ),
    "next-request": (
        "next request",
        "Where the entry's next backfill request will go, by the model's source "
        "rules as of the run: each store it will ask, for which CNs (several stores "
        "when one holds only part). A request waits while its store is down. "
        "'none' when no replica is believed to hold any of the CNs.",
    ),
    "overdue": (
        "overdue",
        "A replica with an open entry that has had two requests or more: its first request "
        "did not fill it. It says the backfill is failing, not that a request is late (the "
        "next due is after the as-of).",
    ),
    "backfilling": ("backfilling", "A replica with open entries, none of them retried yet."),
    "in-sync": (
        "in sync",
        "A replica with no open backfill entry. It can still lack CNs it has not been told "
        'of: it then reads "in sync (no backfill entry), lacks 1 CN: not told yet". On a '
        "down store, as last known.",
    ),
    "delete-pending": (
        "delete pending",
        "A replica whose store left the replica list while it believes it "
        "still holds unique CNs; it is deleted once it believes none is left. "
        "Its content at risk is the part no store on the list really holds.",
    ),
    "deleted": ("deleted", "A replica off the list whose store believes it holds no unique CN."),
    "believed-unique": (
        "believed unique CNs",
        "A store's belief: what the replica owns minus what the store's "
        "state table says the other stores on the list hold. Exchange "
        "deletes a delete-pending replica by it. A store hears of "
        "others' CNs only from their messages, so it can believe CNs "
        "are only there that other replicas hold: such CNs are not at "
        "risk.",
    ),
    "really-unique": (
        "really unique CNs",
        "What is so: what the replica owns that no other store on the list "
        "really owns (pfscope reads every store's log). The CNs that would "
        "be gone if this copy were lost now.",
    ),
    "content-at-risk": (
        "content at risk",
        "What is so, never a store's belief: the really unique CNs of a "
        "delete-pending replica (gone when it is deleted) and of a replica on "
        "a store that is down (out of reach until it is back, gone if it "
        "never is). A CN a store only believes it alone holds is not at "
        "risk.",
    ),
    "request-kind": (
        "expected / observed request",
        "Expected: due by the model. Observed: a backfill request "
        "the store really sent (in the log) that overlaps an open "
        "entry.",
    ),
    "candidate": (
        "candidate",
        "A store on the replica list believed to hold some of the remaining CNs. A store "
        "on the list holding none of them is not a candidate.",
    ),
    "unavailable": (
        "unavailable",
        "Marked by the requester for this folder when a backfill request it sent "
        "got no response before the entry's next request fell due; cleared when it "
        "next processes a message from that store about the folder. Sorted last, "
        "like down.",
    ),
    "preferred": ("preferred backfill source", "A store the requester asks first (Exchange 2003 and later)."),
    "cost": (
        "transport cost",
        "Cost from the requester's site to the candidate's site; same site is 0; no "
        "affinity (no cost given) sorts after every cost.",
    ),
    "search-groups": (
        "search groups 1-6 (Exchange 2000)",
        "1: 2000+ stores in the site; 2: 2000+ in other "
        "sites with a cost; 3: 2000+ with no cost; 4-6: the "
        "same for 5.5 stores. The first store holding all "
        "remaining CNs is asked.",
    ),
    "responder-groups": (
        "responder groups 1-6, oldest",
        "Which rule put a store on a status request's "
        "responder list: 1 same site, backfilled from before "
        "(longest ago first); 2 other site with a cost, heard "
        "from; 3 same site, the rest; 4 other site with a "
        "cost, the rest; 5 other site, no cost, known transit "
        "time; 6 other sites, the rest; oldest: the replica "
        "believed to hold the fewest CNs (oldest copy).",
    ),
    "model-names": (
        "model names it",
        "The store is on the responder list the model says the requester should "
        "name (up to three, plus the oldest copy).",
    ),
    "should-respond": (
        "should respond",
        "The requester's CN set is a strict subset of what the responder "
        "owned when it processed the request: it has newer content to send. "
        "A store can be named and still have nothing to send.",
    ),
    "next-status": (
        "next status",
        "When the replica's status message is due (the first 00:15 or 12:15 UTC 24 h after its last change).",
    ),
    "in-transit": (
        "in transit",
        "A message its recipient has not processed, younger than the pair's usual "
        "transit: the longest the recipient took to process a message from the "
        "sender, or an hour when it never processed one. Not late yet.",
    ),
    "queued": (
        "queued",
        "A message its recipient has not processed, older than the pair's usual "
        "transit: late, waiting in a queue (the recipient may be down or "
        "unreachable) until 48 hours after it was sent, when Exchange expires it.",
    ),
    "expired": (
        "expired",
        "A message its recipient never processed, sent 48 hours or more before the "
        "as-of: Exchange has expired it. What it carried arrives only by a later "
        "message or a backfill request.",
    ),
    "rejected-line": (
        "rejected line",
        "An input line the run could not use; kept with its file, line number, reason and verbatim text.",
    ),
    "duplicate": (
        "duplicate",
        "An input line that repeats an accepted line exactly; counted, not applied twice.",
    ),
}


def glossary_href(term: str) -> str:
    """The glossary anchor of one of the model's words (KeyError for a word it does not define)."""
    GLOSSARY[term]
    return f"/glossary#{term}"


#: a replica's health -> its glossary anchor
HEALTH_TERMS: dict[str, str] = {
    "in_sync": "in-sync",
    "backfilling": "backfilling",
    "overdue": "overdue",
    "delete_pending": "delete-pending",
    "deleted": "deleted",
}
