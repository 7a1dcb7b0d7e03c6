"""The scheduler: ticking, readiness, job generation, dispatch, claims, status intake and supervision.

Imports harvestdef only; never harvester or webui.
"""
