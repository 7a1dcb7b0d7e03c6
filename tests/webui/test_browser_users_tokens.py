"""Users and API tokens in Debian's chromium, served by ``harvestsuite webui run``: an admin adds a user with a
role in the Users page (a refused try first, its refusal beside its field); that user logs in, makes a named
token on their API tokens page, calls the API with its secret, sees the call as the token's last use, revokes
the token (confirming) and the API refuses it from then on. Reloading the page of a token's secret makes no
second token and shows the secret no more; in Danish, the roles read in Danish words wherever a page shows one."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.webui.browser import ServedWebui, log_in, screenshot
from tests.webui.conftest import PASSWORD as USERS_PASSWORD

pytestmark = pytest.mark.timeout(300)

PASSWORD = "a password of Karen's"
USE_SECONDS = 30.0  # the token's use is written within harvestsuite.webui.tokenUseInterval (1 s here)


def new_page(browser: Any, webui: ServedWebui) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=webui.url, locale="en-US")
    context.set_default_timeout(15_000)
    return context.new_page()


def call_api(webui: ServedWebui, path: str, secret: str) -> tuple[int, Any]:
    """A script's request: GET ``path`` with the token, its status and JSON answer."""
    request = urllib.request.Request(webui.url + path, headers={"Authorization": f"Bearer {secret}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as refused:
        return refused.code, json.load(refused)


def test_a_user_added_in_the_pages_makes_uses_and_revokes_a_named_token(browser, tmp_path: Path):
    # no token cache, so the revocation is refused at the very next call
    with ServedWebui(tmp_path, users=("admin",), settings={"harvestsuite.webui.tokenUseInterval": "1",
                                                           "harvestsuite.webui.tokenCacheSeconds": "0"}) as webui:
        admin = new_page(browser, webui)
        log_in(admin, webui.url, "admin")
        admin.get_by_role("link", name="Users").click()
        form = admin.locator("#add-user")
        form.get_by_label("User name").fill("karen")
        form.get_by_label("Full name (optional)").fill("Karen Blixen")
        form.get_by_label("Role").select_option("curator")
        assert form.locator(".field-hint").inner_text() == "at least 8 characters"
        form.get_by_label("Password", exact=True).fill("short")
        form.get_by_label("Password again").fill("short")
        form.get_by_role("button", name="Add user").click()
        admin.wait_for_load_state()
        refusal = form.locator('[name="password"] ~ .refusal')
        assert refusal.inner_text() == "A password needs at least 8 characters; this one has 5."
        # the refusal is inside the field's label: the field is found by its name now
        password, repeated = form.locator('[name="password"]'), form.locator('[name="repeated_password"]')
        assert password.get_attribute("aria-describedby") == "refusal-password"
        assert password.input_value() == "" and repeated.input_value() == "", "a password is never sent back"
        assert admin.locator(".flash.error").inner_text() == (
            "The user was not added: A password needs at least 8 characters; this one has 5.")
        assert form.get_by_label("User name").input_value() == "karen"
        assert form.get_by_label("Full name (optional)").input_value() == "Karen Blixen"
        assert form.get_by_label("Role").input_value() == "curator"
        screenshot(admin, tmp_path, "users-add-refused")
        password.fill(PASSWORD)
        repeated.fill(PASSWORD)
        form.get_by_role("button", name="Add user").click()
        admin.wait_for_load_state()
        assert "User karen is added as curator" in admin.locator(".flash").first.inner_text()
        assert admin.locator('tr[data-user="karen"]').get_by_label("role of karen").input_value() == "curator"

        karen = new_page(browser, webui)
        log_in(karen, webui.url, "karen", PASSWORD)
        assert karen.locator("header.top .who").inner_text().startswith("karen (curator)")
        karen.get_by_role("link", name="API tokens").click()
        karen.get_by_label("Label: what the token is for (a script, a machine)").fill("nightly export")
        karen.get_by_role("button", name="Make token").click()
        karen.wait_for_load_state()
        secret = karen.locator("#token-secret").input_value()
        assert secret.startswith("hs_")
        copy = karen.get_by_role("button", name="Copy")
        copy.click()
        karen.get_by_role("button", name="Copied").wait_for()
        screenshot(karen, tmp_path, "tokens-made")

        status, answer = call_api(webui, "/api/v1/users/karen/tokens", secret)
        assert status == 200 and [item["label"] for item in answer["items"]] == ["nightly export"]
        (token_id,) = [item["id"] for item in answer["items"]]

        karen.goto("/system/users/karen/tokens")
        row = karen.locator(f'tr[data-token="{token_id}"]')
        assert secret not in karen.content() and row.locator("td").nth(1).inner_text() == "nightly export"
        deadline = time.monotonic() + USE_SECONDS
        while row.locator("td.last-used").inner_text() == "never":
            assert time.monotonic() < deadline, "the page never showed the token's use"
            time.sleep(0.2)
            karen.reload()
        assert row.locator("td.last-used").inner_text().endswith("UTC")

        asked = []

        def confirm(dialog: Any) -> None:
            asked.append(dialog.message)
            dialog.accept()
        karen.once("dialog", confirm)
        row.get_by_role("button", name="Revoke").click()
        karen.wait_for_load_state()
        assert asked and "nightly export" in asked[0]
        flashed = karen.locator(".flash").first.inner_text()
        assert f"API token {token_id} (nightly export) of karen is revoked" in flashed
        assert row.locator(".status").inner_text() == "revoked"
        screenshot(karen, tmp_path, "tokens-revoked")

        status, answer = call_api(webui, "/api/v1/users/karen/tokens", secret)
        assert status == 401 and answer["error"]["message"] == "the API token is unknown or revoked"


def token_ids(webui: ServedWebui, name: str) -> list[int]:
    """The ids of the API tokens of ``name``, as ``harvestsuite users tokens`` lists them from the database."""
    listed = webui.harvestsuite("users", "tokens", name).splitlines()[1:]  # under the heading line
    return [int(line.split()[0]) for line in listed]


def test_reloading_the_page_of_a_new_secret_makes_no_second_token_and_shows_the_secret_no_more(browser, tmp_path):
    with ServedWebui(tmp_path, users=("curator",)) as webui:
        page = new_page(browser, webui)
        log_in(page, webui.url, "curator")
        page.goto("/system/users/curator/tokens")
        page.get_by_label("Label: what the token is for (a script, a machine)").fill("nightly export")
        with page.expect_navigation() as made:
            page.get_by_role("button", name="Make token").click()
        assert made.value.status == 201 and made.value.headers["cache-control"] == "no-store"
        secret = page.locator("#token-secret").input_value()
        (token_id,) = token_ids(webui, "curator")

        for _ in range(3):  # the browser sends the same form again each time
            answer = page.reload()
            assert answer.request.method == "POST" and answer.status == 200
            assert secret not in page.content()
            assert page.locator("#token-secret").count() == 0
            said = page.locator("#made-already").inner_text()
            assert f"API token {token_id} “nightly export” is made already" in said
            assert "was shown once, when it was made, and is not kept" in said
            assert page.locator("table.tokens tbody tr[data-token]").count() == 1
        screenshot(page, tmp_path, "tokens-made-already")

        assert token_ids(webui, "curator") == [token_id]
        status, answer = call_api(webui, "/api/v1/users/curator/tokens", secret)
        assert status == 200 and [(item["id"], item["label"]) for item in answer["items"]] == [
            (token_id, "nightly export")]
        # a new page's form makes a new token: the mark was of the form that made the first
        page.goto("/system/users/curator/tokens")
        page.get_by_label("Label: what the token is for (a script, a machine)").fill("backup")
        page.get_by_role("button", name="Make token").click()
        page.wait_for_load_state()
        assert page.locator("#token-secret").input_value() not in ("", secret)
        assert len(token_ids(webui, "curator")) == 2


def test_the_danish_pages_say_the_roles_in_danish_words(browser, tmp_path):
    with ServedWebui(tmp_path, users=("admin", "curator", "operator", "archivist")) as webui:
        context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=webui.url, locale="da-DK")
        context.set_default_timeout(15_000)
        page = context.new_page()
        log_in_danish(page, "admin")
        assert page.locator("header.top .who span").first.inner_text() == "admin (administrator)"
        page.goto("/system/users")
        assert page.locator("html").get_attribute("lang") == "da"
        shown = {name: page.locator(f'tr[data-user="{name}"] select[name="role"] option:checked').inner_text()
                 for name in ("admin", "curator", "operator", "archivist")}
        assert shown == {"admin": "administrator", "curator": "kurator", "operator": "operatør",
                         "archivist": "arkivar"}
        # what the form sends stays the code name
        assert page.locator('tr[data-user="operator"] select[name="role"]').input_value() == "operator"
        form = page.locator("#add-user")
        assert form.locator('select[name="role"] option').all_inner_texts() == [
            "kurator", "operatør", "arkivar", "administrator"]
        form.locator('[name="name"]').fill("karen")
        form.locator('[name="role"]').select_option("archivist")
        form.locator('[name="password"]').fill(PASSWORD)
        form.locator('[name="repeated_password"]').fill(PASSWORD)
        form.locator("button[type=submit]").click()
        page.wait_for_load_state()
        assert "Brugeren karen er tilføjet som arkivar" in page.locator(".flash").first.inner_text()
        screenshot(page, tmp_path, "users-danish")
        page.goto("/api/v1/docs")
        assert "som dig, admin (administrator)" in page.locator("main p").first.inner_text()

        karen = context.browser.new_context(viewport={"width": 1280, "height": 800}, base_url=webui.url,
                                            locale="da-DK").new_page()
        log_in_danish(karen, "karen", PASSWORD)
        assert karen.locator("header.top .who span").first.inner_text() == "karen (arkivar)"
        screenshot(karen, tmp_path, "home-danish-archivist")
        karen.context.close()
        context.close()


def log_in_danish(page: Any, name: str, password: str = USERS_PASSWORD) -> None:
    """The login form in Danish, as a person fills it in."""
    page.goto("/login")
    page.get_by_label("Bruger").fill(name)
    page.get_by_label("Adgangskode").fill(password)
    page.get_by_role("button", name="Log ind").click()
    page.wait_for_load_state()
