"""The topology reader: JSON and YAML agree, costs, FIDs, and every error is one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pfscope.spark_jobs.model.topology import (
    HIERARCHY_FID,
    Folder,
    Store,
    Topology,
    TopologyError,
    load_topology,
    topology_from_json,
)

VALID: dict[str, Any] = {
    "sites": ["Redmond", "Dublin", "Tokyo"],
    "costs": [{"a": "Redmond", "b": "Dublin", "cost": 10}, {"a": "Dublin", "b": "Tokyo", "cost": 0}],
    "stores": [
        {
            "name": "PFS1",
            "server": "EX01",
            "site": "Redmond",
            "version": "2003",
            "preferred_backfill_source": None,
        },
        {
            "name": "PFS2",
            "server": "EX02",
            "site": "Redmond",
            "version": "5.5",
            "preferred_backfill_source": "PFS1",
        },
        {"name": "PFS3", "site": "Dublin", "version": "2010"},
        {"name": "PFS4", "server": "EX04", "site": "Tokyo", "version": "2000"},
    ],
    "folders": [
        {"fid": "1-abc", "path": "IPM_SUBTREE\\Folder1", "parent": "1-1", "replicas": ["PFS1", "PFS2"]},
        {"fid": "2-1f", "path": "IPM_SUBTREE\\Folder1\\Sub", "parent": "1-Abc", "replicas": ["PFS3"]},
        {"fid": "1-DEF", "path": "NON_IPM_SUBTREE\\X", "replicas": []},
    ],
}

# The same organisation as YAML, written by hand: unquoted versions (2003 an int, 5.5 a float),
# flow and block style, a null written as ~ and a missing server.
VALID_YAML = r"""
# a comment
sites: [Redmond, Dublin, Tokyo]
costs:
  - {a: Redmond, b: Dublin, cost: 10}
  - a: Dublin
    b: Tokyo
    cost: 0
stores:
  - name: PFS1
    server: EX01
    site: Redmond
    version: 2003
    preferred_backfill_source: ~
  - name: PFS2
    server: EX02
    site: Redmond
    version: 5.5
    preferred_backfill_source: PFS1
  - {name: PFS3, site: Dublin, version: "2010"}
  - {name: PFS4, server: EX04, site: Tokyo, version: 2000}
folders:
  - fid: 1-abc
    path: 'IPM_SUBTREE\Folder1'
    parent: 1-1
    replicas: [PFS1, PFS2]
  - fid: 2-1f
    path: 'IPM_SUBTREE\Folder1\Sub'
    parent: 1-Abc
    replicas:
      - PFS3
  - {fid: 1-DEF, path: 'NON_IPM_SUBTREE\X', replicas: []}
"""


def write_json(tmp_path: Path, data: Any, name: str = "topology.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


@pytest.fixture()
def topo(tmp_path: Path) -> Topology:
    return load_topology(write_json(tmp_path, VALID))


# --------------------------------------------------------------------------------------------
# A valid topology
# --------------------------------------------------------------------------------------------
def test_json_loads_every_part(topo: Topology) -> None:
    assert topo.sites == ("Redmond", "Dublin", "Tokyo")
    assert topo.stores["PFS1"] == Store("PFS1", "EX01", "Redmond", "2003", None)
    assert topo.stores["PFS2"] == Store("PFS2", "EX02", "Redmond", "5.5", "PFS1")
    assert topo.stores["PFS3"] == Store("PFS3", "PFS3", "Dublin", "2010", None)  # server defaults to the name
    assert topo.store_names() == ("PFS1", "PFS2", "PFS3", "PFS4")
    assert set(topo.folders) == {"1-ABC", "2-1F", "1-DEF"}
    assert topo.folders["1-ABC"] == Folder("1-ABC", "IPM_SUBTREE\\Folder1", "1-1", ("PFS1", "PFS2"))
    assert topo.folders["2-1F"] == Folder("2-1F", "IPM_SUBTREE\\Folder1\\Sub", "1-ABC", ("PFS3",))
    assert topo.folders["1-DEF"] == Folder("1-DEF", "NON_IPM_SUBTREE\\X", None, ())


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".YAML"])
def test_yaml_and_json_load_to_the_same_topology(tmp_path: Path, topo: Topology, suffix: str) -> None:
    p = tmp_path / f"topology{suffix}"
    p.write_text(VALID_YAML, encoding="utf-8")
    from_yaml = load_topology(p)
    assert from_yaml == topo
    assert from_yaml.stores["PFS1"].version == "2003" and from_yaml.stores["PFS2"].version == "5.5"


def test_load_accepts_a_str_path(tmp_path: Path, topo: Topology) -> None:
    assert load_topology(str(write_json(tmp_path, VALID))) == topo


def test_versions_given_as_numbers_in_json(tmp_path: Path) -> None:
    data = json.loads(json.dumps(VALID))
    data["stores"][0]["version"] = 2003
    data["stores"][1]["version"] = 5.5
    t = load_topology(write_json(tmp_path, data))
    assert (t.stores["PFS1"].version, t.stores["PFS2"].version) == ("2003", "5.5")


def test_costs_are_symmetric(topo: Topology) -> None:
    assert topo.site_cost("Redmond", "Dublin") == 10
    assert topo.site_cost("Dublin", "Redmond") == 10
    assert topo.site_cost("Dublin", "Tokyo") == 0 == topo.site_cost("Tokyo", "Dublin")
    assert topo.costs == {
        ("Redmond", "Dublin"): 10,
        ("Dublin", "Redmond"): 10,
        ("Dublin", "Tokyo"): 0,
        ("Tokyo", "Dublin"): 0,
    }


@pytest.mark.parametrize("site", ["Redmond", "Dublin", "Tokyo"])
def test_same_site_costs_zero(topo: Topology, site: str) -> None:
    assert topo.site_cost(site, site) == 0


def test_unlisted_pair_has_no_affinity(topo: Topology) -> None:
    assert topo.site_cost("Redmond", "Tokyo") is None
    assert topo.site_cost("Tokyo", "Redmond") is None


def test_store_costs_follow_their_sites(topo: Topology) -> None:
    assert topo.cost("PFS1", "PFS2") == 0  # both in Redmond
    assert topo.cost("PFS1", "PFS3") == 10 == topo.cost("PFS3", "PFS1")
    assert topo.cost("PFS1", "PFS4") is None
    assert topo.cost("PFS4", "PFS3") == 0  # listed with cost 0: an affinity, not None


def test_the_same_pair_listed_twice_with_one_cost_is_fine(tmp_path: Path) -> None:
    data = {
        **VALID,
        "costs": [{"a": "Redmond", "b": "Dublin", "cost": 7}, {"a": "Dublin", "b": "Redmond", "cost": 7}],
    }
    t = load_topology(write_json(tmp_path, data))
    assert t.site_cost("Redmond", "Dublin") == 7 == t.site_cost("Dublin", "Redmond")


def test_costs_and_folders_are_optional(tmp_path: Path) -> None:
    data = {"sites": ["A"], "stores": [{"name": "P1", "site": "A", "version": "2007"}]}
    t = load_topology(write_json(tmp_path, data))
    assert t.costs == {} and t.folders == {}
    assert t.site_cost("A", "A") == 0
    data_nulls = {**data, "costs": None, "folders": None}
    assert load_topology(write_json(tmp_path, data_nulls, "t2.json")) == t


def test_hierarchy_is_implicit_on_every_store(topo: Topology) -> None:
    assert HIERARCHY_FID == "1-1"
    assert topo.initial_replicas("1-1") == ("PFS1", "PFS2", "PFS3", "PFS4")
    assert topo.initial_replicas("1-ABC") == ("PFS1", "PFS2")
    assert topo.initial_replicas("9-999") == ()
    assert "1-1" not in topo.folders


def test_fids_are_upper_cased(topo: Topology) -> None:
    for fid, folder in topo.folders.items():
        assert fid == fid.upper() == folder.fid
        assert folder.parent is None or folder.parent == folder.parent.upper()
    assert topo.folders["2-1F"].parent == "1-ABC"  # the parent was written "1-Abc"


def test_to_json_round_trips(topo: Topology) -> None:
    again = topology_from_json(json.loads(json.dumps(topo.to_json())))
    assert again == topo
    assert len(topo.to_json()["costs"]) == 2  # one entry per pair, not one per direction


def test_a_child_may_be_listed_before_its_parent(tmp_path: Path) -> None:
    data = {
        **VALID,
        "folders": [
            {"fid": "1-B", "parent": "1-A", "replicas": ["PFS1"]},
            {"fid": "1-A", "parent": "1-1", "replicas": ["PFS1"]},
        ],
    }
    t = load_topology(write_json(tmp_path, data))
    assert t.folders["1-B"].parent == "1-A"
    assert t.folders["1-B"].path == ""  # path defaults to empty


# --------------------------------------------------------------------------------------------
# Errors: one line, naming the file and the problem
# --------------------------------------------------------------------------------------------
def with_store(**over: Any) -> dict[str, Any]:
    """VALID with its first store changed (a value None removes the key)."""
    data = json.loads(json.dumps(VALID))
    store = {**data["stores"][0], **over}
    data["stores"][0] = {k: v for k, v in store.items() if v is not None}
    return data


def with_folder(**over: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(VALID))
    folder = {**data["folders"][0], **over}
    data["folders"][0] = {k: v for k, v in folder.items() if v is not None}
    return data


def with_(**over: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(VALID))
    for k, v in over.items():
        if v is None:
            data.pop(k)
        else:
            data[k] = v
    return data


ERRORS: list[tuple[str, Any, str]] = [
    ("not-an-object", [1, 2], "the topology must be an object with sites, stores and folders"),
    ("null", None, "the topology must be an object"),
    ("missing-sites", with_(sites=None), "'sites' is missing"),
    ("sites-not-list", with_(sites="Redmond"), "'sites' must be a list"),
    ("site-not-string", with_(sites=["Redmond", 5]), "site 5 must be a non-empty string"),
    ("site-empty", with_(sites=["Redmond", ""]), "site '' must be a non-empty string"),
    (
        "site-twice",
        with_(sites=["Redmond", "Dublin", "Tokyo", "Dublin"]),
        "a site is listed twice in 'sites'",
    ),
    ("missing-stores", with_(stores=None), "'stores' is missing"),
    ("stores-not-list", with_(stores={"PFS1": {}}), "'stores' must be a list"),
    ("stores-empty", with_(stores=[], folders=[]), "'stores' is empty"),
    ("costs-not-list", with_(costs={"a": "Redmond"}), "'costs' must be a list"),
    (
        "cost-not-object",
        with_(costs=[["Redmond", "Dublin", 1]]),
        "costs[0] must be an object with a, b and cost",
    ),
    (
        "cost-unknown-site",
        with_(costs=[{"a": "Redmond", "b": "Paris", "cost": 1}]),
        "costs[0] names site 'Paris', which is not in 'sites'",
    ),
    ("cost-missing-site", with_(costs=[{"a": "Redmond", "cost": 1}]), "costs[0] names site None"),
    (
        "cost-to-itself",
        with_(costs=[{"a": "Dublin", "b": "Dublin", "cost": 3}]),
        "costs[0] gives a cost from site 'Dublin' to itself",
    ),
    (
        "negative-cost",
        with_(costs=[{"a": "Redmond", "b": "Dublin", "cost": -1}]),
        "costs[0]: cost must be a whole number >= 0, not -1",
    ),
    (
        "cost-float",
        with_(costs=[{"a": "Redmond", "b": "Dublin", "cost": 1.5}]),
        "costs[0]: cost must be a whole number >= 0, not 1.5",
    ),
    (
        "cost-text",
        with_(costs=[{"a": "Redmond", "b": "Dublin", "cost": "10"}]),
        "costs[0]: cost must be a whole number >= 0, not '10'",
    ),
    (
        "cost-bool",
        with_(costs=[{"a": "Redmond", "b": "Dublin", "cost": True}]),
        "costs[0]: cost must be a whole number >= 0, not True",
    ),
    (
        "cost-missing",
        with_(costs=[{"a": "Redmond", "b": "Dublin"}]),
        "costs[0]: cost must be a whole number >= 0, not None",
    ),
    (
        "conflicting-costs",
        with_(
            costs=[{"a": "Redmond", "b": "Dublin", "cost": 10}, {"a": "Dublin", "b": "Redmond", "cost": 20}]
        ),
        "costs[1]: sites 'Dublin' and 'Redmond' are given two costs",
    ),
    (
        "conflicting-costs-same-direction",
        with_(
            costs=[{"a": "Redmond", "b": "Dublin", "cost": 10}, {"a": "Redmond", "b": "Dublin", "cost": 11}]
        ),
        "costs[1]: sites 'Redmond' and 'Dublin' are given two costs",
    ),
    ("store-not-object", with_(stores=["PFS1"]), "stores[0] must be an object"),
    ("store-name-space", with_store(name="PFS 1"), "stores[0]: name 'PFS 1' must be a string without spaces"),
    (
        "store-name-tab",
        with_store(name="PFS\t1"),
        "stores[0]: name 'PFS\\t1' must be a string without spaces",
    ),
    ("store-name-colon", with_store(name="PFS:1"), "stores[0]: name 'PFS:1' must be a string without spaces"),
    ("store-name-semicolon", with_store(name="PFS;1"), "stores[0]: name 'PFS;1' must be"),
    ("store-name-comma", with_store(name="PFS,1"), "stores[0]: name 'PFS,1' must be"),
    ("store-name-empty", with_store(name=""), "stores[0]: name '' must be"),
    ("store-name-missing", with_store(name=None), "stores[0]: name None must be"),
    ("store-name-number", with_store(name=7), "stores[0]: name 7 must be"),
    (
        "duplicate-store",
        with_(stores=[VALID["stores"][0], VALID["stores"][0]]),
        "stores[1]: store 'PFS1' is listed twice",
    ),
    (
        "unknown-site",
        with_store(site="Paris"),
        "stores[0]: store 'PFS1' is in site 'Paris', which is not in 'sites'",
    ),
    (
        "missing-site",
        with_store(site=None),
        "stores[0]: store 'PFS1' is in site None, which is not in 'sites'",
    ),
    (
        "bad-version",
        with_store(version="2016"),
        "stores[0]: store 'PFS1' has version '2016'; expected one of 5.5, 2000, 2003, 2007, 2010",
    ),
    (
        "missing-version",
        with_store(version=None),
        "stores[0]: store 'PFS1' has version None; expected one of",
    ),
    (
        "float-version",
        with_store(version=2003.0),
        "stores[0]: store 'PFS1' has version 2003.0; expected one of",
    ),
    ("empty-server", with_store(server=""), "stores[0]: server of 'PFS1' must be a non-empty string"),
    ("server-not-string", with_store(server=1), "stores[0]: server of 'PFS1' must be a non-empty string"),
    (
        "preferred-not-string",
        with_store(preferred_backfill_source=["PFS2"]),
        "stores[0]: preferred_backfill_source of 'PFS1' must be a store name or null",
    ),
    (
        "unknown-preferred",
        with_store(preferred_backfill_source="PFS9"),
        "store 'PFS1' prefers backfill source 'PFS9', which is not a store",
    ),
    (
        "self-preference",
        with_store(preferred_backfill_source="PFS1"),
        "store 'PFS1' names itself as its preferred backfill source",
    ),
    ("folders-not-list", with_(folders={"1-2": {}}), "'folders' must be a list"),
    ("folder-not-object", with_(folders=["1-2"]), "folders[0] must be an object"),
    (
        "listing-1-1",
        with_folder(fid="1-1"),
        "folders[0]: the hierarchy 1-1 is implicit and must not be listed",
    ),
    ("bad-fid", with_folder(fid="Folder1"), "folders[0]: fid 'Folder1' is not a FID like '1-2A45'"),
    ("bad-fid-hex", with_folder(fid="1-XYZ"), "folders[0]: fid '1-XYZ' is not a FID"),
    ("bad-fid-three-parts", with_folder(fid="1-2-3"), "folders[0]: fid '1-2-3' is not a FID"),
    ("bad-fid-too-long", with_folder(fid="1-" + "A" * 17), "is not a FID"),
    ("missing-fid", with_folder(fid=None), "folders[0]: fid None is not a FID"),
    ("fid-number", with_folder(fid=12), "folders[0]: fid 12 is not a FID"),
    (
        "duplicate-fid",
        with_(folders=[{"fid": "1-ABC", "replicas": []}, {"fid": "1-abc", "replicas": []}]),
        "folders[1]: folder 1-ABC is listed twice",
    ),
    ("path-not-string", with_folder(path=5), "folders[0]: path of 1-ABC must be a string"),
    ("bad-parent", with_folder(parent="root"), "folders[0]: parent 'root' of 1-ABC is not a FID"),
    ("unknown-parent", with_folder(parent="7-abc"), "folder 1-ABC has parent 7-ABC, which is not a folder"),
    (
        "replicas-not-list",
        with_folder(replicas="PFS1"),
        "folders[0]: replicas of 1-ABC must be a list of store names",
    ),
    (
        "replicas-not-strings",
        with_folder(replicas=["PFS1", 2]),
        "folders[0]: replicas of 1-ABC must be a list",
    ),
    (
        "unknown-replica",
        with_folder(replicas=["PFS1", "PFS9"]),
        "folders[0]: replica 'PFS9' of 1-ABC is not a store",
    ),
    (
        "replica-twice",
        with_folder(replicas=["PFS1", "PFS1"]),
        "folders[0]: a replica of 1-ABC is listed twice",
    ),
]


def assert_one_line(err: TopologyError, path: Path, problem: str) -> None:
    text = str(err)
    assert "\n" not in text and "\r" not in text
    assert text.startswith(f"{path}: "), text
    assert problem in text, text


@pytest.mark.parametrize(("data", "problem"), [(d, p) for _, d, p in ERRORS], ids=[i for i, _, _ in ERRORS])
def test_every_error_is_one_line_naming_the_file(tmp_path: Path, data: Any, problem: str) -> None:
    p = write_json(tmp_path, data)
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, problem)


@pytest.mark.parametrize(
    ("data", "problem"), [(d, p) for _, d, p in ERRORS[:12]], ids=[i for i, _, _ in ERRORS[:12]]
)
def test_yaml_errors_name_the_file_too(tmp_path: Path, data: Any, problem: str) -> None:
    p = tmp_path / "topology.yaml"
    p.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, problem)


def test_topology_from_json_raises_without_a_file_name() -> None:
    with pytest.raises(TopologyError, match=r"^store 'PFS1' names itself as its preferred backfill source$"):
        topology_from_json(with_store(preferred_backfill_source="PFS1"))


def test_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "nope.json"
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, "cannot read the topology: No such file or directory")


def test_a_folder_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(TopologyError) as e:
        load_topology(tmp_path)
    assert_one_line(e.value, tmp_path, "cannot read the topology: Is a directory")


def test_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "topology.json"
    p.write_bytes(b'{"sites": ["R\xe9dmond"]}')
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, "the topology is not UTF-8 text")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "not valid JSON: Expecting value at line 1"),
        ("{", "not valid JSON: "),
        ('{"sites": ["A"],\n "stores": [}', "not valid JSON: Expecting value at line 2"),
        ("sites: [A]", "not valid JSON: "),  # YAML in a .json file is read as JSON
        ('{"sites": ["A"]} {}', "not valid JSON: Extra data at line 1"),
    ],
)
def test_bad_json(tmp_path: Path, text: str, problem: str) -> None:
    p = tmp_path / "topology.json"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, problem)


@pytest.mark.parametrize(
    "text",
    [
        "sites: [Redmond, Dublin\nstores: []\n",
        "sites:\n  - Redmond\n bad-indent: 1\n",
        "sites: [a]\nstores: {name: PFS1\n",
        "\tsites: [a]\n",
        "a: b: c\n",
    ],
)
def test_bad_yaml(tmp_path: Path, text: str) -> None:
    p = tmp_path / "topology.yml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, "not valid YAML: ")


@pytest.mark.parametrize("text", ["", "# nothing\n", "- a\n- b\n", "just text\n"])
def test_yaml_that_is_not_a_mapping(tmp_path: Path, text: str) -> None:
    p = tmp_path / "topology.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, "the topology must be an object with sites, stores and folders")


# --------------------------------------------------------------------------------------------
# Genuine gaps (these fail against the current code; see the report)
# --------------------------------------------------------------------------------------------
def test_a_site_written_as_a_yaml_list_is_a_topology_error(tmp_path: Path) -> None:
    """``site: [Redmond]`` is an easy YAML slip; it must be one line, not a TypeError traceback."""
    p = tmp_path / "topology.yaml"
    p.write_text(
        "sites: [Redmond]\nstores:\n  - name: PFS1\n    site: [Redmond]\n    version: 2003\n",
        encoding="utf-8",
    )
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, "stores[0]: store 'PFS1' is in site ['Redmond'], which is not in 'sites'")


def test_a_cost_site_that_is_an_object_is_a_topology_error(tmp_path: Path) -> None:
    p = write_json(tmp_path, with_(costs=[{"a": {"name": "Redmond"}, "b": "Dublin", "cost": 1}]))
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, "costs[0] names site {'name': 'Redmond'}, which is not in 'sites'")


def test_a_store_name_ending_in_a_newline_is_refused(tmp_path: Path) -> None:
    """The name pattern ends in ``$``, which also matches before a final newline."""
    p = write_json(tmp_path, {"sites": ["A"], "stores": [{"name": "PFS1\n", "site": "A", "version": "2003"}]})
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, "stores[0]: name 'PFS1\\n' must be a string without spaces")


def test_a_fid_ending_in_a_newline_is_refused(tmp_path: Path) -> None:
    data = {
        "sites": ["A"],
        "stores": [{"name": "PFS1", "site": "A", "version": "2003"}],
        "folders": [{"fid": "1-ABC\n", "replicas": ["PFS1"]}],
    }
    p = write_json(tmp_path, data)
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    assert_one_line(e.value, p, "folders[0]: fid '1-ABC\\n' is not a FID")
