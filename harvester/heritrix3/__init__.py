"""Heritrix 3's protocol, spoken by the harvest controller's client (harvester/heritrix.py) and by the bundled
crawl engine (harvester/engine/) alike: the states a crawl reports and the controller's table of them
(``states``), the REST representations (``model``), the script contract of live changes (``scripting``) and
the names of a job directory and its launches (``layout``). Each module holds names, shapes and rules, and
imports nothing else of harvester.
"""
