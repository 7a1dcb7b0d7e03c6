"""Job generation: which configurations a harvest yields, their expected size, packing them into jobs,
and writing the jobs, by NetarchiveSuite's rules except where docs/jobgen.md says otherwise.

The pieces, each in its own module: ``expectation`` (NetarchiveSuite's
DomainConfiguration.getExpectedNumberOfObjects), ``selection`` (which configurations a run yields, streamed
from the database), ``packing`` (DefaultJobGenerator and FixedDomainConfigurationCountJobGenerator: the one
packing implementation, shared by the database path and the offline planner), ``building`` (job rows,
seeds, template filling: docs/jobgen.md, Template placeholders), ``generate`` (one whole run in one
transaction: docs/jobgen.md, A run) and ``plan`` (the offline planner's JSON in and out).
"""
