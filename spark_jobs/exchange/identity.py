"""Which store a REPLID means on each server.

A CN or FID prints as ``REPLID-GLOBCNT`` and a REPLID is local to the server that printed it
(MS-OXCSTOR): ``3-51C0`` on one server and ``5-51C0`` on another can be the same change. So
every number is read through a per-server table ``(server, replid) -> store``. The operator may
give it (``--replids``, a CSV ``server,replid,store``); the rest is inferred where the logs allow:

1. REPLID 1 is the server's own store (the local replica GUID always has REPLID 1);
2. one message logged by its sender and by a receiver prints the same numbers in two
   numberings: aligning them position by position maps the receiver's REPLIDs;
3. hierarchy and content replication carry only the sender's own changes, so the REPLID of the
   CN range an incoming one prints is the sender's store.

What the operator gave always wins; every inference says how it was made, and a disagreement
is reported, never silently resolved.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from pfscope.spark_jobs.model.errors import OperatorError


class ReplidFileError(OperatorError):
    """The ``--replids`` file cannot be used; ``str()`` is the one line to print."""


def norm_server(name: str) -> str:
    """Servers are compared by their short name in upper case (``ex07.corp.example`` -> ``EX07``)."""
    return name.strip().split(".")[0].upper()


@dataclass
class ReplidMap:
    given: dict[tuple[str, int], str] = field(default_factory=dict)
    inferred: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)  # -> (store, how)
    conflicts: list[dict[str, object]] = field(default_factory=list)

    def store(self, server: str, replid: int) -> str | None:
        key = (server, replid)
        if key in self.given:
            return self.given[key]
        got = self.inferred.get(key)
        return got[0] if got else None

    def infer(self, server: str, replid: int, store: str, how: str) -> bool:
        """Record an inference; True if it was new. A disagreement is kept as a conflict."""
        known = self.store(server, replid)
        if known is None:
            self.inferred[(server, replid)] = (store, how)
            return True
        if known != store:
            c: dict[str, object] = {
                "server": server,
                "replid": f"{replid:X}",
                "kept": known,
                "also_seen": store,
                "how": how,
            }
            if c not in self.conflicts:
                self.conflicts.append(c)
        return False

    def report(self) -> dict[str, object]:
        return {
            "given": [
                {"server": s, "replid": f"{r:X}", "store": st} for (s, r), st in sorted(self.given.items())
            ],
            "inferred": [
                {"server": s, "replid": f"{r:X}", "store": st, "how": how}
                for (s, r), (st, how) in sorted(self.inferred.items())
            ],
            "conflicts": self.conflicts,
        }


def parse_replids_csv(text: str, source: str = "--replids") -> dict[tuple[str, int], str]:
    """``server,replid,store`` rows (a header line naming the columns, any order; REPLID in hex
    as the server prints it, ``0x`` optional)."""
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    rows = [r for r in rows if any(c.strip() for c in r) and not r[0].lstrip().startswith("#")]
    if not rows:
        raise ReplidFileError(f"{source}: empty; expected columns server,replid,store")
    header = [h.strip().lower() for h in rows[0]]
    if not {"server", "replid", "store"} <= set(header):
        raise ReplidFileError(f"{source}: the first line must name the columns server, replid, store")
    si, ri, ti = header.index("server"), header.index("replid"), header.index("store")
    out: dict[tuple[str, int], str] = {}
    for n, row in enumerate(rows[1:], start=2):
        try:
            server, replid_text, store = row[si].strip(), row[ri].strip(), row[ti].strip()
        except IndexError:
            raise ReplidFileError(f"{source}: row {n} has {len(row)} columns, expected 3") from None
        if not server or not store:
            raise ReplidFileError(f"{source}: row {n}: server and store must not be empty")
        if any(c in store for c in " \t:;,"):
            raise ReplidFileError(
                f"{source}: row {n}: store {store!r} must be a name without spaces, ':', ';' or ','"
            )
        try:
            replid = int(replid_text[2:] if replid_text.lower().startswith("0x") else replid_text, 16)
        except ValueError:
            raise ReplidFileError(f"{source}: row {n}: REPLID {replid_text!r} is not hexadecimal") from None
        key = (norm_server(server), replid)
        if key in out and out[key] != store:
            raise ReplidFileError(f"{source}: row {n}: REPLID {replid:X} on {server} is given two stores")
        out[key] = store
    return out


def load_replids(path: str) -> dict[tuple[str, int], str]:
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except OSError as e:
        raise ReplidFileError(f"{path}: cannot read the REPLID table: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ReplidFileError(f"{path}: the REPLID table is not UTF-8 text") from None
    return parse_replids_csv(text, path)
