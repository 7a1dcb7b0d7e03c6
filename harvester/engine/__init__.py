"""The crawl engine that HarvestSuite bundles: a separate process that speaks the subset of Heritrix 3's
REST API a harvest controller uses and writes Heritrix's outputs (crawl.log, progress-statistics.log,
reports, WARCs). See docs/engine.md for the beans and properties it honours.
"""
