"""The embedded demo: a generated website, ready harvest definitions, and the whole system in one process
(``harvestsuite demo``, harvestdef/demo/runner.py)."""
