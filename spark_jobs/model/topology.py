"""The organisation: sites, transport costs, stores and folders, read and checked once.

A broken topology is one clear error line naming the file and the problem (``TopologyError``),
never a traceback: every later figure depends on it, so nothing runs on a doubtful one.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from pfscope.spark_jobs.model.errors import OperatorError

HIERARCHY_FID = "1-1"
VERSIONS = ("5.5", "2000", "2003", "2007", "2010")
VERSION_RANK = {v: i for i, v in enumerate(VERSIONS)}
_FID_RE = re.compile(r"^[0-9A-Fa-f]{1,16}-[0-9A-Fa-f]{1,16}$")
_NAME_RE = re.compile(r"^[^\s:;,]+$")


class TopologyError(OperatorError, ValueError):
    """The topology cannot be used; ``str()`` is the one line to print."""


def normalise_fid(fid: str) -> str:
    """FIDs are hex ``REPLID-GLOBCNT``; one spelling (upper case) so joins never miss."""
    return fid.upper()


def is_fid(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(_FID_RE.fullmatch(value))


def is_store_name(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(_NAME_RE.fullmatch(value))


def version_rank(version: str) -> int:
    return VERSION_RANK[version]


def is_2000_or_later(version: str) -> bool:
    return VERSION_RANK[version] >= VERSION_RANK["2000"]


def is_2003_or_later(version: str) -> bool:
    return VERSION_RANK[version] >= VERSION_RANK["2003"]


@dataclass(frozen=True, slots=True)
class Store:
    name: str
    server: str
    site: str
    version: str
    preferred_backfill_source: str | None = None


@dataclass(frozen=True, slots=True)
class Folder:
    fid: str
    path: str
    parent: str | None
    replicas: tuple[str, ...]


@dataclass(frozen=True)
class Topology:
    sites: tuple[str, ...]
    stores: dict[str, Store]
    folders: dict[str, Folder]
    costs: dict[tuple[str, str], int] = field(default_factory=dict)

    def site_cost(self, a: str, b: str) -> int | None:
        """Transport cost between two sites: 0 within a site, None where no affinity is set."""
        if a == b:
            return 0
        return self.costs.get((a, b))

    def cost(self, store_a: str, store_b: str) -> int | None:
        return self.site_cost(self.stores[store_a].site, self.stores[store_b].site)

    def store_names(self) -> tuple[str, ...]:
        return tuple(sorted(self.stores))

    def initial_replicas(self, fid: str) -> tuple[str, ...]:
        if fid == HIERARCHY_FID:
            return self.store_names()
        folder = self.folders.get(fid)
        return folder.replicas if folder else ()

    def to_json(self) -> dict[str, Any]:
        seen: set[tuple[str, str]] = set()
        costs = []
        for (a, b), c in sorted(self.costs.items()):
            if (b, a) not in seen:
                seen.add((a, b))
                costs.append({"a": a, "b": b, "cost": c})
        return {
            "sites": list(self.sites),
            "costs": costs,
            "stores": [
                {
                    "name": s.name,
                    "server": s.server,
                    "site": s.site,
                    "version": s.version,
                    "preferred_backfill_source": s.preferred_backfill_source,
                }
                for s in sorted(self.stores.values(), key=lambda s: s.name)
            ],
            "folders": [
                {"fid": f.fid, "path": f.path, "parent": f.parent, "replicas": list(f.replicas)}
                for f in self.folders.values()
            ],
        }


def load_topology(path: str | Path) -> Topology:
    """Read a topology file (JSON, or YAML with the same shape) and check it."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as e:
        raise TopologyError(f"{p}: cannot read the topology: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise TopologyError(f"{p}: the topology is not UTF-8 text") from None
    if p.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml

            data = yaml.safe_load(raw)
        except Exception as e:
            raise TopologyError(f"{p}: not valid YAML: {str(e).splitlines()[0]}") from None
    else:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            raise TopologyError(f"{p}: not valid JSON: {e.msg} at line {e.lineno}") from None
    try:
        return topology_from_json(data)
    except TopologyError as e:
        raise TopologyError(f"{p}: {e}") from None


#: stores in one topology: with CNs below 2**48 (events.MAX_CN), a count over every origin fits 64 bits
MAX_STORES = 2**15 - 1
#: a transport cost (Exchange's are small whole numbers; the tables store them as 64-bit integers)
MAX_COST = 2**31 - 1


@functools.lru_cache(maxsize=2)
def topology_from_text(text: str) -> Topology:
    """A topology from its JSON text, parsed once per process. Every task of a job is shipped
    the same text, and a Python worker runs many tasks: a 43,000-folder topology takes 0.3 s to
    parse, which each of a 10M log's 42 fold tasks paid. (A Topology is never changed.)"""
    return topology_from_json(json.loads(text))


def topology_from_json(data: Any) -> Topology:
    if not isinstance(data, dict):
        raise TopologyError("the topology must be an object with sites, stores and folders")
    sites = _list(data, "sites", required=True)
    for s in sites:
        if not isinstance(s, str) or not s:
            raise TopologyError(f"site {s!r} must be a non-empty string")
    if len(set(sites)) != len(sites):
        raise TopologyError("a site is listed twice in 'sites'")
    site_set = set(sites)

    costs: dict[tuple[str, str], int] = {}
    for i, c in enumerate(_list(data, "costs", required=False)):
        where = f"costs[{i}]"
        if not isinstance(c, dict):
            raise TopologyError(f"{where} must be an object with a, b and cost")
        a, b, cost = _site(where, c.get("a"), site_set), _site(where, c.get("b"), site_set), c.get("cost")
        if a == b:
            raise TopologyError(f"{where} gives a cost from site {a!r} to itself (always 0)")
        if not isinstance(cost, int) or isinstance(cost, bool) or cost < 0 or cost > MAX_COST:
            raise TopologyError(f"{where}: cost must be a whole number >= 0, not {cost!r}")
        for key in ((a, b), (b, a)):
            if key in costs and costs[key] != cost:
                raise TopologyError(f"{where}: sites {a!r} and {b!r} are given two costs")
            costs[key] = cost

    stores: dict[str, Store] = {}
    listed = _list(data, "stores", required=True)
    if len(listed) > MAX_STORES:
        raise TopologyError(
            f"{len(listed):,} stores: at most {MAX_STORES:,} (a CN set's count must fit 64 bits)"
        )
    for i, s in enumerate(listed):
        where = f"stores[{i}]"
        if not isinstance(s, dict):
            raise TopologyError(f"{where} must be an object")
        name = s.get("name")
        if not is_store_name(name):
            raise TopologyError(f"{where}: name {name!r} must be a string without spaces, ':', ';' or ','")
        if name in stores:
            raise TopologyError(f"{where}: store {name!r} is listed twice")
        site = s.get("site")
        if not isinstance(site, str) or site not in site_set:
            raise TopologyError(f"{where}: store {name!r} is in site {site!r}, which is not in 'sites'")
        version = str(s.get("version")) if s.get("version") is not None else None
        if version not in VERSION_RANK:
            raise TopologyError(
                f"{where}: store {name!r} has version {s.get('version')!r}; expected one of {', '.join(VERSIONS)}"
            )
        server = s.get("server", name)
        if not isinstance(server, str) or not server:
            raise TopologyError(f"{where}: server of {name!r} must be a non-empty string")
        pref = s.get("preferred_backfill_source")
        if pref is not None and not isinstance(pref, str):
            raise TopologyError(
                f"{where}: preferred_backfill_source of {name!r} must be a store name or null"
            )
        stores[name] = Store(name, server, site, version, pref)
    if not stores:
        raise TopologyError("'stores' is empty: there is nothing to replicate")
    for s in stores.values():
        if s.preferred_backfill_source is not None and s.preferred_backfill_source not in stores:
            raise TopologyError(
                f"store {s.name!r} prefers backfill source {s.preferred_backfill_source!r}, which is not a store"
            )
        if s.preferred_backfill_source == s.name:
            raise TopologyError(f"store {s.name!r} names itself as its preferred backfill source")

    folders: dict[str, Folder] = {}
    for i, f in enumerate(_list(data, "folders", required=False)):
        where = f"folders[{i}]"
        if not isinstance(f, dict):
            raise TopologyError(f"{where} must be an object")
        fid = f.get("fid")
        if not is_fid(fid):
            raise TopologyError(f"{where}: fid {fid!r} is not a FID like '1-2A45'")
        fid = normalise_fid(fid)
        if fid == HIERARCHY_FID:
            raise TopologyError(f"{where}: the hierarchy 1-1 is implicit and must not be listed")
        if fid in folders:
            raise TopologyError(f"{where}: folder {fid} is listed twice")
        path = f.get("path", "")
        if not isinstance(path, str):
            raise TopologyError(f"{where}: path of {fid} must be a string")
        parent = f.get("parent")
        if parent is not None:
            if not is_fid(parent):
                raise TopologyError(f"{where}: parent {parent!r} of {fid} is not a FID")
            parent = normalise_fid(parent)
        replicas = f.get("replicas", [])
        if not isinstance(replicas, list) or not all(isinstance(r, str) for r in replicas):
            raise TopologyError(f"{where}: replicas of {fid} must be a list of store names")
        for r in replicas:
            if r not in stores:
                raise TopologyError(f"{where}: replica {r!r} of {fid} is not a store")
        if len(set(replicas)) != len(replicas):
            raise TopologyError(f"{where}: a replica of {fid} is listed twice")
        folders[fid] = Folder(fid, path, parent, tuple(replicas))
    for f in folders.values():
        if f.parent is not None and f.parent != HIERARCHY_FID and f.parent not in folders:
            raise TopologyError(f"folder {f.fid} has parent {f.parent}, which is not a folder")
    return Topology(tuple(sites), stores, folders, costs)


def _list(data: dict[str, Any], key: str, *, required: bool) -> list[Any]:
    if key not in data or data[key] is None:
        if required:
            raise TopologyError(f"'{key}' is missing")
        return []
    value = data[key]
    if not isinstance(value, list):
        raise TopologyError(f"'{key}' must be a list")
    return value


def _site(where: str, name: object, sites: set[str]) -> str:
    """``name``, a site of ``sites`` (an end of ``where``, a cost)."""
    if not isinstance(name, str) or name not in sites:
        raise TopologyError(f"{where} names site {name!r}, which is not in 'sites'")
    return name
