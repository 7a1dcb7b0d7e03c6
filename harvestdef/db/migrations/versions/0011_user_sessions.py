"""users.session_generation and login_failures: logout that ends every session, throttled logins

Revision ID: 0011_user_sessions
Revises: 0010_definition_summaries
Create Date: 2026-11-25 00:00:00.000000

A session cookie was only signed: a copy taken before logout kept working after it. Each cookie now
carries its user's session generation, which logout and a password change raise (ending every session of
the user). login_failures counts failed logins per user name and per client address, in the database so
that every web UI process sees the same counts. Cookies issued before this revision carry no generation:
their users log in once more.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0011_user_sessions'
down_revision = '0010_definition_summaries'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('users', sa.Column('session_generation', sa.BigInteger(), server_default=sa.text('0'),
                                     nullable=False))
    op.create_table('login_failures',
                    sa.Column('kind', sa.String(length=10), nullable=False),
                    sa.Column('login_key', sa.String(length=300), nullable=False),
                    sa.Column('failures', sa.Integer(), nullable=False),
                    sa.Column('last_failure', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.Column('wait_until', harvestdef.db.types.UTCDateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('kind', 'login_key'))
    op.create_index('login_failures_last_failure', 'login_failures', ['last_failure'], unique=False)


def downgrade() -> None:
    op.drop_index('login_failures_last_failure', table_name='login_failures')
    op.drop_table('login_failures')
    with op.batch_alter_table('users') as batch:
        batch.drop_column('session_generation')
