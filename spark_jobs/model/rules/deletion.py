"""Unique CNs: content a replica holds that no other replica on the list is believed to hold.

For a delete-pending replica they are the content at risk; when they are gone the replica is
deleted (seed 003, "Deleting a Replica")."""

from __future__ import annotations

from collections.abc import Iterable

from pfscope.spark_jobs.model.cnset import CNSet, union_all


def unique_cns(owned: CNSet, believed_on_list: Iterable[CNSet]) -> CNSet:
    return owned.difference(union_all(believed_on_list))
