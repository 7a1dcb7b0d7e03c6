"""Queue names as Heritrix's queue assignment policies make them, and the domain policies' grouping."""

from __future__ import annotations

from harvester.engine.frontier.queuepolicy import QueueAssignment, queue_key_of


def test_hostname_policy_keeps_https_and_non_default_ports_apart() -> None:
    assignment = QueueAssignment("HostnameQueueAssignmentPolicy", by_domain=False)
    assert assignment.key("http://www.example.org/a") == "www.example.org"
    assert assignment.key("https://www.example.org/a") == "www.example.org#443"
    assert assignment.key("http://www.example.org:8080/") == "www.example.org#8080"


def test_surt_policy_reverses_the_host_but_not_an_ip_address() -> None:
    assert queue_key_of("SurtAuthorityQueueAssignmentPolicy", False, "http", "www.example.org", 80) == \
        "org,example,www,"
    assert queue_key_of("SurtAuthorityQueueAssignmentPolicy", False, "http", "127.0.0.1", 8080) == "127.0.0.1#8080"


def test_domain_policy_puts_a_domains_hosts_and_ports_in_one_queue() -> None:
    assignment = QueueAssignment("HostnameQueueAssignmentPolicy", by_domain=True)
    assert assignment.key("http://a.example.org/") == assignment.key("https://b.example.org:8443/") == "example.org"
