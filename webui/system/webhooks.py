"""Pages of the webhooks, for admins: ``/system/webhooks`` lists them with a form for a new one and the
delivery log; ``/system/webhooks/ID`` changes or deletes one. Each form goes through the same actions as the
API (webui/api/webhooks.py), so a refusal reads the same: the page is shown again with what was typed and
the error naming the field, and nothing is stored.

A new webhook's form comes with a random secret filled in (not stored until saved); once saved, a secret is
never shown again, only its hint.
"""

from __future__ import annotations

import secrets
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import ngettext

from harvestdef.model.webhooks import DELIVERY_STATES, SECRET_HINT_LENGTH, Webhook, WebhookEvent
from harvestdef.repositories.webhooks import WebhookRepository
from webui.api.errors import ApiError
from webui.api.webhooks import change, create, find_deliveries
from webui.auth import ADMIN, require
from webui.context import actor, database
from webui.definitions.forms import attempt, form_integer
from webui.system import blueprint

LOG_ROWS = 50


@blueprint.app_template_filter("secret_hint")
def secret_hint(webhook: Webhook) -> str:
    """What a page shows of a saved secret, in its language: its length and its last characters (the API's
    ``secret_hint`` says the same in English)."""
    secret = webhook.secret
    return ngettext("%(num)s character, ending …%(end)s", "%(num)s characters, ending …%(end)s", len(secret),
                    end=secret[-SECRET_HINT_LENGTH:])


def _form_body(editing: bool) -> dict[str, Any]:
    """The form's fields as the API's body; on an edit, an empty secret keeps the one stored."""
    data: dict[str, Any] = {"name": request.form.get("name", ""), "url": request.form.get("url", ""),
                            "events": request.form.getlist("events"), "active": request.form.get("active") == "1"}
    secret = request.form.get("secret", "")
    if secret or not editing:
        data["secret"] = secret
    if editing:
        data["edition"] = form_integer("edition", request.form.get("edition", ""))
    return data


def _log_filters() -> tuple[int | None, str | None, int | None]:
    """?before=ID&state=S of the delivery log; a value that cannot be one is the client's error."""
    state = request.args.get("state") or None
    if state is not None and state not in DELIVERY_STATES:
        raise ApiError("invalid", f"state must be one of {', '.join(DELIVERY_STATES)}, not {state[:40]!r}", "state")
    before = request.args.get("before") or None
    webhook = request.args.get("webhook") or None
    return (form_integer("before", before) if before else None, state,
            form_integer("webhook", webhook) if webhook else None)


def _webhooks_page() -> str:
    before, state, webhook_id = _log_filters()
    with database().connect() as conn:
        repository = WebhookRepository(conn)
        webhooks, counts = repository.list(), repository.delivery_counts()
    deliveries = find_deliveries(LOG_ROWS + 1, before, webhook_id, state)
    older = (url_for("system.webhooks", before=deliveries[LOG_ROWS - 1].delivery_id, state=state,
                     webhook=webhook_id) if len(deliveries) > LOG_ROWS else None)
    form = request.form if request.method == "POST" else {"secret": secrets.token_urlsafe(32), "active": "1",
                                                           "events": [event.value for event in WebhookEvent]}
    chosen = request.form.getlist("events") if request.method == "POST" else form["events"]
    return render_template("system/webhooks.html", webhooks=webhooks, deliveries=deliveries[:LOG_ROWS],
                           counts=counts, older=older, state=state, webhook_id=webhook_id, form=form,
                           chosen=chosen, events=list(WebhookEvent), states=DELIVERY_STATES)


@blueprint.route("/system/webhooks", methods=["GET", "POST"])
@require(ADMIN)
def webhooks() -> Any:
    """The webhooks, a form for a new one, and the delivery log (newest first, by state or webhook)."""
    if request.method == "GET":
        return _webhooks_page()

    def save() -> Any:
        made = create(_form_body(editing=False))
        flash(_("Webhook %(name)s saved; its secret (%(hint)s) is not shown again: give it to the receiver now if "
                "you have not.", name=made.name, hint=secret_hint(made)))
        return redirect(url_for("system.webhooks"))
    return attempt(save, _webhooks_page)


@blueprint.route("/system/webhooks/<int:webhook_id>", methods=["GET", "POST"])
@require(ADMIN)
def webhook(webhook_id: int) -> Any:
    """One webhook's form (a new secret replaces the stored one; empty keeps it) and its newest deliveries."""
    def page() -> str:
        with database().connect() as conn:
            current = WebhookRepository(conn).get(webhook_id)
        form = request.form if request.method == "POST" else None
        chosen = request.form.getlist("events") if request.method == "POST" else [e.value for e in current.events]
        return render_template("system/webhook.html", webhook=current, form=form, chosen=chosen,
                               events=list(WebhookEvent),
                               deliveries=find_deliveries(LOG_ROWS, None, webhook_id, None))
    if request.method == "GET":
        return page()

    def save() -> Any:
        saved = change(webhook_id, _form_body(editing=True))
        flash(_("Webhook %(name)s saved.", name=saved.name) if saved.isactive
              else _("Webhook %(name)s saved (inactive: it gets no deliveries).", name=saved.name))
        return redirect(url_for("system.webhook", webhook_id=webhook_id))
    return attempt(save, page)


@blueprint.post("/system/webhooks/<int:webhook_id>/delete")
@require(ADMIN)
def delete_webhook(webhook_id: int) -> Any:
    """Remove a webhook; its delivery log stays."""
    def remove() -> Any:
        with database().begin() as conn:
            removed = WebhookRepository(conn, actor()).delete(webhook_id)
        flash(_("Webhook %(name)s deleted; its pending deliveries are failed, and its log stays.", name=removed.name))
        return redirect(url_for("system.webhooks"))
    return attempt(remove, _webhooks_page)


@blueprint.post("/system/webhooks/deliveries/<int:delivery_id>/send-again")
@require(ADMIN)
def send_again(delivery_id: int) -> Any:
    """Send a failed delivery again: the scheduler tries it at its next sending."""
    def resend() -> Any:
        with database().begin() as conn:
            delivery = WebhookRepository(conn, actor()).send_again(delivery_id)
        flash(_("Delivery %(id)s (%(event)s) goes to %(url)s again at the scheduler's next sending.",
                id=delivery.delivery_id, event=delivery.event.value, url=delivery.url))
        return redirect(url_for("system.webhooks"))
    return attempt(resend, _webhooks_page)
