"""``build_cache``: when the layers of earlier builds may be used, and what a layer gives: the rows
of the groups no later run built again, their places moved to this run's share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pfscope.spark_jobs.ingest.build_cache import (
    FOLDER,
    MAX_LAYERS,
    BuildCache,
    Layer,
    compacts,
    folder_key,
    folders_again,
    kept_rows,
    last_built,
    moved_in_place,
    why_whole,
)
from pfscope.spark_jobs.ingest.build_rows import GROUP_SCHEMA

GIVEN = "digest"
KNOWN = frozenset({"EX1", "EX2"})


def _cache(*layers: Layer) -> BuildCache:
    return BuildCache(GIVEN, ["EX1", "EX2"], {"EX1": "S1", "EX2": "S2"}, [["EX1", 1, "S1"]], list(layers))


def _why(
    cache: BuildCache | None, files: list[str], known: frozenset[str] = KNOWN, given: str = GIVEN
) -> str:
    """``why_whole`` over a share of ``files`` (keys; ``key=name`` for a file named otherwise than
    ``key.xml``)."""
    keys = [f.split("=")[0] for f in files]
    return why_whole(cache, given, keys, [f.split("=")[-1] + ".xml" for f in files], set(known))


def test_why_whole() -> None:
    cache = _cache(Layer("r1-build", ["a", "", "b"], ["a.xml", "gone.xml", "b.xml"], whole=True))
    assert _why(cache, ["a", "x", "b"]) == ""  # a new file; one that could not be read is no more
    assert _why(None, ["a", "b"]) == "no earlier build"
    assert _why(_cache(), ["a", "b"]) == "no earlier build"
    assert _why(cache, ["a", "b"], given="other") == "--replids, --topology or --strict changed"
    assert _why(cache, ["a"]) == "a file left the share"
    assert _why(cache, ["b", "a"]) == "the files are in another order"
    assert _why(cache, ["a=./a", "b"]) == "the files are named otherwise (--logs)"
    assert _why(cache, ["a", "b"], KNOWN | {"EX3"}) == "the share names new servers"
    # the run that would keep MAX_LAYERS writes them as one (and only an incremental run has layers)
    assert not compacts(None)
    assert not compacts(_cache(*[Layer(f"r{i}-build", ["a"], ["a.xml"]) for i in range(MAX_LAYERS - 2)]))
    assert compacts(_cache(*[Layer(f"r{i}-build", ["a"], ["a.xml"]) for i in range(MAX_LAYERS - 1)]))
    assert BuildCache.from_json(cache.to_json()) == cache


def _layer(spark: Any, root: Path, name: str, rows: list[dict[str, Any]], touched: list[str] | None) -> None:
    """A layer's ``groups/`` as a build step writes it (by kind), and the keys it built."""
    df = spark.createDataFrame(
        [tuple(r.get(f.name) for f in GROUP_SCHEMA.fields) for r in rows], GROUP_SCHEMA
    )
    df.write.partitionBy("out").parquet(str(root / name / "groups"))
    if touched is not None:
        spark.createDataFrame([(k,) for k in touched], "msg_key string").write.parquet(
            str(root / name / "touched")
        )


def test_a_layer_gives_the_groups_no_later_run_built_their_places_moved(spark: Any, tmp_path: Path) -> None:
    def link(key: str, g_file: int, rec: int) -> dict[str, Any]:
        return {"out": "link", "msg_key": key, "g_file": g_file, "g_rec": rec, "seq": 0, "s": "EX1", "a": 1}

    # the first run read files a, b (indexes 0, 1); the second read c, which sorts between them
    # (a, c, b), and built m2 again; this run reads d (a, c, d, b) and builds m3 again
    _layer(spark, tmp_path, "r1-build", [link("m1", 1, 5), link("m2", 1, 7), link("m3", 1, 9)], None)
    _layer(spark, tmp_path, "r2-build", [link("m2", 1, 1)], ["m2"])
    _layer(
        spark,
        tmp_path,
        "r1-build-rejects",
        [{"out": "reject", "msg_key": "m1", "g_file": 0, "sort": [0, 5, 0], "phase": 1}],
        None,
    )
    cache = _cache(Layer("r1-build", ["a", "b"], [], whole=True), Layer("r2-build", ["a", "c", "b"], []))
    touched = spark.createDataFrame([("m3",)], "msg_key string")
    last = last_built(spark, str(tmp_path), cache, touched)
    got = kept_rows(spark, str(tmp_path), cache, "groups", GROUP_SCHEMA, ["a", "c", "d", "b"], last)
    assert got is not None
    assert sorted((r["msg_key"], r["g_file"], r["g_rec"]) for r in got.collect()) == [
        ("m1", 3, 5),
        ("m2", 1, 1),
    ]
    # a reject's place starts with its file: moved with it
    cache = _cache(Layer("r1-build-rejects", ["b", "a"], [], whole=True))
    last = last_built(spark, str(tmp_path), cache, touched)
    got = kept_rows(spark, str(tmp_path), cache, "groups", GROUP_SCHEMA, ["a", "c", "d", "b"], last)
    assert got is not None
    assert [(r["g_file"], r["sort"]) for r in got.collect()] == [(3, [3, 5, 0])]


def test_a_kept_folders_places_in_the_log_move_with_its_files(spark: Any) -> None:
    """A line's place holds its message's file index 4th, a reject's 2nd, a statistic's 5th when it
    was counted at a line (``derive.Key``); nothing else moves."""
    rows = [
        {"out": "line", "sort": [9, 1, 8, 0, 5, 2, 0]},
        {"out": "reject", "sort": [8, 1, 5, 2, 0]},
        {"out": "stat", "sort": [3, 9, 1, 8, 1, 5, 2, 0]},
        {"out": "stat", "sort": [1]},
    ]
    df = spark.createDataFrame([(r["out"], r["sort"]) for r in rows], "out string, sort array<long>")
    schema = df.schema
    got = moved_in_place(df, [(0, 0), (1, 2)], schema).collect()
    assert [r["sort"] for r in got] == [[9, 1, 8, 0, 5, 2, 0], [8, 2, 5, 2, 0], [3, 9, 1, 8, 2, 5, 2, 0], [1]]
    assert moved_in_place(df, [(0, 0), (1, 1)], schema) is df  # no file moved: the rows as they are


def test_the_folders_derived_again(spark: Any, tmp_path: Path) -> None:
    """Those of the messages built again, where they were and where they are; those whose FID or
    replicas changed since the latest layer derived them; no other."""
    root = tmp_path / "rows"
    msgs = "out string, fs string, fg long, msg_key string"

    def layer(name: str, messages: list[tuple[Any, ...]], folders: list[tuple[str, str]]) -> Layer:
        spark.createDataFrame(messages, msgs).write.parquet(str(root / name / "messages"))
        spark.createDataFrame(folders, f"{FOLDER} string, inputs string").write.parquet(
            str(root / name / "folders")
        )
        return Layer(name, [], [])

    def key(fs: str | None, fg: int | None) -> str:
        got = spark.createDataFrame([(fs, fg)], "fs string, fg long").select(folder_key()).first()
        return str(got[0])

    a, b, c, d, h = key("S1", 1), key("S1", 2), key("S2", 1), key("S2", 7), key(None, None)
    assert h == "" and len({a, b, c, d, h}) == 5
    first = layer(
        "r1-build",
        [("msg", "S1", 1, "m1"), ("msg", "S1", 2, "m2"), ("msg", "S2", 1, "m3"), ("record", "S2", 7, "m1")],
        [(a, "A"), (b, "B"), (c, "C"), (d, "D"), (h, "H")],
    )
    second = layer("r2-build", [("msg", "S2", 1, "m3")], [(c, "C2")])  # c's replicas changed then
    cache = _cache(first, second)
    touched = spark.createDataFrame([("m1",)], "msg_key string")  # built again: now in S2/7
    now = spark.createDataFrame([("msg", "S2", 7, "m1")], msgs)
    inputs = spark.createDataFrame(
        [(a, "A"), (b, "B2"), (c, "C2"), (d, "D"), (h, "H")], f"{FOLDER} string, inputs string"
    )
    got = folders_again(spark, str(root), cache, touched, now, inputs).collect()
    # a: where m1 was; d: where it is; b: its inputs changed; c: as the latest layer derived it
    assert sorted((r[FOLDER], r["inputs"]) for r in got) == [(a, "A"), (b, "B2"), (d, "D")]
    gone = inputs.where(f"{FOLDER} != '{b}'")  # a folder no longer named: derived again, as nothing
    got = folders_again(spark, str(root), cache, touched.limit(0), now.limit(0), gone).collect()
    assert [(r[FOLDER], r["inputs"]) for r in got] == [(b, "")]
    # once a layer has derived it as gone, it is not derived again
    third = layer("r3-build", [], [(b, "")])
    cache = _cache(first, second, third)
    assert not folders_again(spark, str(root), cache, touched.limit(0), now.limit(0), gone).collect()
