"""The TLS certificate of the engine's REST API: a self-signed one made at first start, or one given.

Like Heritrix (which makes ``adhoc.keystore`` on first run), the engine needs no setup: the first start
writes ``engine-cert.pem`` and ``engine-key.pem`` into the jobs directory and later starts reuse them, so a
client that pinned the certificate (``ca_file``) keeps working across restarts. The SHA-256 fingerprint is
printed and written beside it so an operator can check what a client sees.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from harvestdef.errors import ValidationError

CERT_FILE = "engine-cert.pem"
KEY_FILE = "engine-key.pem"
FINGERPRINT_FILE = "engine-cert.sha256"
VALIDITY = datetime.timedelta(days=3650)


class CertificateError(ValidationError, ValueError):
    """The certificate options given cannot be used (one of ``--cert``/``--key`` without the other).
    Also a ValueError, for callers that catch that."""


def _subject_alternative_names(hostnames: list[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for name in dict.fromkeys(hostnames):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            names.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(names)


def make_self_signed(cert_path: Path, key_path: Path, hostnames: list[str]) -> None:
    """Write a new self-signed certificate valid for ``hostnames`` (names or addresses)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostnames[0]),
                         x509.NameAttribute(NameOID.ORGANIZATION_NAME, "HarvestSuite crawl engine")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(_subject_alternative_names(hostnames), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_bytes = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
    # The key is written readable by its owner only, before anything else can see the file.
    descriptor = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as key_file:
        key_file.write(key_bytes)
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))


def fingerprint(cert_path: Path) -> str:
    """SHA-256 fingerprint as colon-separated upper-case hex, the way browsers and keytool show it."""
    certificate = x509.load_pem_x509_certificate(cert_path.read_bytes())
    return ":".join(f"{byte:02X}" for byte in certificate.fingerprint(hashes.SHA256()))


def ensure_certificate(jobs_dir: Path, hostnames: list[str], cert_path: Path | None = None,
                       key_path: Path | None = None) -> tuple[Path, Path]:
    """The certificate and key to serve: the given pair, else the one in the jobs dir, made if missing."""
    if cert_path is not None or key_path is not None:
        if cert_path is None or key_path is None:
            given, missing = ("--cert", "--key") if key_path is None else ("--key", "--cert")
            raise CertificateError(f"{given} {cert_path or key_path} was given without {missing}: "
                                   "--cert and --key go together")
        return cert_path, key_path
    cert_path, key_path = jobs_dir / CERT_FILE, jobs_dir / KEY_FILE
    if not (cert_path.is_file() and key_path.is_file()):
        make_self_signed(cert_path, key_path, hostnames)
    (jobs_dir / FINGERPRINT_FILE).write_text(fingerprint(cert_path) + "\n", encoding="ascii")
    return cert_path, key_path


def server_context(cert_path: Path, key_path: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_path, key_path)
    return context
