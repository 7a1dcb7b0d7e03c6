"""The shared core of HarvestSuite.

Settings, errors, the harvest database (schema, migrations, repositories), the domain model, domain-name
rules, message contracts, queue transports, the archive store and the deduplication index. Everything
else imports from here; this package imports from none of scheduler, harvester or webui.
"""

__version__ = "0.1.0"
