"""Simulated machines for HarvestSuite: network namespaces joined by links that can be cut, slowed and made
lossy, with PostgreSQL, RabbitMQ, the sites to crawl and every role on hosts of their own."""
