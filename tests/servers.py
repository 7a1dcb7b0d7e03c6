"""Reaching the real servers the tests use (PostgreSQL, RabbitMQ).

A test that needs a server skips, saying why, only when the server is unreachable and CI is unset;
with CI=true an unreachable server fails the test (DEVELOPERS rule: CI must really run them).
"""

from __future__ import annotations

import os
import socket

import pytest

PG_ADMIN_URL = os.environ.get("HARVESTSUITE_TEST_PG", "postgresql+psycopg://root@127.0.0.1:5432/postgres")
AMQP_URL = os.environ.get("HARVESTSUITE_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672/%2F")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def is_listening(host: str, port: int, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def require_server(name: str, host: str, port: int, start_hint: str) -> None:
    if is_listening(host, port):
        return
    message = f"{name} is not reachable at {host}:{port} (start it with: {start_hint})"
    if in_ci():
        pytest.fail(message + "; CI=true, so this is a failure, not a skip")
    pytest.skip(message)


def require_postgresql() -> None:
    require_server("PostgreSQL", "127.0.0.1", 5432, "pg_ctlcluster --skip-systemctl-redirect 15 main start")


def require_rabbitmq() -> None:
    require_server("RabbitMQ", "127.0.0.1", 5672, "rabbitmq-server -detached")
