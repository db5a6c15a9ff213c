"""A throw-away self-signed certificate for the TLS tests: the ``openssl`` command line, else the
``cryptography`` package; neither: the test is skipped (saying why)."""

from __future__ import annotations

import datetime
import shutil
import subprocess
from pathlib import Path

import pytest


def self_signed(folder: Path, *, passphrase: str | None = None) -> tuple[Path, Path]:
    """(certificate, key) as PEM files in ``folder``, valid for 127.0.0.1 and localhost for a day;
    the key encrypted with ``passphrase`` when given."""
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    openssl = shutil.which("openssl")
    if openssl:
        secrecy = ["-passout", f"pass:{passphrase}"] if passphrase else ["-nodes"]
        subprocess.run(
            [
                openssl,
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                *secrecy,
                "-keyout",
                str(key),
                "-out",
                str(cert),
                "-days",
                "1",
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        return cert, key
    try:
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID
    except ImportError:
        pytest.skip("neither the openssl command nor the cryptography package: no certificate to test with")
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(private, hashes.SHA256())
    )
    encryption = (
        serialization.BestAvailableEncryption(passphrase.encode())
        if passphrase
        else serialization.NoEncryption()
    )
    key.write_bytes(
        private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return cert, key
