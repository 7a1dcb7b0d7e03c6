"""Digest authentication's shared arithmetic (harvester.digestauth) against the RFCs' own examples, and the
client's header checked by the engine's authenticator, so neither half can drift from the other."""

from __future__ import annotations

from harvester.digestauth import authorization_header, digest_response, parse_auth_params
from harvester.engine.rest.digest import DigestAuthenticator


def test_response_matches_the_rfc_7616_md5_example() -> None:
    # RFC 7616 §3.9.1, the MD5 half of the example.
    response = digest_response(user="Mufasa", realm="http-auth@example.org", password="Circle of Life",
                               method="GET", uri="/dir/index.html",
                               nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc="00000001",
                               cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop="auth")
    assert response == "8ca523f5e9506fed4657c9700eebdbec"


def test_response_matches_the_rfc_2617_example() -> None:
    # RFC 2617 §3.5: user Mufasa, password "Circle Of Life".
    response = digest_response(user="Mufasa", realm="testrealm@host.com", password="Circle Of Life",
                               method="GET", uri="/dir/index.html", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093",
                               nc="00000001", cnonce="0a4f113b", qop="auth")
    assert response == "6629fae49393a05397450978507c4ef1"


def test_parse_reads_the_rfc_7616_challenge() -> None:
    scheme, params = parse_auth_params(
        'Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=MD5, '
        'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", '
        'opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"')
    assert scheme == "Digest"
    assert params == {"realm": "http-auth@example.org", "qop": "auth, auth-int", "algorithm": "MD5",
                      "nonce": "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
                      "opaque": "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"}


def test_parse_undoes_quoted_pairs_and_lowers_keys() -> None:
    _scheme, params = parse_auth_params(r'Digest Realm="a \"quoted\" realm", NC=00000001')
    assert params == {"realm": 'a "quoted" realm', "nc": "00000001"}


def test_header_carries_the_rfc_7616_response_and_echoes_opaque() -> None:
    header = authorization_header(user="Mufasa", realm="http-auth@example.org", password="Circle of Life",
                                  method="GET", uri="/dir/index.html",
                                  nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", qop="auth",
                                  nc="00000001", cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ",
                                  opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS")
    scheme, params = parse_auth_params(header)
    assert scheme == "Digest"
    assert params["response"] == "8ca523f5e9506fed4657c9700eebdbec"
    assert params["opaque"] == "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
    assert (params["qop"], params["nc"], params["uri"]) == ("auth", "00000001", "/dir/index.html")


def test_header_without_qop_takes_the_rfc_2069_form() -> None:
    header = authorization_header(user="u", realm="r", password="p", method="GET", uri="/", nonce="n")
    params = parse_auth_params(header)[1]
    assert "qop" not in params and "cnonce" not in params
    assert params["response"] == digest_response(user="u", realm="r", password="p", method="GET", uri="/",
                                                 nonce="n")


def test_engine_accepts_the_clients_answer_to_its_challenge() -> None:
    authenticator = DigestAuthenticator("admin", "secret", failure_penalty=0)
    challenge = parse_auth_params(authenticator.challenge())[1]
    header = authorization_header(user="admin", realm=challenge["realm"], password="secret", method="POST",
                                  uri="/engine/job/basic", nonce=challenge["nonce"], qop=challenge["qop"],
                                  nc="00000001", cnonce="abcdef", opaque=challenge["opaque"])
    assert authenticator.check("POST", header).is_accepted
    assert not authenticator.check("GET", header).is_accepted
