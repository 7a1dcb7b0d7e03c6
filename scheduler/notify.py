"""Notifications for people: failed jobs, deactivated harvests, refused harvest controllers.

Always logged (at ERROR, so they stand out); also e-mailed when a mail server and a receiver are set
(common.mail.server, common.notifications.receiver), as NetarchiveSuite's EMailNotifications. A mail that
cannot be sent is logged beside the notification and never stops the scheduler.
"""

from __future__ import annotations

import logging
import smtplib
from email.message import EmailMessage

from harvestdef.settings import NotificationSettings

log = logging.getLogger(__name__)


class Notifier:
    def __init__(self, mail_server: str = "", receiver: str = "", sender: str = "harvestsuite@localhost") -> None:
        self.mail_server = mail_server
        self.receiver = receiver
        self.sender = sender
        self.sent: list[tuple[str, str]] = []  # (subject, body) of this process, newest last, for the UI

    @classmethod
    def from_settings(cls, settings: NotificationSettings) -> Notifier:
        return cls(settings.mailServer, settings.receiver, settings.sender)

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
