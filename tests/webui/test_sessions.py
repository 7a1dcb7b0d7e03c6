"""Sessions that end: logout and a password change end every session of the user, a copied cookie too;
failed logins are throttled per user name and per client address, and logged; a login costs one password
hash whether the name is a user's or not."""

from __future__ import annotations

import cProfile
import logging
import pstats
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, select

from harvestdef.db import schema as s
from harvestdef.model.definitions import Role
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.users import UserRepository, _stand_in_hash
from harvestdef.settings import load_settings
from tests.webui.conftest import PASSWORD, csrf_of
from webui import create_app

NEW_PASSWORD = "a brand new passphrase"


def copy_of(client: FlaskClient | str, app: Flask) -> FlaskClient:
    """Another client holding a copy of ``client``'s session cookie (or of a cookie value), as a thief would."""
    stolen = app.test_client()
    stolen.set_cookie("session", client if isinstance(client, str) else client.get_cookie("session").value)
    return stolen


def is_logged_in(client: FlaskClient) -> bool:
    response = client.get("/")
    assert response.status_code in (200, 302), response.status_code
    return response.status_code == 200


def log_in(app: Flask, name: str, password: str, address: str = "127.0.0.1"):
    client = app.test_client()
    token = csrf_of(client)
    response = client.post("/login", data={"name": name, "password": password, "csrf_token": token},
                           environ_base={"REMOTE_ADDR": address})
    return client, response


# ---------------------------------------------------------------------------------------------- sessions
def test_a_cookie_copied_before_logout_is_refused_after_it(app: Flask, login: Callable[[str], FlaskClient]):
    client = login("curator")
    cookie = client.get_cookie("session").value
    stolen = copy_of(cookie, app)
    elsewhere = login("curator")  # the same user in another browser
    other_user = login("operator")
    assert is_logged_in(stolen) and is_logged_in(elsewhere)

    assert client.post("/logout", data={"csrf_token": client.csrf}).status_code == 302

    assert not is_logged_in(client)
    assert not is_logged_in(stolen)
    assert not is_logged_in(elsewhere)
    api = stolen.get("/api/v1/harvesters")
    assert api.status_code == 401 and api.get_json()["error"]["code"] == "unauthorized"
    assert is_logged_in(other_user)  # another user's sessions are not touched
    # a new login works, and the old cookie stays refused
    again = login("curator")
    assert is_logged_in(again) and not is_logged_in(copy_of(cookie, app))


def test_a_password_change_ends_every_session_of_the_user(app: Flask, login: Callable[[str], FlaskClient],
                                                           tokens: dict[str, str]):
    changing, other_client = login("operator"), login("operator")
    stolen = copy_of(other_client, app)
    assert "Change password" in changing.get("/password").get_data(as_text=True)

    wrong = changing.post("/password", data={"csrf_token": changing.csrf, "password": "not it",
                                             "new_password": NEW_PASSWORD, "repeated_password": NEW_PASSWORD})
    assert wrong.status_code == 401 and "current password is wrong" in wrong.get_data(as_text=True)
    assert is_logged_in(other_client)  # nothing changed yet
    changed = changing.post("/password", data={"csrf_token": changing.csrf, "password": PASSWORD,
                                               "new_password": NEW_PASSWORD, "repeated_password": NEW_PASSWORD})
    assert changed.status_code == 302 and changed.headers["Location"] == "/login"

    assert not is_logged_in(changing) and not is_logged_in(other_client) and not is_logged_in(stolen)
    assert log_in(app, "operator", PASSWORD)[1].status_code == 401
    client, response = log_in(app, "operator", NEW_PASSWORD)
    assert response.status_code == 302 and is_logged_in(client)
    # API tokens are separate credentials (harvestdef/repositories/users.py set_password): still valid
    by_token = app.test_client().get("/api/v1/harvesters", headers={"Authorization": f"Bearer {tokens['operator']}"})
    assert by_token.status_code == 200


def test_an_admin_sets_a_password_from_the_command_line_and_the_sessions_end(
        app: Flask, login: Callable[[str], FlaskClient], webui_engine: Engine):
    client = login("curator")
    command = [sys.executable, "-m", "harvestdef", "--set", f"harvestsuite.database.url={webui_engine.url}",
               "users", "password"]
    changed = subprocess.run([*command, "curator"], input=NEW_PASSWORD + "\n", capture_output=True, text=True,
                             timeout=60)
    assert changed.returncode == 0 and "every session of the user has ended" in changed.stdout, changed.stderr
    assert not is_logged_in(client)
    assert log_in(app, "curator", NEW_PASSWORD)[1].status_code == 302
    unknown = subprocess.run([*command, "nobody"], input=NEW_PASSWORD + "\n", capture_output=True, text=True,
                             timeout=60)
    assert unknown.returncode == 2 and "no user 'nobody'" in unknown.stderr


def test_an_admin_changes_a_role_from_the_command_line_and_it_holds_from_the_next_request(
        app: Flask, login: Callable[[str], FlaskClient], webui_engine: Engine):
    client = login("curator")
    assert client.get("/definitions/harvests/new/selective").status_code == 200
    command = [sys.executable, "-m", "harvestdef", "--set", f"harvestsuite.database.url={webui_engine.url}",
               "users", "role"]
    changed = subprocess.run([*command, "curator", "archivist", "--actor", "admin"], capture_output=True,
                             text=True, timeout=60)
    assert changed.returncode == 0 and "user curator is now archivist" in changed.stdout, changed.stderr
    assert client.get("/definitions/harvests/new/selective").status_code == 403 and is_logged_in(client)
    with webui_engine.connect() as conn:
        user = UserRepository(conn).get("curator")
        (change, *_) = AuditRepository(conn).changes_of("users", user.user_id)
    assert user.role is Role.ARCHIVIST and user.edition == 2
    assert (change.actor, change.before["role"], change.after["role"]) == ("admin", "curator", "archivist")
    unknown = subprocess.run([*command, "nobody", "admin"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "no user 'nobody'" in unknown.stderr
    bad_role = subprocess.run([*command, "curator", "superuser"], capture_output=True, text=True, timeout=60)
    assert bad_role.returncode == 2 and "superuser" in bad_role.stderr


def test_a_bad_new_password_changes_nothing(app: Flask, login: Callable[[str], FlaskClient], webui_engine: Engine):
    client = login("archivist")
    short = client.post("/password", data={"csrf_token": client.csrf, "password": PASSWORD,
                                           "new_password": "short", "repeated_password": "short"})
    assert short.status_code == 400 and "at least 8 characters" in short.get_data(as_text=True)
    differ = client.post("/password", data={"csrf_token": client.csrf, "password": PASSWORD,
                                            "new_password": NEW_PASSWORD, "repeated_password": NEW_PASSWORD + "x"})
    assert differ.status_code == 400 and "differ" in differ.get_data(as_text=True)
    assert is_logged_in(client)
    with webui_engine.connect() as conn:
        assert UserRepository(conn).authenticate("archivist", PASSWORD) is not None


# ---------------------------------------------------------------------------------------------- throttling
@pytest.fixture
def throttled_app(webui_engine: Engine, tmp_path) -> Flask:
    """Three failures of a name, or four from an address, are free; then a 1 s wait, doubling to at most 2 s."""
    settings = load_settings(environ={}, overrides={
        "harvestsuite.webui.secretKey": "test-secret", "harvestsuite.archive.root": str(tmp_path / "archive"),
        "harvestsuite.webui.loginFailuresPerUser": 3, "harvestsuite.webui.loginFailuresPerAddress": 4,
        "harvestsuite.webui.loginDelay": 1, "harvestsuite.webui.loginDelayMax": 2,
        "harvestsuite.webui.loginFailureMemory": 60})
    return create_app(settings, webui_engine, {"TESTING": True})


def test_failed_logins_are_throttled_per_user_and_per_address_and_logged(throttled_app: Flask, caplog):
    caplog.set_level(logging.WARNING, logger="webui.auth")
    for _ in range(3):
        assert log_in(throttled_app, "curator", "wrong password", "10.0.0.1")[1].status_code == 401
    assert "failed login of user 'curator' from 10.0.0.1 (3 in a row of the user, 3 of the address" in caplog.text

    # the name is throttled from any address, even with the right password, which is not checked
    _, refused = log_in(throttled_app, "curator", PASSWORD, "10.0.0.3")
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
    assert "Too many failed logins" in refused.get_data(as_text=True)
    assert "login of user 'curator' from 10.0.0.3 refused: too many failed logins" in caplog.text
    # another user from another address is not held up by these failures
    assert log_in(throttled_app, "operator", PASSWORD, "10.0.0.2")[1].status_code == 302
    # the address's fourth failure (with a name nobody has) throttles the address for every name
    assert log_in(throttled_app, "nobody", "wrong password", "10.0.0.1")[1].status_code == 401
    _, from_address = log_in(throttled_app, "operator", PASSWORD, "10.0.0.1")
    assert from_address.status_code == 429
    assert "login of user 'operator' from 10.0.0.1 refused" in caplog.text

    time.sleep(1.1)  # the wait is over: the right password works, and the name's count starts again
    client, response = log_in(throttled_app, "curator", PASSWORD, "10.0.0.3")
    assert response.status_code == 302 and is_logged_in(client)
    assert log_in(throttled_app, "curator", "wrong password", "10.0.0.3")[1].status_code == 401
    # the address's count is not reset by a success from it
    assert log_in(throttled_app, "operator", "wrong password", "10.0.0.1")[1].status_code == 401
    _, again = log_in(throttled_app, "operator", PASSWORD, "10.0.0.1")
    assert again.status_code == 429 and again.headers["Retry-After"] == "2"  # doubled after the fifth


def test_a_wrong_current_password_counts_as_a_failed_login(throttled_app: Flask):
    client, response = log_in(throttled_app, "archivist", PASSWORD, "10.0.0.5")
    assert response.status_code == 302
    csrf = csrf_of(client, "/")
    form = {"csrf_token": csrf, "password": "guess", "new_password": NEW_PASSWORD, "repeated_password": NEW_PASSWORD}
    for _ in range(3):
        assert client.post("/password", data=form, environ_base={"REMOTE_ADDR": "10.0.0.5"}).status_code == 401
    refused = client.post("/password", data={**form, "password": PASSWORD}, environ_base={"REMOTE_ADDR": "10.0.0.5"})
    assert refused.status_code == 429 and "Retry-After" in refused.headers


# ---------------------------------------------------------------------------------------------- equal work
def scrypt_calls(action: Callable[[], object]) -> int:
    """How many times ``action`` computed scrypt, counted by the profiler (hashlib's C function)."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        action()
    finally:
        profiler.disable()
    return sum(calls for (_, _, function), (_, calls, *_) in pstats.Stats(profiler).stats.items()
               if "scrypt" in function)


def test_known_and_unknown_users_cost_one_password_hash_each(webui_engine: Engine, tmp_path):
    # no throttling here: a refused attempt checks no password at all, for any name
    app = create_app(load_settings(environ={}, overrides={
        "harvestsuite.webui.secretKey": "test-secret", "harvestsuite.archive.root": str(tmp_path / "archive"),
        "harvestsuite.webui.loginFailuresPerUser": 1000, "harvestsuite.webui.loginFailuresPerAddress": 1000}),
        webui_engine, {"TESTING": True})
    with webui_engine.begin() as conn:
        users = UserRepository(conn)
        users.create("no-password-yet", "curator")
        retired = users.create("retired", "curator", password=PASSWORD)
        users.set_active("retired", False, retired.edition)
        hashes = list(conn.scalars(select(s.users.c.password_hash).where(s.users.c.password_hash.is_not(None))))
    log_in(app, "somebody", "warming up")  # the stand-in hash is made once per process, at the first use

    attempts = {"known user, wrong password": ("curator", "wrong password"),
                "known user, right password": ("curator", PASSWORD),
                "unknown user": ("nobody-of-that-name", "wrong password"),
                "inactive user": ("retired", PASSWORD),
                "user without a password": ("no-password-yet", "anything at all")}
    for what, (name, password) in attempts.items():
        assert scrypt_calls(lambda name=name, password=password: log_in(app, name, password)) == 1, what
    # the stand-in is made with the cost of the stored hashes (scrypt$n$r$p$...), so each call costs the same:
    # one scrypt of the same cost whatever the name, which is what makes the answers equally slow (checked
    # exactly here, not by timing them on a shared machine)
    assert {tuple(h.split("$")[:4]) for h in hashes} == {tuple(_stand_in_hash().split("$")[:4])}
