"""Tests of the harvester package: the Heritrix 3 client."""
