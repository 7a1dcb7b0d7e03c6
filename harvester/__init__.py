"""Harvester nodes: the harvest controller, the Heritrix 3 REST client, the bundled crawl engine and
post-processing. Imports harvestdef only, and never connects to the harvest database.
"""
