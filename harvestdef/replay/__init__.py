"""Replay: pywb as a service of its own over the archive store (docs/architecture.md, Processes and what
they connect to).

``environment`` builds pywb's virtual environment (its pinned Werkzeug cannot share Flask 3's),
``layout`` writes pywb's working directory over the store, ``service`` runs pywb from it, ``captures`` asks a
running pywb which captures of a URL it holds (the QA worker's question). Nothing here
serves archived content itself, and the web UI never proxies it: replayed pages run on pywb's origin.
"""
