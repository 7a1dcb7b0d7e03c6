"""The harvest page as the curator's hub: runs asked for outside the schedule, job-generation previews,
event harvests known as such, and the crawl attribute types written as NetarchiveSuite reads them

Revision ID: 0023_harvest_hub
Revises: 0022_webhooks
Create Date: 2026-12-05 01:00:00.000000

harvest_run_requests holds a "run now" until the next tick generates the run; harvest_previews a
preview the web UI asked for and the scheduler made. partialharvests.isevent says a harvest was made by
"New event harvest". The crawl attribute types HarvestSuite inserted before named a class NetarchiveSuite
does not have (ContentAttrType_Generic_Integer) and viewtype 1 for the two check boxes; NetarchiveSuite
loads a type by its class name, so they become its ContentAttrType_Generic with viewtypes 6 and 5.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0023_harvest_hub'
down_revision = '0022_webhooks'
branch_labels = None
depends_on = None

_VIEWTYPES = (("HONOR_ROBOTS_DOT_TXT", 6), ("EXTRACT_JAVASCRIPT", 5), ("MAX_HOPS", 1))


def upgrade() -> None:
    op.create_table('harvest_run_requests',
                    sa.Column('harvest_id', sa.BigInteger(), autoincrement=False, nullable=False),
                    sa.Column('requested_at', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.Column('requested_by', sa.String(length=100), nullable=False),
                    sa.ForeignKeyConstraint(['harvest_id'], ['harvestdefinitions.harvest_id']),
                    sa.PrimaryKeyConstraint('harvest_id'))
    op.create_table('harvest_previews',
                    sa.Column('harvest_id', sa.BigInteger(), autoincrement=False, nullable=False),
                    sa.Column('requested_at', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.Column('requested_by', sa.String(length=100), nullable=False),
                    sa.Column('computed_at', harvestdef.db.types.UTCDateTime(), nullable=True),
                    sa.Column('preview', sa.Text(), nullable=True),
                    sa.Column('error', sa.String(length=2000), nullable=True),
                    sa.ForeignKeyConstraint(['harvest_id'], ['harvestdefinitions.harvest_id']),
                    sa.PrimaryKeyConstraint('harvest_id'))
    with op.batch_alter_table('partialharvests') as batch:
        batch.add_column(sa.Column('isevent', sa.Boolean(), server_default=sa.text('false'), nullable=False))
    types = sa.table('eav_type_attribute', sa.column('name', sa.String), sa.column('class_name', sa.String),
                     sa.column('viewtype', sa.Integer))
    for name, viewtype in _VIEWTYPES:
        op.execute(types.update().where(types.c.class_name == 'ContentAttrType_Generic_Integer',
                                        types.c.name == name)
                   .values(class_name='ContentAttrType_Generic', viewtype=viewtype))


def downgrade() -> None:
    with op.batch_alter_table('partialharvests') as batch:
        batch.drop_column('isevent')
    op.drop_table('harvest_previews')
    op.drop_table('harvest_run_requests')
