"""WARC writing: a response's bytes spooled as they arrive, a capture's records and the duplicate-or-not
decision, each record's bytes, and the files they go into."""
