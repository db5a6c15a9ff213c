"""Unique CNs: content a replica holds that no other replica on the list is believed to hold.

A store's own belief: a delete-pending replica is deleted when its believed unique CNs are gone
(seed 003, "Deleting a Replica"). What is really at risk is ``reality.at_risk``, from what every store
owns."""

from __future__ import annotations

from collections.abc import Iterable

from pfscope.spark_jobs.model.cnset import CNSet, union_all


def unique_cns(owned: CNSet, believed_on_list: Iterable[CNSet]) -> CNSet:
    return owned.difference(union_all(believed_on_list))
