"""The reader's file names (``compute.reading``): each URI Spark reports is the file it was listed
as, so that a line's ``seq`` holds the index of its file in the sorted list."""

from __future__ import annotations

import os
from pathlib import Path

from pfscope.spark_jobs.compute.reading import _match_names


def test_each_uri_is_the_first_listed_file_it_names(tmp_path: Path) -> None:
    folder = tmp_path / "a log"  # a space: Spark's URI encodes it
    folder.mkdir()
    for name in ("1.jsonl", "2.jsonl", "3.jsonl"):
        (folder / name).write_text("x\n", encoding="utf-8")
    os.symlink(folder / "3.jsonl", tmp_path / "link.jsonl")
    files = [
        str(folder / "1.jsonl"),
        os.path.relpath(folder / "2.jsonl"),  # relative: named by where it resolves
        str(tmp_path / "link.jsonl"),  # a link: Spark names what it points to
        str(folder / "3.jsonl"),  # the same file again: the first listing wins
    ]
    uris = [f"file:{(folder / n).as_posix().replace(' ', '%20')}" for n in ("3.jsonl", "1.jsonl", "2.jsonl")]
    # named by no listed file: after them, each by its place among all the URIs sorted
    unknown = ["hdfs://nn/b.jsonl", "hdfs://nn/a.jsonl"]
    assert _match_names(files, uris + unknown) == {
        uris[0]: 2,
        uris[1]: 0,
        uris[2]: 1,
        unknown[0]: len(files) + 4,
        unknown[1]: len(files) + 3,
    }


def test_a_uri_listed_as_it_is_needs_no_resolving() -> None:
    uri = "s3a://bucket/events/1.jsonl"
    assert _match_names(["/x/0.jsonl", uri], [uri]) == {uri: 1}


def test_many_files_are_matched_without_a_pass_over_the_list_for_each(tmp_path: Path) -> None:
    files = [str(tmp_path / f"{n:05d}.jsonl") for n in range(5_000)]
    uris = [f"file:{f}" for f in reversed(files)]
    assert _match_names(files, uris) == {u: len(files) - 1 - k for k, u in enumerate(uris)}
