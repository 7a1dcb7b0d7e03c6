"""The harvest database: schema, engine, migrations and the DDL of sql/createfullhddb.sql."""
