"""Settings: flags over PFSCOPE_* variables over safe defaults; unsafe combinations refused."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pfscope.app.settings import (
    DEFAULT_DATA,
    VARIABLES,
    SettingsError,
    default_workers,
    env_flag,
    is_loopback,
    job_settings,
    load_settings,
    serve_workers,
)
from tests.tls import self_signed

CREDENTIALS = {"PFSCOPE_USER": "ops", "PFSCOPE_PASSWORD": "s3cret"}


def test_defaults_are_safe() -> None:
    s = load_settings({})
    assert s.host == "127.0.0.1" and s.port == 8050 and s.data_dir == Path(DEFAULT_DATA)
    assert s.redis_url is None and not s.auth_required


def test_serve_default_is_where_the_demo_publishes() -> None:
    # scripts/demo publishes into data/demo/published and serves it; a bare `pfscope serve` finds it too
    assert DEFAULT_DATA == "data/demo/published"
    demo = (Path(__file__).resolve().parents[3] / "scripts" / "demo").read_text()
    assert '--out "$DATA/published"' in demo and 'serve --data "$DATA/published"' in demo


def test_environment_then_flags() -> None:
    env = {
        "PFSCOPE_SERVE_DATA": "/srv/runs",
        "PFSCOPE_PORT": "9000",
        "PFSCOPE_CACHE_DIR": "/var/cache/pf",
        "PFSCOPE_REDIS_URL": "redis://cache:6379/0",
        "PFSCOPE_CACHE_TIMEOUT": "60",
    }
    s = load_settings(env)
    assert (s.data_dir, s.port, s.cache_dir, s.redis_url, s.cache_timeout) == (
        Path("/srv/runs"),
        9000,
        Path("/var/cache/pf"),
        "redis://cache:6379/0",
        60,
    )
    s = load_settings(env, data_dir="/other", port=8123)
    assert (s.data_dir, s.port) == (Path("/other"), 8123)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "pfscope.example.org", "::"])
def test_any_other_address_needs_credentials(host: str) -> None:
    with pytest.raises(SettingsError, match="without credentials"):
        load_settings({}, host=host)
    with pytest.raises(SettingsError, match="without credentials"):  # TLS does not replace them
        load_settings({"PFSCOPE_BEHIND_TLS_PROXY": "1"}, host=host)
    s = load_settings(
        {"PFSCOPE_USER": "ops", "PFSCOPE_PASSWORD": "s3cret", "PFSCOPE_BEHIND_TLS_PROXY": "1"}, host=host
    )
    assert s.auth_required and s.host == host
    assert "s3cret" not in repr(s)


@pytest.mark.parametrize("env", [{"PFSCOPE_USER": "ops"}, {"PFSCOPE_PASSWORD": "x"}])
def test_half_credentials_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="both"):
        load_settings(env)


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"PFSCOPE_PORT": "http"}, "whole number"),
        ({"PFSCOPE_PORT": "70000"}, "between"),
        ({"PFSCOPE_CACHE_TIMEOUT": "-1"}, "0 or more"),
    ],
)
def test_bad_values_are_one_line_errors(env: dict[str, str], match: str) -> None:
    with pytest.raises(SettingsError, match=match) as e:
        load_settings(env)
    assert "\n" not in str(e.value)


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.9.1", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.1", "example.org"))


# how many workers ``pfscope serve`` starts
def test_workers_flag_wins_over_the_environment_which_wins_over_the_default() -> None:
    assert serve_workers(3, {"PFSCOPE_WORKERS": "5"}) == 3
    assert serve_workers(None, {"PFSCOPE_WORKERS": "5"}) == 5
    assert serve_workers(None, {"PFSCOPE_WORKERS": " "}) == default_workers()
    assert serve_workers(None, {}) == default_workers()
    assert 1 <= default_workers() <= 12


@pytest.mark.parametrize(
    ("flag", "env", "match"),
    [
        (None, {"PFSCOPE_WORKERS": "lots"}, "PFSCOPE_WORKERS='lots' is not a whole number"),
        (None, {"PFSCOPE_WORKERS": "0"}, r"workers: 0 \(need at least 1\)"),
        (-1, {}, r"workers: -1 \(need at least 1\)"),
    ],
)
def test_bad_worker_counts_are_one_line_errors(flag: int | None, env: dict[str, str], match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        serve_workers(flag, env)


def test_the_jobs_flags_win_over_the_environment_which_wins_over_the_defaults() -> None:
    from pfscope.app.cli import _parser
    from pfscope.spark_jobs.published.runs import DEFAULT_KEEP

    def job(argv: list[str], env: dict[str, str]):  # type: ignore[no-untyped-def]
        return job_settings(
            _parser().parse_args(["compute", "--topology", "t", "--events", "e", "--out", "o", *argv]), env
        )

    assert (
        job([], {}).keep == DEFAULT_KEEP == 5
        and job([], {}).master is None
        and job([], {}).driver_memory is None
    )
    env = {"PFSCOPE_KEEP": "12", "PFSCOPE_SPARK_MASTER": "local[2]", "PFSCOPE_DRIVER_MEMORY": "6g"}
    s = job([], env)
    assert (s.keep, s.master, s.driver_memory) == (12, "local[2]", "6g")
    s = job(["--keep", "3", "--master", "local[1]"], env)
    assert (s.keep, s.master, s.driver_memory) == (3, "local[1]", "6g")
    assert job(["--keep", "0"], {}).keep == 0
    with pytest.raises(SettingsError, match="PFSCOPE_KEEP='x' is not a whole number"):
        job([], {"PFSCOPE_KEEP": "x"})


def test_every_variable_is_read_in_the_settings_module_and_listed() -> None:
    """No module but app/settings.py looks a ``PFSCOPE_*`` variable up, and VARIABLES lists them all."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    lookup = re.compile(
        r"""(?:environ\.get\(|environ\[|getenv\(|env\.get\(|env\[|env_\w+\(\w+, )["']PFSCOPE_"""
    )
    readers, named = set(), set()
    for path in [*root.joinpath("app").rglob("*.py"), *root.joinpath("spark_jobs").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        if lookup.search(text):
            readers.add(path.relative_to(root).as_posix())
        named |= set(re.findall(r"PFSCOPE_[A-Z][A-Z_]+", text))
    assert readers == {"app/settings.py"}
    assert named <= set(VARIABLES)


# TLS: credentials never travel in clear by default


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "pfscope.example.org", "::"])
def test_beyond_loopback_plain_http_is_refused_naming_both_remedies(host: str) -> None:
    with pytest.raises(SettingsError) as e:
        load_settings(CREDENTIALS, host=host)
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"refusing to serve on {host} over plain HTTP")
    assert "--certfile and --keyfile" in message and "--behind-tls-proxy" in message
    assert "PFSCOPE_CERTFILE" in message and "PFSCOPE_BEHIND_TLS_PROXY=1" in message


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_loopback_keeps_plain_http(host: str) -> None:
    s = load_settings({}, host=host)
    assert not s.tls and s.scheme == "http" and not s.behind_tls_proxy
    assert load_settings(CREDENTIALS, host=host).auth_required


def test_tls_beyond_loopback_with_credentials(tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    s = load_settings(CREDENTIALS, host="0.0.0.0", certfile=str(cert), keyfile=str(key))
    assert s.tls and s.scheme == "https" and (s.certfile, s.keyfile) == (cert, key)
    with pytest.raises(SettingsError, match="without credentials"):
        load_settings({}, host="0.0.0.0", certfile=str(cert), keyfile=str(key))
    s = load_settings(
        {**CREDENTIALS, "PFSCOPE_CERTFILE": str(cert), "PFSCOPE_KEYFILE": str(key)}, host="10.1.2.3"
    )
    assert s.tls and s.certfile == cert
    assert load_settings({}, certfile=str(cert), keyfile=str(key)).tls  # and on loopback


@pytest.mark.parametrize(
    ("flags", "env"),
    [
        ({"certfile": "CERT"}, {}),
        ({"keyfile": "KEY"}, {}),
        ({}, {"PFSCOPE_CERTFILE": "CERT"}),
        ({}, {"PFSCOPE_KEYFILE": "KEY", "PFSCOPE_CERTFILE": " "}),
    ],
)
def test_certificate_and_key_both_or_neither(
    tls_files: tuple[Path, Path], flags: dict[str, str], env: dict[str, str]
) -> None:
    files = {"CERT": str(tls_files[0]), "KEY": str(tls_files[1])}
    flags = {k: files[v] for k, v in flags.items()}
    env = {k: files.get(v, v) for k, v in env.items()}
    with pytest.raises(
        SettingsError,
        match=r"^give both --certfile and --keyfile \(PFSCOPE_CERTFILE and "
        r"PFSCOPE_KEYFILE\), or neither$",
    ):
        load_settings(env, **flags)  # type: ignore[arg-type]


def test_a_flag_and_a_variable_make_a_pair(tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    s = load_settings({"PFSCOPE_KEYFILE": str(key)}, certfile=str(cert))
    assert (s.certfile, s.keyfile) == (cert, key)


def test_tls_flags_win_over_the_environment(tls_files: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = tls_files
    env = {
        **CREDENTIALS,
        "PFSCOPE_CERTFILE": str(tmp_path / "env-cert.pem"),
        "PFSCOPE_KEYFILE": str(tmp_path / "env-key.pem"),
    }
    with pytest.raises(SettingsError, match=r"env-cert\.pem: no such file"):
        load_settings(env)
    s = load_settings(env, certfile=str(cert), keyfile=str(key))
    assert (s.certfile, s.keyfile) == (cert, key)


def test_behind_tls_proxy_flag_over_environment_over_default() -> None:
    assert load_settings({}).behind_tls_proxy is False
    assert load_settings({"PFSCOPE_BEHIND_TLS_PROXY": "yes"}).behind_tls_proxy is True
    assert load_settings({"PFSCOPE_BEHIND_TLS_PROXY": "0"}, behind_tls_proxy=True).behind_tls_proxy is True
    s = load_settings({**CREDENTIALS, "PFSCOPE_BEHIND_TLS_PROXY": "true"}, host="0.0.0.0")
    assert s.behind_tls_proxy and not s.tls and s.scheme == "http"
    assert load_settings(CREDENTIALS, host="0.0.0.0", behind_tls_proxy=True).behind_tls_proxy
    with pytest.raises(SettingsError, match="over plain HTTP"):
        load_settings({**CREDENTIALS, "PFSCOPE_BEHIND_TLS_PROXY": "no"}, host="0.0.0.0")
    with pytest.raises(SettingsError, match="PFSCOPE_BEHIND_TLS_PROXY='maybe'"):
        load_settings({"PFSCOPE_BEHIND_TLS_PROXY": "maybe"})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("true", True),
        ("yes", True),
        ("TRUE", True),
        (" Yes ", True),
        ("0", False),
        ("false", False),
        ("no", False),
        ("No", False),
        ("", None),
        ("  ", None),
    ],
)
def test_env_flag_reads_yes_and_no(raw: str, expected: bool | None) -> None:
    assert env_flag({"PFSCOPE_X": raw}, "PFSCOPE_X") is expected
    assert env_flag({}, "PFSCOPE_X") is None


@pytest.mark.parametrize("raw", ["2", "on", "off", "y", "n", "truthy", "-1"])
def test_env_flag_refuses_anything_else_in_one_line(raw: str) -> None:
    with pytest.raises(SettingsError) as e:
        env_flag({"PFSCOPE_X": raw}, "PFSCOPE_X")
    assert str(e.value) == f"PFSCOPE_X={raw!r} is not 1/true/yes or 0/false/no"


def test_tls_files_must_exist_be_readable_and_load(tls_files: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = tls_files

    def refused(certfile: Path, keyfile: Path) -> str:
        with pytest.raises(SettingsError) as e:
            load_settings({}, certfile=str(certfile), keyfile=str(keyfile))
        assert "\n" not in str(e.value)
        return str(e.value)

    assert refused(tmp_path / "nope.pem", key) == (
        f"TLS certificate (--certfile, PFSCOPE_CERTFILE) {tmp_path / 'nope.pem'}: no such file"
    )
    assert refused(cert, tmp_path / "nope.pem") == (
        f"TLS key (--keyfile, PFSCOPE_KEYFILE) {tmp_path / 'nope.pem'}: no such file"
    )
    assert refused(cert, tmp_path).endswith(f"{tmp_path}: no such file")  # a folder is not a key
    assert "do not load as a PEM certificate" in refused(cert, cert)
    (tmp_path / "garbage.pem").write_text("not a certificate")
    assert "do not load as a PEM certificate" in refused(tmp_path / "garbage.pem", key)
    other_cert, _ = self_signed(tmp_path / "other")
    assert "do not load as a PEM certificate" in refused(other_cert, key)  # a key that is not its own


def test_an_encrypted_key_is_one_line_not_a_passphrase_prompt(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path, passphrase="hunter2")
    with pytest.raises(SettingsError, match=f"^TLS key {re.escape(str(key))} is encrypted"):
        load_settings({}, certfile=str(cert), keyfile=str(key))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_key_is_refused(tls_files: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = tls_files
    locked = tmp_path / "locked.pem"
    locked.write_bytes(key.read_bytes())
    locked.chmod(0)
    with pytest.raises(SettingsError, match=r"locked\.pem: not readable"):
        load_settings({}, certfile=str(cert), keyfile=str(locked))
