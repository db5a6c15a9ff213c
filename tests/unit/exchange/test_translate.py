"""REPLID inference to a fixed point: walking only the links not yet settled infers exactly what
walking every link every round does (the rule as first written, kept here as the reference)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pfscope.spark_jobs.exchange.identity import ReplidMap
from pfscope.spark_jobs.exchange.translate import Hint, Link, solve_replids

SERVERS = ["EX1", "EX2", "EX3", "EX4"]
STORES = ["S1", "S2", "S3", "S4", "S5"]
servers = st.sampled_from(SERVERS)
replids = st.integers(1, 6)
links = st.lists(st.tuples(servers, replids, servers, replids), max_size=60)
hints = st.lists(st.tuples(servers, replids, servers), max_size=8)
given_table = st.dictionaries(st.tuples(servers, replids), st.sampled_from(STORES), max_size=4)
own_stores = st.dictionaries(servers, st.sampled_from(STORES), max_size=4)


def reference(links: list[Link], hints: list[Hint], own: dict[str, str], rmap: ReplidMap) -> None:
    """Every link walked every round, until a round infers nothing."""
    for server, store in own.items():
        rmap.infer(server, 1, store, "REPLID 1 is the server's own store")

    def fixpoint() -> None:
        changed = True
        while changed:
            changed = False
            for s, a, r, b in links:
                x, y = rmap.store(s, a), rmap.store(r, b)
                if x is not None and y is None:
                    changed |= rmap.infer(r, b, x, f"message logged by {s} and {r}: {s}'s REPLID {a:X}")
                elif y is not None and x is None:
                    changed |= rmap.infer(s, a, y, f"message logged by {s} and {r}: {r}'s REPLID {b:X}")
                elif x is not None and y is not None and x != y:
                    rmap.infer(r, b, x, f"message logged by {s} and {r}: {s}'s REPLID {a:X}")

    fixpoint()
    for server, replid, sender in hints:
        if sender in own:
            rmap.infer(
                server, replid, own[sender], f"regular replication from {sender} carries its own changes"
            )
    fixpoint()


@settings(max_examples=400, deadline=None)
@given(links, hints, own_stores, given_table)
def test_settled_links_are_not_walked_again(
    links: list[Link], hints: list[Hint], own: dict[str, str], table: dict[tuple[str, int], str]
) -> None:
    want, got = ReplidMap(given=dict(table)), ReplidMap(given=dict(table))
    reference(links, hints, own, want)
    solve_replids(links, hints, own, got)
    assert got.inferred == want.inferred
    assert list(got.inferred) == list(want.inferred)  # in the order they were made
    assert got.conflicts == want.conflicts


def test_a_chain_of_links_is_followed_back_over_rounds() -> None:
    """Each link is walked before the one that makes its number known: one inference a round."""
    links: list[Link] = [("EX3", 2, "EX4", 7), ("EX2", 5, "EX3", 2), ("EX1", 1, "EX2", 5)]
    rmap = ReplidMap()
    solve_replids(links, [], {"EX1": "S1"}, rmap)
    assert {k: v[0] for k, v in rmap.inferred.items()} == {
        ("EX1", 1): "S1",
        ("EX2", 5): "S1",
        ("EX3", 2): "S1",
        ("EX4", 7): "S1",
    }
    links = [("EX2", 2, "EX1", 3), ("EX2", 1, "EX1", 2), ("EX1", 2, "EX2", 3), ("EX1", 3, "EX2", 1)]
    rmap = ReplidMap()
    solve_replids(links, [], {"EX2": "S2"}, rmap)
    assert rmap.store("EX1", 2) == "S2" and rmap.store("EX1", 3) == "S2" and rmap.store("EX2", 2) == "S2"
    assert rmap.conflicts == [] and rmap.store("EX2", 3) == "S2"
