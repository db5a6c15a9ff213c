"""Named scenarios: an organisation, a period, and a script of what happens to it.

- ``worked-example``: seed 004's three stores, its outage and the backfill request it triggers.
- ``demo``: a believable organisation over a week, with an outage, a replica move, lost mail,
  a replica removed with content still at risk, and a store that never comes back.
- ``scale``: sized by flags, for benchmarks.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pfscope.spark_jobs.model.engine import Simulator
from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.timeutil import DAY, HOUR, MINUTE, SECOND, parse_ts
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, Topology, topology_from_json
from pfscope.spark_jobs.simulator.network import Network

SCENARIOS = ("worked-example", "demo", "scale")


class ScenarioError(OperatorError, ValueError):
    """An unknown scenario or a bad option; one line for the operator."""


@dataclass
class Scenario:
    topology: Topology
    start: int
    end: int
    script: Callable[[Simulator], None]
    network: Callable[[random.Random, Topology], Network] | None = None
    queue_expiry: int | None = QUEUE_EXPIRY
    notes: dict[str, Any] = field(default_factory=dict)


def build(name: str, seed: int, options: dict[str, Any] | None = None) -> Scenario:
    options = options or {}
    if name == "worked-example":
        _no_options(name, options)
        return worked_example()
    if name == "demo":
        _no_options(name, options)
        return demo(seed)
    if name == "scale":
        return scale(seed, **options)
    raise ScenarioError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}")


def _no_options(name: str, options: dict[str, Any]) -> None:
    if options:
        raise ScenarioError(f"scenario {name!r} takes no size options ({', '.join(sorted(options))})")


# --------------------------------------------------------------------------------------------
# client activity
# --------------------------------------------------------------------------------------------
class ClientActivity:
    """Users changing folders: each folder's changes arrive at random, at one of its replicas
    (its first replica most often, as users work on their home server)."""

    OPS = ("create", "create", "modify", "modify", "modify", "delete")

    def __init__(self, rng: random.Random, rates: dict[str, float], *, until: int):
        self.rng = rng
        self.rates = rates  # fid -> changes per day
        self.until = until
        self.items: dict[str, int] = {}

    def start(self, sim: Simulator) -> None:
        for fid in sorted(self.rates):
            if self.rates[fid] > 0:
                sim.at(sim.start + self._gap(fid), self._change, sim, fid)

    def _gap(self, fid: str) -> int:
        return max(1, round(self.rng.expovariate(self.rates[fid] / DAY) / SECOND)) * SECOND

    def _change(self, sim: Simulator, fid: str) -> None:
        if sim.now < self.until:
            sim.at(sim.now + self._gap(fid), self._change, sim, fid)
        replicas = [s for s in sim.replicas.get(fid, ()) if sim.up[s]]
        if not replicas:
            return
        store = replicas[0] if self.rng.random() < 0.7 else self.rng.choice(replicas)
        n = self.items[fid] = self.items.get(fid, 0) + 1
        nbytes = int(min(2_000_000, self.rng.lognormvariate(8.5, 1.2)))
        sim.change(store, fid, op=self.rng.choice(self.OPS), item=f"Item {n}", nbytes=nbytes)


# --------------------------------------------------------------------------------------------
# worked example (seed 004)
# --------------------------------------------------------------------------------------------
WORKED_FID = "1-123"


def worked_example() -> Scenario:
    """Seed 004: PFS1..PFS3 replicate Folder1; PFS3 is cut off while PFS1 makes changes 12-16
    and PFS2 21-28; when PFS1's change 17 reaches it, it files a backfill entry for
    PFS1:12-16 and PFS2:21-28 and, six hours later, asks for them."""
    topo = topology_from_json(
        {
            "sites": ["Redmond"],
            "stores": [
                {"name": f"PFS{i}", "server": f"EX{i:02d}", "site": "Redmond", "version": "2007"}
                for i in (1, 2, 3)
            ],
            "folders": [
                {
                    "fid": WORKED_FID,
                    "path": "IPM_SUBTREE\\Folder1",
                    "parent": "1-1",
                    "replicas": ["PFS1", "PFS2", "PFS3"],
                }
            ],
        }
    )
    start = parse_ts("2026-11-02T00:00:00Z")
    end = parse_ts("2026-11-06T12:00:00Z")
    checkpoints = {
        "synchronised": start + 2 * DAY + 9 * HOUR,
        "pfs1_change_11": start + 2 * DAY + 10 * HOUR + 30 * MINUTE,
        "pfs3_change_31": start + 2 * DAY + 11 * HOUR + 30 * MINUTE,
        "outage": start + 2 * DAY + 17 * HOUR,
        "backfill_filed": start + 2 * DAY + 18 * HOUR + 50 * MINUTE,
        "backfilled": end,
    }

    def script(sim: Simulator) -> None:
        def burst(store: str, first: int, last: int, t: int) -> None:
            for i, _cn in enumerate(range(first, last + 1)):
                sim.at(t + i * 20 * SECOND, sim.change, store, WORKED_FID)

        # day 0: the three replicas fill up: PFS1 1-10, PFS2 1-20, PFS3 1-30; the status
        # messages a day later tell every store what the others hold.
        burst("PFS1", 1, 10, start + 1 * HOUR)
        burst("PFS2", 1, 20, start + 2 * HOUR)
        burst("PFS3", 1, 30, start + 3 * HOUR)
        day2 = start + 2 * DAY
        sim.at(day2 + 10 * HOUR, sim.change, "PFS1", WORKED_FID)  # PFS1:11
        sim.at(day2 + 11 * HOUR, sim.change, "PFS3", WORKED_FID)  # PFS3:31
        sim.at(day2 + 12 * HOUR, sim.store_status, "PFS3", False)
        burst("PFS1", 12, 16, day2 + 13 * HOUR)
        burst("PFS2", 21, 28, day2 + 14 * HOUR)
        sim.at(day2 + 18 * HOUR, sim.store_status, "PFS3", True)
        sim.at(day2 + 18 * HOUR + 20 * MINUTE, sim.change, "PFS1", WORKED_FID)  # PFS1:17

    return Scenario(
        topo,
        start,
        end,
        script,
        network=_quiet_network,
        queue_expiry=None,
        notes={"fid": WORKED_FID, "checkpoints": checkpoints},
    )


def _quiet_network(rng: random.Random, topo: Topology) -> Network:
    return Network(rng, topo)


# --------------------------------------------------------------------------------------------
# demo organisation
# --------------------------------------------------------------------------------------------
DEMO_SITES = ["Redmond", "Dublin", "Singapore", "Johannesburg"]
DEMO_COSTS = [("Redmond", "Dublin", 10), ("Redmond", "Singapore", 20), ("Dublin", "Singapore", 15)]
DEMO_STORES = [
    ("PFRED01", "EXRED01", "Redmond", "2010", None),
    ("PFRED02", "EXRED02", "Redmond", "2007", None),
    ("PFRED03", "EXRED03", "Redmond", "2003", "PFRED01"),
    ("PFDUB01", "EXDUB01", "Dublin", "2010", None),
    ("PFDUB02", "EXDUB02", "Dublin", "2007", None),
    ("PFDUB03", "EXDUB03", "Dublin", "2000", None),
    ("PFSIN01", "EXSIN01", "Singapore", "2010", None),
    ("PFSIN02", "EXSIN02", "Singapore", "2003", None),
    ("PFJNB01", "EXJNB01", "Johannesburg", "2007", None),
    ("PFJNB02", "EXJNB02", "Johannesburg", "5.5", None),
]
_DEPARTMENTS = [
    "Finance",
    "Human Resources",
    "Engineering",
    "Sales",
    "Legal",
    "Marketing",
    "Operations",
    "IT Service Desk",
    "Facilities",
    "Procurement",
]
_SUBFOLDERS = [
    "Policies",
    "Reports",
    "Meeting Notes",
    "Templates",
    "Archive",
    "Contacts",
    "Calendar",
    "Announcements",
]
_PROJECTS = [
    "Atlas",
    "Borealis",
    "Cobalt",
    "Delta Migration",
    "Everest",
    "Falcon",
    "Granite",
    "Harbour",
    "Ion",
    "Juniper",
]
_REGIONS = {"Redmond": "Americas", "Dublin": "EMEA", "Singapore": "APAC", "Johannesburg": "Africa"}


def _demo_paths(rng: random.Random) -> list[tuple[str, str | None]]:
    """(path, parent path) pairs of a realistic public folder tree."""
    out: list[tuple[str, str | None]] = []
    top = "IPM_SUBTREE"

    def add(path: str, parent: str | None) -> None:
        out.append((path, parent))

    add(f"{top}\\Departments", None)
    for d in _DEPARTMENTS:
        dp = f"{top}\\Departments\\{d}"
        add(dp, f"{top}\\Departments")
        for s in rng.sample(_SUBFOLDERS, 5):
            add(f"{dp}\\{s}", dp)
        ap = f"{dp}\\Archive"
        if (ap, dp) in out:
            for year in (2023, 2024, 2025):
                add(f"{ap}\\{year}", ap)
    add(f"{top}\\Projects", None)
    for p in _PROJECTS:
        pp = f"{top}\\Projects\\{p}"
        add(pp, f"{top}\\Projects")
        for s in ("Specs", "Status Reports", "Design Reviews", "Risks & Issues"):
            add(f"{pp}\\{s}", pp)
    add(f"{top}\\Regions", None)
    for site, region in _REGIONS.items():
        rp = f"{top}\\Regions\\{region}"
        add(rp, f"{top}\\Regions")
        for s in (
            f"{site} Office",
            f"{site} Office\\Visitors",
            f"{site} Office\\Room Bookings",
            "Customer Escalations",
            "Partner Contacts",
        ):
            add(f"{rp}\\{s}", f"{rp}\\{s.rsplit(chr(92), 1)[0]}" if "\\" in s else rp)
    add(f"{top}\\Support", None)
    add(f"{top}\\Support\\Q&A <Internal>", f"{top}\\Support")
    add(f"{top}\\Support\\Known Issues", f"{top}\\Support")
    add(f'{top}\\Support\\Known Issues\\Outlook "Cached Mode"', f"{top}\\Support\\Known Issues")
    add(f"{top}\\Social", None)
    for s in ("Café Menu", "Sports Club", "Book Club", "For Sale", "Carpool"):
        add(f"{top}\\Social\\{s}", f"{top}\\Social")
    sys_top = "NON_IPM_SUBTREE"
    add(f"{sys_top}\\SCHEDULE+ FREE BUSY", None)
    for site in DEMO_SITES:
        add(f"{sys_top}\\SCHEDULE+ FREE BUSY\\EX:/o=Contoso/ou={site}", f"{sys_top}\\SCHEDULE+ FREE BUSY")
    add(f"{sys_top}\\OFFLINE ADDRESS BOOK", None)
    add(
        f"{sys_top}\\OFFLINE ADDRESS BOOK\\/o=Contoso/cn=addrlists/cn=oabs/cn=Default Offline Address List",
        f"{sys_top}\\OFFLINE ADDRESS BOOK",
    )
    add(f"{sys_top}\\EFORMS REGISTRY", None)
    add(f"{sys_top}\\EFORMS REGISTRY\\Organization Forms", f"{sys_top}\\EFORMS REGISTRY")
    return out


def demo(seed: int) -> Scenario:
    rng = random.Random(seed)
    stores = [
        {"name": n, "server": srv, "site": site, "version": v, "preferred_backfill_source": pref}
        for n, srv, site, v, pref in DEMO_STORES
    ]
    by_site: dict[str, list[str]] = {}
    for n, _srv, site, _v, _p in DEMO_STORES:
        by_site.setdefault(site, []).append(n)
    names = [s[0] for s in DEMO_STORES]
    folders: list[dict[str, Any]] = []
    fid_of: dict[str, str] = {}
    for i, (path, parent) in enumerate(_demo_paths(rng)):
        fid = f"1-{0x2A40 + i * 3:X}"
        fid_of[path] = fid
        region_site = next((s for s, r in _REGIONS.items() if f"\\{r}" in path or f"ou={s}" in path), None)
        home_site = region_site or rng.choice(DEMO_SITES[:3])
        home = rng.choice(by_site[home_site])
        others = [n for n in names if n != home]
        k = rng.choice((1, 1, 2, 2, 2))
        replicas = [home, *rng.sample(others, k)]
        folders.append(
            {"fid": fid, "path": path, "parent": fid_of.get(parent or "", "1-1"), "replicas": replicas}
        )
    start = parse_ts("2026-11-02T00:00:00Z")
    end = start + 7 * DAY
    rates: dict[str, float] = {f["fid"]: rng.choice((0.5, 2, 4, 8, 12, 24)) for f in folders}
    # the folders the script acts on, chosen from the tree by their shape
    moved = next(f for f in folders if "PFRED02" in f["replicas"] and len(f["replicas"]) >= 2)
    at_risk = next(f for f in folders if f["replicas"][0] == "PFJNB01" and len(f["replicas"]) >= 2)
    rates[at_risk["fid"]] = 24.0
    # a busy project folder on three continents: the staggered mail loss below makes PFSIN01
    # file one entry that two sources share (multi-source backfill)
    spread = next(f for f in folders if f["path"].endswith("Projects\\Atlas\\Specs"))
    spread["replicas"] = ["PFRED01", "PFDUB01", "PFSIN01"]
    rates[spread["fid"]] = 96.0
    # replicas added: one next to an existing replica (new-replica entries, 15 minutes), one
    # far from every replica (12 hours)
    grow = [f for f in folders if len(f["replicas"]) == 2 and f is not moved and f is not at_risk][:2]
    grow_to = []
    for f, site in zip(grow, ("same", "far"), strict=True):
        sites_of = {topo_site for n, _s, topo_site, _v, _p in DEMO_STORES if n in f["replicas"]}
        pool = [
            n
            for n, _s, st, _v, _p in DEMO_STORES
            if n not in f["replicas"] and ((st in sites_of) == (site == "same")) and st != "Johannesburg"
        ]
        grow_to.append((f, pool[0]))
    notes = {
        "moved": moved["fid"],
        "at_risk": at_risk["fid"],
        "outage": "PFSIN02",
        "gone": "PFJNB02",
        "multi_source": spread["fid"],
        "grown": [f["fid"] for f, _ in grow_to],
    }
    topo = topology_from_json(
        {
            "sites": DEMO_SITES,
            "costs": [{"a": a, "b": b, "cost": c} for a, b, c in DEMO_COSTS],
            "stores": stores,
            "folders": folders,
        }
    )

    def script(sim: Simulator) -> None:
        ClientActivity(random.Random(seed + 7), rates, until=end).start(sim)
        # a hierarchy of folder edits now and then
        for h in range(6, 7 * 24, 9):
            admin = names[h % len(names)]
            sim.at(start + h * HOUR, sim.change, admin, HIERARCHY_FID)
        # one outage: PFSIN02 is down for 50 hours; mail older than 48 h expires in the queue
        sim.at(start + 1 * DAY + 6 * HOUR, sim.store_status, "PFSIN02", False)
        sim.at(start + 3 * DAY + 8 * HOUR, sim.store_status, "PFSIN02", True)
        # a replica move: the folder leaves PFRED02 for PFDUB01
        new_list = tuple("PFDUB01" if s == "PFRED02" else s for s in moved["replicas"])
        if "PFDUB01" in moved["replicas"]:
            new_list = tuple(s for s in moved["replicas"] if s != "PFRED02")
        sim.at(start + 3 * DAY + 10 * HOUR, sim.set_replicas, "PFRED01", moved["fid"], new_list)
        # a replica removed near the end while its last changes are still in the post
        keep = tuple(s for s in at_risk["replicas"] if s != "PFJNB01")
        sim.at(
            start + 6 * DAY + 19 * HOUR + 40 * MINUTE,
            partial(sim.change, op="create", item="Quarterly review.pptx", nbytes=4_200_000),
            "PFJNB01",
            at_risk["fid"],
        )
        sim.at(start + 6 * DAY + 20 * HOUR, sim.set_replicas, "PFRED01", at_risk["fid"], keep)
        for i, (f, newcomer) in enumerate(grow_to):
            sim.at(
                start + 2 * DAY + (9 + i) * HOUR,
                sim.set_replicas,
                "PFRED01",
                f["fid"],
                (*f["replicas"], newcomer),
            )
        # a store that goes down two days before the end and does not come back
        sim.at(start + 5 * DAY, sim.store_status, "PFJNB02", False)

    def network(r: random.Random, t: Topology) -> Network:
        return Network(
            r,
            t,
            loss_rate=0.002,
            loss_windows=[
                # a burst: Dublin's outbound mail is lost for three hours
                (start + 4 * DAY + 9 * HOUR, start + 4 * DAY + 12 * HOUR, "Dublin", None),
                # Singapore's inbound mail lost, Redmond's for 6 hours, Dublin's for 8, and
                # Redmond to Dublin for 6: Redmond tells Singapore of both sites' changes first
                (start + 5 * DAY + 2 * HOUR, start + 5 * DAY + 8 * HOUR, "Redmond", "Singapore"),
                (start + 5 * DAY + 2 * HOUR, start + 5 * DAY + 10 * HOUR, "Dublin", "Singapore"),
                (start + 5 * DAY + 2 * HOUR, start + 5 * DAY + 8 * HOUR, "Redmond", "Dublin"),
                # Dublin to Redmond lost late on: Redmond learns of it hours before the end and
                # is still waiting out its 12-hour time-out when the week closes
                (end - 12 * HOUR, end - 5 * HOUR, "Dublin", "Redmond"),
                # Johannesburg's mail lost around the removal of PFJNB01's replica
                (start + 6 * DAY + 19 * HOUR, end, "Johannesburg", None),
                # mail inside Dublin lost for the last 22 hours: a store asks a neighbour twice
                # (6 h, then 12 h: local time-outs) and is still waiting (overdue)
                (end - 22 * HOUR, end, "Dublin", "Dublin"),
            ],
        )

    return Scenario(topo, start, end, script, network=network, notes=notes)


# --------------------------------------------------------------------------------------------
# scale
# --------------------------------------------------------------------------------------------
def scale(
    seed: int,
    *,
    stores: int = 20,
    sites: int = 4,
    folders: int = 2_000,
    replicas: int = 3,
    days: float = 7.0,
    changes_per_day: float = 6.0,
) -> Scenario:
    """An organisation sized by flags; an outage, a move and lost mail scaled along."""
    if stores < 2 or sites < 1 or folders < 1 or not 1 <= replicas <= stores or days <= 0:
        raise ScenarioError(
            "scale needs --stores >= 2, --sites >= 1, --folders >= 1, 1 <= --replicas <= --stores, --days > 0"
        )
    rng = random.Random(seed)
    site_names = [f"Site{i + 1:02d}" for i in range(sites)]
    versions = ["2010", "2007", "2003", "2010", "2007", "2000"]
    store_rows = [
        {
            "name": f"PF{i + 1:04d}",
            "server": f"EX{i + 1:04d}",
            "site": site_names[i % sites],
            "version": versions[i % len(versions)],
        }
        for i in range(stores)
    ]
    costs = [
        {"a": a, "b": b, "cost": rng.choice((5, 10, 20, 40))}
        for i, a in enumerate(site_names)
        for b in site_names[i + 1 :]
        if rng.random() < 0.8
    ]
    names = [s["name"] for s in store_rows]
    folder_rows: list[dict[str, Any]] = []
    for i in range(folders):
        folder_rows.append(
            {
                "fid": f"1-{0x10000 + i:X}",
                "path": f"IPM_SUBTREE\\Area {i % 97}\\Folder {i}",
                "parent": "1-1",
                "replicas": rng.sample(names, replicas),
            }
        )
    topo = topology_from_json(
        {"sites": site_names, "costs": costs, "stores": store_rows, "folders": folder_rows}
    )
    start = parse_ts("2026-10-01T00:00:00Z")
    end = start + int(days * DAY)
    rates = {f["fid"]: rng.expovariate(1 / changes_per_day) for f in folder_rows}

    def script(sim: Simulator) -> None:
        ClientActivity(random.Random(seed + 7), rates, until=end).start(sim)
        victim = names[len(names) // 2]
        sim.at(start + int(days * DAY * 0.3), sim.store_status, victim, False)
        sim.at(start + int(days * DAY * 0.3) + 30 * HOUR, sim.store_status, victim, True)
        for k, f in enumerate(folder_rows[: max(1, folders // 100)]):
            newcomer = next(n for n in names if n not in f["replicas"]) if replicas < stores else None
            if newcomer is not None:
                new_list = (*f["replicas"][1:], newcomer)
                sim.at(
                    start + int(days * DAY * 0.5) + k * MINUTE, sim.set_replicas, names[0], f["fid"], new_list
                )

    def network(r: random.Random, t: Topology) -> Network:
        mid = start + int(days * DAY * 0.6)
        return Network(r, t, loss_rate=0.001, loss_windows=[(mid, mid + 2 * HOUR, site_names[0], None)])

    return Scenario(topo, start, end, script, network=network)
