"""Alembic environment: migrations run on the connection that harvestdef.db.init hands over."""

from __future__ import annotations

from alembic import context

from harvestdef.db.schema import compare_options, metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `harvestsuite db upgrade`, which supplies the connection")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                  **compare_options())
with context.begin_transaction():
    context.run_migrations()
