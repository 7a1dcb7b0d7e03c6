"""Repositories: the only code that reads and writes definitions and jobs in the harvest database.

Each takes a SQLAlchemy ``Connection`` (the caller owns the transaction) and an ``actor`` for the audit
trail. SQLAlchemy errors are translated into harvestdef.errors here, at this boundary.
"""
