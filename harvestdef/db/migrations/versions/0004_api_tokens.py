"""API tokens of web UI users

Revision ID: 0004_api_tokens
Revises: 0003_dedup_index
Create Date: 2026-11-23 00:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0004_api_tokens'
down_revision = '0003_dedup_index'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('api_tokens',
    sa.Column('token_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('token_sha256', sa.String(length=64), nullable=False),
    sa.Column('created', harvestdef.db.types.UTCDateTime(), nullable=False),
    sa.Column('last_used', harvestdef.db.types.UTCDateTime(), nullable=True),
    sa.Column('revoked', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.user_id'], ),
    sa.PrimaryKeyConstraint('token_id'),
    sa.UniqueConstraint('token_sha256')
    )


def downgrade() -> None:
    op.drop_table('api_tokens')
