"""The topology completed with what the logs show: FIDs for their folders, and stores, sites, versions."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pfscope.spark_jobs.exchange.classify import PROVIDER_ALIASES, Parsed
from pfscope.spark_jobs.exchange.messages import Folders
from pfscope.spark_jobs.exchange.translate import ROOT, FolderKey
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, Topology

UNKNOWN_SITE = "Unknown"
_CN_ID_RE = re.compile(r"^[0-9A-Fa-f]{1,16}-[0-9A-Fa-f]{1,16}$")


def _norm_path(p: str) -> str:
    return p.strip().strip("\\").lower()


def assign_fids(
    folders: Folders, keys: Iterable[FolderKey], topo: Topology | None, stores: list[str]
) -> dict[FolderKey, str]:
    """A folder found in the logs keeps the given topology's FID for its path; otherwise its
    FID is ``<n>-<GLOBCNT>`` with ``n`` the creating store's rank among all stores (1-based)."""
    by_path: dict[str, str] = {}
    if topo is not None:
        counts = Counter(_norm_path(f.path) for f in topo.folders.values() if f.path)
        by_path = {
            _norm_path(f.path): f.fid
            for f in topo.folders.values()
            if f.path and counts[_norm_path(f.path)] == 1
        }
    taken = set(topo.folders) if topo is not None else set()
    taken.add(HIERARCHY_FID)
    rank = {s: i + 1 for i, s in enumerate(sorted(stores))}
    out: dict[FolderKey, str] = {}
    for k in sorted(set(keys)):
        path = folders.paths.get(k)
        if path and _norm_path(path) in by_path:
            out[k] = by_path.pop(_norm_path(path))
            continue
        n = rank.get(k[0], len(rank) + 1)
        fid = f"{n:X}-{k[1]:X}"
        while fid in taken:
            n += 0x100
            fid = f"{n:X}-{k[1]:X}"
        taken.add(fid)
        out[k] = fid
    return out


def guess_version(ps: list[Parsed]) -> str:
    """From a server's own (outgoing) events: the ``Outgoing message type`` label is 2003's,
    SMTP Message IDs (or a Database line without an internal Message ID) 2007's; the short RFI layout, the type on the first line
    or a 5.x source name 5.5's;
    otherwise internal IDs: 2000."""
    own = [p for p in ps if p.direction == "out"] or ps
    hints = [version_hints(p) for p in own]
    return version_of(*(any(h[i] for h in hints) for i in range(3)))


def version_hints(p: Parsed) -> tuple[bool, bool, bool]:
    """What one event says of its server's version: (2003's, 2007's, 5.5's)."""
    return (
        bool(p.ev.message_type_label) and not _CN_ID_RE.match(p.ev.msg_id),
        "@" in p.ev.msg_id or bool(p.ev.database and not _CN_ID_RE.match(p.ev.msg_id)),
        bool(p.ev.short_rfis or p.ev.type_on_first_line)
        or (p.raw.provider or "").lower().strip() in ("msexchangeis public", *PROVIDER_ALIASES),
    )


def version_of(v2003: bool, v2007: bool, v55: bool) -> str:
    """The version the hints of a server's events (any of them) name, in ``guess_version``'s order."""
    if v2003:
        return "2003"  # 5.x's "Outgoing Message Type 0x20" comes with an internal Message ID
    if v2007:
        return "2007"  # 2000 prints a Database line too, with internal Message IDs (KB 821930)
    if v55:
        return "5.5"
    return "2000"


def build_topology(
    topo: Topology | None,
    own: dict[str, str],
    sites: dict[str, str],
    versions: dict[str, str],
    folders: Folders,
    fids: dict[FolderKey, str],
    replicas: dict[str, list[str]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The given topology completed with what the logs show; and a note of what was added."""
    base: dict[str, Any] = topo.to_json() if topo else {"sites": [], "costs": [], "stores": [], "folders": []}
    have_stores = {s["name"] for s in base["stores"]}
    added: dict[str, Any] = {"stores": [], "sites": [], "folders": 0}
    for server in sorted(own):
        store = own[server]
        if store in have_stores:
            continue
        site = sites.get(server, UNKNOWN_SITE)
        if site not in base["sites"]:
            base["sites"].append(site)
            added["sites"].append(site)
        version = versions.get(server, "2000")
        base["stores"].append(
            {
                "name": store,
                "server": server,
                "site": site,
                "version": version,
                "preferred_backfill_source": None,
            }
        )
        have_stores.add(store)
        added["stores"].append({"store": store, "server": server, "site": site, "version": version})
    have_folders = {f["fid"] for f in base["folders"]}
    fid_of = dict(fids)
    for k, fid in sorted(fids.items(), key=lambda kv: kv[1]):
        if fid in have_folders:
            continue
        parent_key = folders.parents.get(k)
        if parent_key is None:
            parent = None
        elif parent_key == ROOT:  # GLOBCNT 1 is the root folder: the hierarchy
            parent = HIERARCHY_FID
        else:
            parent = fid_of.get(parent_key)
        base["folders"].append(
            {
                "fid": fid,
                "path": folders.paths.get(k, ""),
                "parent": parent,
                "replicas": replicas.get(fid, []),
            }
        )
        have_folders.add(fid)
        added["folders"] += 1
    known = {f["fid"] for f in base["folders"]} | {HIERARCHY_FID}
    for f in base["folders"]:
        if f["parent"] is not None and f["parent"] not in known:
            f["parent"] = None
    return base, added
