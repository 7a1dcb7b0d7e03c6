"""The web UI for curators, operators and archivists (Flask app factory, one blueprint per section)."""
