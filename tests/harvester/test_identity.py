"""A harvest controller's id: configured wins, else kept in serverDir/controller-id, else derived once from
the host name and serverDir; it survives restarts and differs between serverDirs."""

from __future__ import annotations

import re

import pytest

from harvestdef.errors import ValidationError
from harvestdef.settings import HarvesterSettings
from harvester.identity import (
    ID_FILE_NAME,
    controller_id,
    controller_id_from_settings,
    derive_controller_id,
    is_valid_controller_id,
)


def test_configured_id_wins_and_writes_nothing(tmp_path):
    (tmp_path / ID_FILE_NAME).write_text("from-file\n")
    assert controller_id(tmp_path, configured="harv01_A.1") == "harv01_A.1"
    server_dir = tmp_path / "fresh"
    assert controller_id(server_dir, configured="x") == "x"
    assert not server_dir.exists()


def test_derived_id_is_written_once_and_stable(tmp_path):
    server_dir = tmp_path / "a" / "server"
    first = controller_id(server_dir, host="harv01.kb.dk")
    assert re.fullmatch(r"harv01-[0-9a-f]{8}", first)
    assert (server_dir / ID_FILE_NAME).read_text() == first + "\n"
    assert controller_id(server_dir, host="harv01.kb.dk") == first
    # A restart on a renamed host keeps the id it has: the file, not the host, is the memory.
    assert controller_id(server_dir, host="other") == first
    assert controller_id(str(server_dir)) == first
    assert sorted(p.name for p in server_dir.iterdir()) == [ID_FILE_NAME]  # no temporary file left


def test_two_server_dirs_on_one_host_differ(tmp_path):
    one = controller_id(tmp_path / "server1", host="harv01")
    two = controller_id(tmp_path / "server2", host="harv01")
    assert one != two
    assert one.startswith("harv01-") and two.startswith("harv01-")


def test_derivation_uses_the_resolved_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert derive_controller_id("server", "h") == derive_controller_id(tmp_path / "x" / ".." / "server", "h")


@pytest.mark.parametrize(("host", "prefix"), [
    ("My_Host.example.org", "My_Host-"),
    ("høst nr 7", "h-st-nr-7-"),
    ("...", "host-"),
    ("x" * 200, "x" * 91 + "-"),
])
def test_host_name_is_sanitised(tmp_path, host, prefix):
    derived = derive_controller_id(tmp_path, host)
    assert derived.startswith(prefix)
    assert is_valid_controller_id(derived)


def test_default_host_is_this_machine(tmp_path, monkeypatch):
    monkeypatch.setattr("socket.gethostname", lambda: "node17.example.org")
    assert controller_id(tmp_path).startswith("node17-")


@pytest.mark.parametrize("bad", ["bad id!", "", "ctl/1", "x" * 101, "ÆØÅ"])
def test_corrupted_id_file_is_refused_naming_the_file(tmp_path, bad):
    (tmp_path / ID_FILE_NAME).write_text(bad + "\n", encoding="utf-8")
    with pytest.raises(ValidationError) as err:
        controller_id(tmp_path)
    assert str(tmp_path / ID_FILE_NAME) in str(err.value)
    assert "letter, a digit" in str(err.value)


def test_id_file_that_is_not_text_is_refused(tmp_path):
    (tmp_path / ID_FILE_NAME).write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValidationError, match=re.escape(str(tmp_path / ID_FILE_NAME))):
        controller_id(tmp_path)


@pytest.mark.parametrize("bad", ["a b", "ctl/1", "x" * 101, "harv01\n", "ÆØÅ", "a*"])
def test_invalid_configured_id_is_refused_naming_value_and_rule(tmp_path, bad):
    with pytest.raises(ValidationError) as err:
        controller_id(tmp_path, configured=bad)
    assert repr(bad) in str(err.value)
    assert "1 to 100 characters" in str(err.value)


def test_from_settings(tmp_path):
    derived = controller_id_from_settings(HarvesterSettings(serverDir=str(tmp_path / "server"), controllerId=""))
    assert derived == (tmp_path / "server" / ID_FILE_NAME).read_text().strip()
    configured = HarvesterSettings(serverDir=str(tmp_path / "server"), controllerId="harv01-main")
    assert controller_id_from_settings(configured) == "harv01-main"
