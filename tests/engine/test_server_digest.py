"""HTTP Digest authentication of the engine (harvester.engine.rest.digest): challenges, nonces that
expire, and the penalty after a failed attempt, with an injected clock so no test waits for real time."""

from __future__ import annotations

from harvester.digestauth import digest_response, parse_auth_params
from harvester.engine.rest.digest import DigestAuthenticator


class FakeClock:
    """A clock that moves only when told to, and records the sleeps asked of it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def authorization(authenticator: DigestAuthenticator, password: str, nonce: str, method: str = "GET",
                  uri: str = "/engine", nc: str = "00000001", cnonce: str = "0a4f113b") -> str:
    response = digest_response(user=authenticator.user, realm=authenticator.realm, password=password,
                               method=method, uri=uri, nonce=nonce, nc=nc, cnonce=cnonce, qop="auth")
    return (f'Digest username="{authenticator.user}", realm="{authenticator.realm}", nonce="{nonce}", '
            f'uri="{uri}", qop=auth, nc={nc}, cnonce="{cnonce}", response="{response}", algorithm=MD5')


def test_challenge_names_realm_nonce_qop_and_algorithm() -> None:
    scheme, params = parse_auth_params(DigestAuthenticator("admin", "pw").challenge())
    assert scheme == "Digest"
    assert params["qop"] == "auth" and params["algorithm"] == "MD5"
    assert params["realm"] and params["nonce"] and params["opaque"]


def test_correct_credentials_are_accepted_and_wrong_ones_refused() -> None:
    clock = FakeClock()
    authenticator = DigestAuthenticator("admin", "pw", clock=clock, sleep=clock.sleep)
    nonce = parse_auth_params(authenticator.challenge())[1]["nonce"]
    assert authenticator.check("GET", authorization(authenticator, "pw", nonce)).is_accepted
    refused = authenticator.check("GET", authorization(authenticator, "wrong", nonce))
    assert not refused.is_accepted and not refused.is_stale
    # The method is part of the digest: a GET's answer does not authorise a POST.
    assert not authenticator.check("POST", authorization(authenticator, "pw", nonce, method="GET")).is_accepted


def test_missing_credentials_are_not_a_failure_and_cost_no_penalty() -> None:
    clock = FakeClock()
    authenticator = DigestAuthenticator("admin", "pw", clock=clock, sleep=clock.sleep)
    assert not authenticator.check("GET", None).is_accepted
    nonce = parse_auth_params(authenticator.challenge())[1]["nonce"]
    assert authenticator.check("GET", authorization(authenticator, "pw", nonce)).is_accepted
    assert clock.slept == []


def test_expired_nonce_is_stale_not_wrong() -> None:
    clock = FakeClock()
    authenticator = DigestAuthenticator("admin", "pw", nonce_lifetime=60, clock=clock, sleep=clock.sleep)
    nonce = parse_auth_params(authenticator.challenge())[1]["nonce"]
    clock.now += 61
    outcome = authenticator.check("GET", authorization(authenticator, "pw", nonce))
    assert not outcome.is_accepted and outcome.is_stale
    assert "stale=true" in authenticator.challenge(stale=True)


def test_forged_nonce_is_refused() -> None:
    clock = FakeClock()
    authenticator = DigestAuthenticator("admin", "pw", clock=clock, sleep=clock.sleep)
    other = DigestAuthenticator("admin", "pw", clock=clock, sleep=clock.sleep)
    foreign_nonce = parse_auth_params(other.challenge())[1]["nonce"]
    outcome = authenticator.check("GET", authorization(authenticator, "pw", foreign_nonce))
    assert not outcome.is_accepted and outcome.reason == "nonce not issued by this engine"


def test_a_failure_delays_the_next_attempt_until_the_penalty_has_passed() -> None:
    clock = FakeClock()
    authenticator = DigestAuthenticator("admin", "pw", failure_penalty=6.0, clock=clock, sleep=clock.sleep)
    nonce = parse_auth_params(authenticator.challenge())[1]["nonce"]
    authenticator.check("GET", authorization(authenticator, "guess", nonce))
    clock.now += 2.0
    assert authenticator.check("GET", authorization(authenticator, "pw", nonce)).is_accepted
    assert clock.slept == [4.0]
