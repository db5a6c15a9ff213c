"""``build_merges``: each aggregate over the groups' rows equals the plain merge, in Python, of the
same rows in the reference's order (the first place wins; a value missing at a place is skipped)."""

from __future__ import annotations

import random
from typing import Any

from pfscope.spark_jobs.ingest import build_merges as merges
from pfscope.spark_jobs.ingest.build_rows import GROUP_SCHEMA, MSG_SCHEMA

SERVERS = ["EX1", "EX2", "EX3", "EX4"]


def _places(rng: random.Random, n: int) -> list[tuple[int, int]]:
    """``n`` distinct group places (file, first record), shuffled: the rows come in any order."""
    places = sorted({(rng.randrange(4), rng.randrange(50)) for _ in range(n * 2)})[:n]
    rng.shuffle(places)
    return places


def _row(schema: Any, **values: Any) -> tuple[Any, ...]:
    return tuple(values.get(f.name) for f in schema.fields)


def test_folders_said_takes_each_folders_first_path_and_parent(spark) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(3)
    rows, expected_paths, expected_parents, expected_seen = [], {}, {}, {}
    folders = [("A", 1), ("A", 2), ("B", 7)]
    for g in sorted(_places(rng, 40)):  # in order, for the expected merge
        k = rng.choice(folders)
        path = rng.choice([None, f"/p{g[0]}{g[1]}"])
        parent = rng.choice([None, ("A", g[1])])
        stores = sorted(rng.sample(SERVERS, rng.randrange(3)))
        if path:
            expected_paths.setdefault(k, path)
        if parent:
            expected_parents.setdefault(k, parent)
        expected_seen.setdefault(k, set()).update(stores)
        p = parent or (None, None)
        rows.append(
            _row(
                MSG_SCHEMA,
                out="folder",
                fs=k[0],
                fg=k[1],
                ps=p[0],
                pg=p[1],
                g_file=g[0],
                g_rec=g[1],
                text=path,
                stores=stores,
            )
        )
    rows.append(_row(MSG_SCHEMA, out="msg", fs="C", fg=3, g_file=0, g_rec=0, seq=0))
    rows.append(_row(MSG_SCHEMA, out="msg", g_file=0, g_rec=1, seq=0))  # a message without a folder
    rng.shuffle(rows)
    got, keys = merges.folders_said(spark.createDataFrame(rows, MSG_SCHEMA).repartition(3))
    assert got.paths == expected_paths
    assert got.parents == expected_parents
    assert dict(got.seen_at) == {k: v for k, v in expected_seen.items() if v}
    assert keys == {("C", 3)}


def test_records_merge_to_sites_versions_and_used_counts(spark) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(5)
    rows, sites, flags, used = [], {}, {}, {}
    for g in sorted(_places(rng, 30)):
        for n in range(rng.randrange(1, 4)):
            server, direction = rng.choice(SERVERS), rng.choice(["in", "out"])
            named = rng.choice([None, rng.choice(SERVERS)])
            site = f"SITE{g[1] % 3}" if named else None
            hints = [rng.random() < 0.3 for _ in range(3)]
            is_used = rng.random() < 0.8
            if named:
                sites.setdefault(named, site)
            f = flags.setdefault(server, [False] * 7)
            f[0] |= direction == "out"
            for i, v in enumerate(hints):
                f[1 + i] |= direction == "out" and v
                f[4 + i] |= v
            text = rng.choice(["0x2", "0x4"])
            if is_used:
                used.setdefault((server, direction, text), 0)
                used[(server, direction, text)] += 1
            rows.append(
                _row(
                    MSG_SCHEMA,
                    out="record",
                    source="f.xml",
                    record=g[1] * 10 + n,
                    server=server,
                    direction=direction,
                    text=text,
                    g_file=g[0],
                    g_rec=g[1],
                    seq=n,
                    used=is_used,
                    s=named,
                    site=site,
                    flags=hints,
                )
            )
    df = spark.createDataFrame(rows, MSG_SCHEMA).repartition(3)
    assert merges.first_sites(df) == sites
    assert merges.version_flags(df) == flags
    got = merges.used_counts(df, None)
    assert {(g["server"], g["direction"], g["text"]): g["n"] for g in got} == used
    assert [tuple(g["first"]) for g in got] == sorted(tuple(g["first"]) for g in got)


def test_groups_merge_to_links_hints_servers_and_counts(spark) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(9)
    rows, msgs, hints_first, servers, links = [], [], {}, set(), set()
    for g in sorted(_places(rng, 30)):
        for n in range(rng.randrange(3)):
            hint = (rng.choice(SERVERS), rng.randrange(1, 4), rng.choice(SERVERS))
            if hint not in hints_first:
                hints_first[hint] = (*g, n)
            rows.append(
                _row(
                    GROUP_SCHEMA, out="hint", g_file=g[0], g_rec=g[1], seq=n, s=hint[0], a=hint[1], r=hint[2]
                )
            )
            link = (rng.choice(SERVERS), rng.randrange(1, 4), rng.choice(SERVERS), rng.randrange(1, 4))
            links.add(link)
            rows.append(
                _row(
                    GROUP_SCHEMA,
                    out="link",
                    g_file=g[0],
                    g_rec=g[1],
                    seq=n,
                    s=link[0],
                    a=link[1],
                    r=link[2],
                    b=link[3],
                )
            )
        names = sorted(rng.sample(SERVERS, rng.randrange(1, 3)))
        servers |= set(names)
        rows.append(_row(GROUP_SCHEMA, out="servers", g_file=g[0], g_rec=g[1], names=names))
        msgs.append((rng.random() < 0.2, rng.random() < 0.7))
    groups = spark.createDataFrame(rows, GROUP_SCHEMA).repartition(3)
    assert merges.first_hints(groups) == sorted(hints_first, key=hints_first.__getitem__)
    assert merges.servers_named(groups) == servers
    assert merges.distinct_links(groups) == sorted(links)
    made = spark.createDataFrame(
        [_row(MSG_SCHEMA, out="msg", synthesized=s, received=r, seq=i) for i, (s, r) in enumerate(msgs)],
        MSG_SCHEMA,
    )
    expected = [len(msgs), sum(not s and not r for s, r in msgs), sum(s for s, _ in msgs)]
    assert merges.message_counts(made) == expected
