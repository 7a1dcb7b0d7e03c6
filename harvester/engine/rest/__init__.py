"""The engine's REST API: the HTTPS server with Digest authentication and its certificate, the registry of
job directories whose actions it serves, and the status representations it answers with."""
