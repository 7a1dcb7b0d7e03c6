"""Link extraction: the extractors per content type (HTML, CSS), links in scripts, and sitemaps."""
