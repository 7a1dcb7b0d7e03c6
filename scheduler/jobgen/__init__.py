"""Job generation: which configurations a harvest yields, their expected size, packing them into jobs,
and writing the jobs (reference §2).

The pieces, each in its own module: ``expectation`` (§2.5), ``selection`` (§2.2, streamed from the
database), ``packing`` (§2.3, §2.4: the one packing implementation, shared by the database path and the
offline planner), ``building`` (§2.6: job rows, seeds, template filling), ``generate`` (one whole run in
one transaction) and ``plan`` (the offline planner's JSON in and out).
"""
