"""The provisioner's pins, atomic extraction from the S3A sdist, and clear errors."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from tms.spark import provision, provision_aws, provision_shade
from tms.spark.provision_io import PinnedFile, ProvisionError


def pin(name: str, data: bytes) -> PinnedFile:
    return PinnedFile(name, len(data), hashlib.sha256(data).hexdigest())


def make_sdist(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_pinned_file_checks_presence_size_and_digest(tmp_path: Path) -> None:
    f = tmp_path / "a.jar"
    p = pin("a.jar", b"abc")
    assert "missing" in (p.problem(f) or "")
    f.write_bytes(b"abcd")
    assert "4 bytes, expected 3" in (p.problem(f) or "")
    f.write_bytes(b"abd")
    assert "sha256" in (p.problem(f) or "")
    f.write_bytes(b"abc")
    assert p.problem(f) is None
    with pytest.raises(ProvisionError, match="a.jar from somewhere"):
        pin("a.jar", b"zzz").verify(f, "somewhere")


@pytest.fixture
def fake_s3a(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    aws, sdk = b"hadoop-aws bytes", b"sdk bytes"
    members = {"sagemaker_pyspark-1.4.5/deps/jars/hadoop-aws-3.3.1.jar": aws,
               "sagemaker_pyspark-1.4.5/deps/jars/aws-java-sdk-bundle-1.11.901.jar": sdk,
               "sagemaker_pyspark-1.4.5/setup.py": b"x"}
    sdist_bytes = make_sdist(tmp_path / "s.tar.gz", members).read_bytes()
    downloads: list[int] = []

    def download(requirement: str, dest: Path, *, sdist: bool) -> Path:
        assert sdist and requirement == "sagemaker-pyspark==1.4.5"
        downloads.append(1)
        out = dest / "sagemaker_pyspark-1.4.5.tar.gz"
        out.write_bytes(sdist_bytes)
        return out

    monkeypatch.setattr(provision_aws, "pip_download", download)
    monkeypatch.setattr(provision_aws, "SAGEMAKER_SDIST",
                        pin("sagemaker_pyspark-1.4.5.tar.gz", sdist_bytes))
    monkeypatch.setattr(provision_aws, "S3A_JARS", (pin("hadoop-aws-3.3.1.jar", aws),
                                                    pin("aws-java-sdk-bundle-1.11.901.jar", sdk)))
    return downloads


def test_s3a_jars_are_extracted_checked_and_not_fetched_twice(
        tmp_path: Path, fake_s3a: list[int]) -> None:
    home = tmp_path / "home"
    paths = provision_aws.ensure_s3a_jars(home)
    assert [p.read_bytes() for p in paths] == [b"hadoop-aws bytes", b"sdk bytes"]
    assert [p.stat().st_mode & 0o777 for p in paths] == [0o644, 0o644]
    assert sorted(p.name for p in (home / "jars").iterdir()) == sorted(p.name for p in paths)
    provision_aws.ensure_s3a_jars(home)
    assert fake_s3a == [1]  # intact jars: nothing downloaded
    paths[0].write_bytes(b"truncated")
    provision_aws.ensure_s3a_jars(home)
    assert fake_s3a == [1, 1] and paths[0].read_bytes() == b"hadoop-aws bytes"


def test_a_different_sdist_is_refused_and_leaves_nothing(
        tmp_path: Path, fake_s3a: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provision_aws, "SAGEMAKER_SDIST", pin("x.tar.gz", b"other"))
    with pytest.raises(ProvisionError, match="sha256|bytes"):
        provision_aws.ensure_s3a_jars(tmp_path / "home")
    assert not list((tmp_path / "home").glob("jars/*"))


def test_missing_debian_httpclient5_names_the_packages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provision_shade, "DEBIAN_JAVA_DIR", tmp_path)
    with pytest.raises(ProvisionError, match="libhttpclient5-java libhttpcore5-java"):
        provision_shade.ensure_shaded_httpclient5(tmp_path / "home")


def test_default_jars_lists_what_exists_in_classpath_order(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    for name in reversed(provision.PROVISIONED_JARS):
        (jars / name).write_bytes(b"x")
    listed = [Path(j).name for j in provision.default_jars(tmp_path)]
    assert listed[:len(provision.PROVISIONED_JARS)] == list(provision.PROVISIONED_JARS)


def test_shim_sources_ship_with_the_package() -> None:
    from importlib import resources

    shim = resources.files("tms.spark").joinpath(provision_shade.SHIM_DIR)
    assert sorted(e.name for e in shim.iterdir() if e.name.endswith(".java")) == [
        "PoolingHttpClientConnectionManagerBuilder.java", "TlsSocketStrategy.java"]
