"""domain_tld_counts, unused_configurations and unused_seedlists: the definitions' overviews as summaries

Revision ID: 0010_definition_summaries
Revises: 0009_domain_trigram
Create Date: 2026-11-23 00:00:00.000000

The domains-per-TLD overview grouped every domain name per request (about 1 s at 2,000,000 domains) and
the unused configurations and seed lists overviews tested every configuration (about 5 s). The writers
now keep these three tables in step (harvestdef/repositories/definitioncounts.py); this revision creates
them and fills them from the rows already there, with the indexes that make "is it used?" a lookup by
seed list (config_seedlists) and by configuration (harvest_configs).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010_definition_summaries'
down_revision = '0009_domain_trigram'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('domain_tld_counts',
                    sa.Column('tld', sa.String(length=300), nullable=False),
                    sa.Column('domains', sa.BigInteger(), nullable=False),
                    sa.PrimaryKeyConstraint('tld'))
    for table, key in (('unused_configurations', 'config_id'), ('unused_seedlists', 'seedlist_id')):
        op.create_table(table,
                        sa.Column(key, sa.BigInteger(), autoincrement=False, nullable=False),
                        sa.Column('domain_id', sa.BigInteger(), nullable=False),
                        sa.PrimaryKeyConstraint(key))
        op.create_index(f'{table}_domain', table, ['domain_id'], unique=False)
    op.create_index('config_seedlists_seedlist', 'config_seedlists', ['seedlist_id'], unique=False)
    op.create_index('harvest_configs_config', 'harvest_configs', ['config_id'], unique=False)
    # the same computation as `harvestsuite db rebuild-summaries`
    from harvestdef.repositories.definitioncounts import rebuild_definition_counts

    rebuild_definition_counts(op.get_bind())


def downgrade() -> None:
    for table in ('unused_seedlists', 'unused_configurations'):
        op.drop_index(f'{table}_domain', table_name=table)
        op.drop_table(table)
    op.drop_table('domain_tld_counts')
    op.drop_index('harvest_configs_config', table_name='harvest_configs')
    op.drop_index('config_seedlists_seedlist', table_name='config_seedlists')
