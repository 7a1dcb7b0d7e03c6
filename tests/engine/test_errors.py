"""The engine's errors sit in harvestdef's one hierarchy and are still caught by the builtin bases that
callers caught before they joined it."""

from __future__ import annotations

import pytest

from harvestdef.errors import CrawlEngineError, HarvestSuiteError, NotFoundError, ValidationError
from harvester.engine.beans import BeanError
from harvester.engine.checkpoint import CheckpointError
from harvester.engine.config import ConfigError
from harvester.engine.crawl import CrawlStateError
from harvester.engine.fetching.hostsfile import HostsFileError, parse_hosts
from harvester.engine.rest.jobregistry import JobActionError, UnknownJobError
from harvester.engine.rest.tls import CertificateError, ensure_certificate


@pytest.mark.parametrize(("error", "harvestdef_base", "builtin_base"), [
    (ConfigError("bad"), ValidationError, None),
    (BeanError("bad"), ValidationError, None),
    (HostsFileError("bad"), ValidationError, ValueError),
    (UnknownJobError("basic"), NotFoundError, KeyError),
    (JobActionError("refused"), CrawlEngineError, None),
    (CrawlStateError("refused"), CrawlEngineError, RuntimeError),
    (CertificateError("half"), ValidationError, ValueError),
    (CheckpointError("old"), CrawlEngineError, None),
])
def test_each_engine_error_has_its_harvestdef_base_and_keeps_its_builtin_one(
        error: Exception, harvestdef_base: type, builtin_base: type | None) -> None:
    assert isinstance(error, harvestdef_base)
    assert isinstance(error, HarvestSuiteError)
    if builtin_base is not None:
        assert isinstance(error, builtin_base)


def test_unknown_job_names_the_job_like_not_found_does() -> None:
    error = UnknownJobError("basic")
    assert (error.kind, error.key) == ("job", "basic")
    assert str(error) == "no job 'basic'"


def test_config_errors_keep_line_and_column() -> None:
    error = ConfigError("not well-formed", line=3, column=7)
    assert (error.line, error.column) == (3, 7)


def test_a_bad_hosts_line_is_caught_as_value_error_and_as_validation_error() -> None:
    with pytest.raises(ValueError, match="hosts:1:"):
        parse_hosts("not-an-address-line\n", source="hosts")
    with pytest.raises(ValidationError):
        parse_hosts("example.org not.an.ip\n", source="hosts")


def test_a_certificate_without_its_key_is_a_validation_error_naming_both_options(tmp_path) -> None:
    with pytest.raises(CertificateError, match=r"--cert .*cert.pem was given without --key"):
        ensure_certificate(tmp_path, ["localhost"], cert_path=tmp_path / "cert.pem")
    with pytest.raises(ValidationError, match=r"--key .*key.pem was given without --cert"):
        ensure_certificate(tmp_path, ["localhost"], key_path=tmp_path / "key.pem")
