"""Command groups that harvestdef contributes to ``harvestsuite`` (see harvestdef.cli)."""
