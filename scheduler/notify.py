"""Notifications for people: failed jobs, finished harvest runs, deactivated harvests, lost and refused
harvest controllers.

Two ways out, raised at the same places:

* ``notify`` after the commit: always logged (at ERROR, so they stand out); also e-mailed when a mail server
  and a receiver are set (common.mail.server, common.notifications.receiver), as NetarchiveSuite's
  EMailNotifications. A mail that cannot be sent is logged beside the notification and never stops the
  scheduler.
* ``events(conn)`` in the transaction of what they announce: the webhook events (a job failed, a harvest
  run done, a harvest deactivated, a controller lost) recorded as pending deliveries for the webhooks that
  want them (harvestdef/repositories/webhookevents.py), which the leading scheduler sends
  (scheduler/webhooks.py). Their links start with common.notifications' webuiUrl.
"""

from __future__ import annotations

import logging
import smtplib
from email.message import EmailMessage

from sqlalchemy import Connection

from harvestdef.repositories.webhookevents import WebhookEvents
from harvestdef.settings import NotificationSettings

log = logging.getLogger(__name__)


class Notifier:
    def __init__(self, mail_server: str = "", receiver: str = "", sender: str = "harvestsuite@localhost",
                 webui_url: str = "") -> None:
        self.mail_server = mail_server
        self.receiver = receiver
        self.sender = sender
        self.webui_url = webui_url
        self.sent: list[tuple[str, str]] = []  # (subject, body) of this process, newest last, for the UI

    @classmethod
    def from_settings(cls, settings: NotificationSettings) -> Notifier:
        return cls(settings.mailServer, settings.receiver, settings.sender, settings.webuiUrl)

    def events(self, conn: Connection) -> WebhookEvents:
        """The webhook events, recorded into ``conn``'s transaction."""
        return WebhookEvents(conn, self.webui_url)

    def notify(self, subject: str, body: str) -> None:
        log.error("notification: %s: %s", subject, body.replace("\n", " "))
        self.sent.append((subject, body))
        del self.sent[:-100]
        if not (self.mail_server and self.receiver):
            return
        message = EmailMessage()
        message["Subject"] = f"[HarvestSuite] {subject}"
        message["From"] = self.sender
        message["To"] = self.receiver
        message.set_content(body)
        host, _, port = self.mail_server.partition(":")
        try:
            with smtplib.SMTP(host, int(port or 25), timeout=30) as smtp:
                smtp.send_message(message)
        except (OSError, smtplib.SMTPException) as exc:
            log.error("notification %r could not be mailed to %s through %s: %s", subject, self.receiver,
                      self.mail_server, exc)
