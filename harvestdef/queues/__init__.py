"""Queue transports: durable queues of byte messages between the scheduler, the harvest controllers and
the web UI (docs/messages.md, Queues). ``open_transport`` picks RabbitMQ or the embedded SQLite queue from the
``harvestsuite.queue.url`` setting; everything else talks to the ``Transport`` interface."""

from __future__ import annotations

from harvestdef.errors import QueueError
from harvestdef.queues._amqp_link import node_urls
from harvestdef.queues.amqp import AmqpTransport
from harvestdef.queues.base import Delivery, Outgoing, PublishFailures, Transport
from harvestdef.queues.names import QueueNames
from harvestdef.queues.sqlite import SqliteTransport
from harvestdef.settings import QueueSettings

__all__ = ["AmqpTransport", "Delivery", "Outgoing", "PublishFailures", "QueueError", "QueueNames",
           "SqliteTransport", "Transport", "node_urls", "open_transport"]


def open_transport(settings: QueueSettings) -> Transport:
    """The transport ``settings.url`` names (``amqp://``/``amqps://`` or ``sqlite:///``), with the
    environment's dead-letter queue.

    :raise QueueError: an unknown scheme, a queue file that cannot be opened, or a broker that refuses
        the login. A broker that is down is not an error here: the transport connects when it comes up.
    """
    dead_letter_queue = QueueNames(settings.environmentName).dead_letter
    scheme = settings.url.partition(":")[0].lower()
    if scheme in ("amqp", "amqps"):
        return AmqpTransport.from_settings(settings, dead_letter_queue)
    if scheme == "sqlite":
        return SqliteTransport.from_settings(settings, dead_letter_queue)
    raise QueueError(f"harvestsuite.queue.url must start with amqp://, amqps:// or sqlite:///, not {settings.url!r}")
