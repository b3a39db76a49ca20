"""Certificates made in the test: a CA, a server certificate for 127.0.0.1, a client one."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = dt.timedelta(days=1)


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(dirpath: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
           ) -> Pair:
    c, k = dirpath / f"{stem}.crt", dirpath / f"{stem}.key"
    c.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return Pair(c, k)


def make_pki(dirpath: Path) -> tuple[Pair, Pair, Pair]:
    """(ca, server, client) certificate/key files in ``dirpath``."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("tms test ca"))
          .issuer_name(_name("tms test ca")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now)
          .not_valid_after(now + VALID_FOR)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, usage: x509.ObjectIdentifier, san: list[x509.GeneralName]
             ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now).not_valid_after(now + VALID_FOR)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    server = leaf("127.0.0.1", ExtendedKeyUsageOID.SERVER_AUTH,
                  [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    client = leaf("tms test client", ExtendedKeyUsageOID.CLIENT_AUTH, [])
    return (_write(dirpath, "ca", ca, ca_key), _write(dirpath, "server", *server),
            _write(dirpath, "client", *client))
