"""robots.txt per host with protego: parsed once, asked per URL; crawl-delay for politeness.

A missing or failed robots.txt allows everything, as in Heritrix's ``obey`` policy. This module does no
I/O: the controller fetches robots.txt as a prerequisite (hop P) and hands the body here.
"""

from __future__ import annotations

from protego import Protego


class RobotsRules:
    def __init__(self, text: str | None, user_agent: str):
        self.text = text
        # protego matches the product token, e.g. "heritrix" in "Mozilla/5.0 (compatible; heritrix/3 ...)".
        self.user_agent = user_agent
        self._parser = Protego.parse(text) if text else None

    def is_allowed(self, url: str) -> bool:
        return self._parser is None or self._parser.can_fetch(url, self.user_agent)

    def crawl_delay(self) -> float | None:
        if self._parser is None:
            return None
        delay = self._parser.crawl_delay(self.user_agent)
        return float(delay) if delay is not None else None
