"""Fetching a URI: the prerequisites (DNS, robots.txt, login forms), one HTTP exchange with its bounds,
cookies and credentials, the fetch step with its retries and politeness, and the browser's fetch step with
its Chromium and recording proxy."""
