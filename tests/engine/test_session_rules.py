"""The rules behind the engine's sessions and extra extractors, one by one: the cookie store's (domain, path,
Secure, expiry, host-only, the bound per domain, checkpoints), HTTP authentication's (Basic, Digest, a
failed credential, a stale nonce, several realms on one server), ExtractorJS's likely-URL test and its
guards, sitemaps (index, gzip, text, the location rule, the bounds), and the credential store as the
template declares it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from harvester.digestauth import digest_response, parse_auth_params
from harvester.engine.config import ConfigError, load_crawl_config
from harvester.engine.extraction.jslinks import JsRules, is_very_likely_url, script_links
from harvester.engine.extraction.sitemaps import SitemapLimits, SitemapRules, read_sitemap, robots_sitemaps
from harvester.engine.fetching.cookies import MAX_COOKIES_PER_DOMAIN, CookieStore
from harvester.engine.fetching.credentials import HttpAuthentication, HttpCredential, challenges_of, server_name
from tests.engine.engine_process import crawler_beans

SITE = "http://www.moderne.dk"


def cookies_for(store: CookieStore, url: str) -> str:
    from urllib.parse import urlsplit
    return store.header_for(url, urlsplit(url).hostname or "") or ""


def test_cookies_follow_domain_path_secure_and_expiry() -> None:
    store = CookieStore()
    store.take(f"{SITE}/modern/consent", "www.moderne.dk", [
        "consent=granted; Path=/modern", "host=only", "wide=1; Domain=moderne.dk; Path=/",
        "secure=1; Secure; Path=/", "script=1; HttpOnly; Path=/", "tld=1; Domain=.dk; Path=/",
        "now=gone; Path=/; Max-Age=0", "past=gone; Path=/; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
        "soon=1; Path=/; Max-Age=3600"])
    here = cookies_for(store, f"{SITE}/modern/page")
    assert set(here.split("; ")) == {"consent=granted", "host=only", "wide=1", "script=1", "soon=1"}
    # a path outside /modern, another host of the domain, https, another domain
    assert set(cookies_for(store, f"{SITE}/other").split("; ")) == {"wide=1", "script=1", "soon=1"}
    assert cookies_for(store, "http://img.moderne.dk/modern/x") == "wide=1"
    assert "secure=1" in cookies_for(store, "https://www.moderne.dk/")
    assert cookies_for(store, "http://www.kulturarv.dk/") == ""
    # a cookie set again with a date in the past is deleted
    store.take(f"{SITE}/", "www.moderne.dk", ["soon=x; Path=/; Max-Age=0"])
    assert "soon" not in cookies_for(store, f"{SITE}/")


def test_cookies_are_bounded_per_domain_and_kept_in_checkpoints() -> None:
    store = CookieStore()
    store.take(f"{SITE}/", "www.moderne.dk", [f"c{n}=v; Path=/" for n in range(MAX_COOKIES_PER_DOMAIN + 10)])
    assert len(store) == MAX_COOKIES_PER_DOMAIN
    store.take(f"{SITE}/", "www.moderne.dk", ["c0=changed; Path=/", "extra=1; Path=/"])
    sent = cookies_for(store, f"{SITE}/")
    assert "c0=changed" in sent and "extra" not in sent
    resumed = CookieStore()
    resumed.restore(json.loads(json.dumps(store.to_json())))
    assert cookies_for(resumed, f"{SITE}/") == sent and len(resumed) == MAX_COOKIES_PER_DOMAIN


def test_basic_then_digest_realms_on_one_server() -> None:
    basic = HttpCredential("b", "www.moderne.dk:8080", "Arkivet", "arkiv", "pw1")
    digest = HttpCredential("d", "www.moderne.dk:8080", "", "arkiv", "pw2")   # empty realm: any realm
    auth = HttpAuthentication([basic, digest])
    server = server_name("http://www.moderne.dk:8080/basic/")
    assert server == "www.moderne.dk:8080" and server_name("https://www.moderne.dk/") == "www.moderne.dk:443"
    assert auth.authorization(server, "GET", "/basic/") is None      # never offered before being asked
    answer = auth.answer(server, "GET", "/basic/", ['Basic realm="Arkivet"'])
    assert answer == "Basic YXJraXY6cHcx"
    auth.outcome(server, 200)
    assert auth.authorization(server, "GET", "/basic/inner.html") == answer
    assert auth.authorization(server, "GET", "/digest/") is None      # another directory, another realm
    challenge = 'Digest realm="Andet", qop="auth,auth-int", nonce="abc", opaque="o"'
    first = auth.answer(server, "GET", "/digest/", [challenge])
    auth.outcome(server, 200)
    second = auth.authorization(server, "GET", "/digest/inner.html")
    for header, nc, uri in ((first, "00000001", "/digest/"), (second, "00000002", "/digest/inner.html")):
        scheme, params = parse_auth_params(header)
        assert scheme == "Digest" and params["nc"] == nc and params["qop"] == "auth" and params["opaque"] == "o"
        assert params["response"] == digest_response(user="arkiv", realm="Andet", password="pw2", method="GET",
                                                     uri=uri, nonce="abc", nc=nc, cnonce=params["cnonce"],
                                                     qop="auth")
    # a stale nonce is answered afresh
    assert auth.answer(server, "GET", "/digest/x", [challenge.replace("abc", "new") + ", stale=true"])
    auth.outcome(server, 200)
    assert 'nonce="new"' in auth.authorization(server, "GET", "/digest/y")
    # a credential refused for its realm is not offered to the server again; the next that fits is, once
    assert auth.answer(server, "GET", "/basic/z", ['Basic realm="Arkivet"']) == "Basic YXJraXY6cHcy"
    auth.outcome(server, 401)
    assert auth.answer(server, "GET", "/basic/z", ['Basic realm="Arkivet"']) is None
    assert auth.authorization(server, "GET", "/basic/z") is None
    assert challenges_of(['Basic realm="a", Digest realm="b", nonce="n"'])["digest"]["nonce"] == "n"


@pytest.mark.parametrize("candidate, likely", [
    ("/modern/page.html", True), ("page.html", True), ("../up/page.php?id=3&x=y", True), ("jquery.min.js", True),
    ("https://www.kb.dk/", True), ("//cdn.kb.dk/a.js", True), ("images/photo one.jpg", True),
    ("text/html", False), ("image/png", False), ("3.5.0", False), ("div.menu", False), ("a.b.c", False),
    ("hello world", False), ("<b>x</b>", False), ("nothing", False), ("a/b c/d", False),
])
def test_heritrix_s_likely_url_test(candidate: str, likely: bool) -> None:
    assert is_very_likely_url(candidate) is likely


def test_script_strings_are_unescaped_fixed_up_and_guarded() -> None:
    script = (r'go("\/escaped\/page.html"); x = "www.kulturarv.dk/side"; y = "http%3A%2F%2Fwww.kb.dk%2Fa";'
              r" z = '/single.html'; w = \u0022/unicode.html\u0022; k = 'text/css'; a = 'Microsoft.XMLHTTP'")
    found = script_links(script, f"{SITE}/", JsRules())
    assert found == ["/escaped/page.html", "http://www.kulturarv.dk/side", "http://www.kb.dk/a", "/single.html",
                     "/unicode.html", "Microsoft.XMLHTTP"]
    rules = JsRules(strict=False, reject_relative=(r"^Microsoft\.XMLHTTP$", "^/single.*"))
    assert "Microsoft.XMLHTTP" not in script_links(script, SITE, rules)
    assert "/single.html" not in script_links(script, SITE, rules)
    assert script_links(script, SITE, JsRules(strict=True)) == ["http://www.kulturarv.dk/side", "http://www.kb.dk/a"]
    assert script_links(script, SITE, JsRules(max_candidate_length=12)) == ["/single.html"]


def test_sitemaps_index_gzip_text_location_and_bounds() -> None:
    urlset = ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
              + "".join(f"<url><loc>{SITE}/maps/p{n}</loc></url>" for n in range(5))
              + "<url><loc>http://elsewhere.dk/x</loc></url><url><loc>http://www.moderne.dk/outside</loc></url>"
              "</urlset>").encode()
    found = read_sitemap([gzip.compress(urlset)], f"{SITE}/maps/sitemap.xml.gz", SitemapRules(), SitemapLimits())
    assert found.urls == [f"{SITE}/maps/p{n}" for n in range(5)]          # only under the sitemap's directory
    lenient = read_sitemap([urlset], f"{SITE}/maps/sitemap.xml", SitemapRules(lenient=True), SitemapLimits())
    assert len(lenient.urls) == 7
    bounded = read_sitemap([urlset[:60], urlset[60:]], f"{SITE}/maps/s.xml", SitemapRules(), SitemapLimits(2))
    assert bounded.urls == [f"{SITE}/maps/p0", f"{SITE}/maps/p1"] and bounded.truncated
    broken = read_sitemap([urlset[:150]], f"{SITE}/maps/s.xml", SitemapRules(), SitemapLimits())
    assert broken.urls == [f"{SITE}/maps/p0"]                             # what came before the break
    index = (b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>'
             b"http://cdn.moderne.dk/a.xml.gz</loc></sitemap></sitemapindex>")
    assert read_sitemap([index], f"{SITE}/i.xml", SitemapRules(), SitemapLimits()).sitemaps == [
        "http://cdn.moderne.dk/a.xml.gz"]
    text = f"{SITE}/t1\r\n{SITE}/t2\n\nnot a url\n".encode()
    assert read_sitemap([text], f"{SITE}/s.txt", SitemapRules(), SitemapLimits()).urls == [f"{SITE}/t1", f"{SITE}/t2"]
    # a gzip bomb is read no further than max_bytes, decompressed
    bomb = gzip.compress(b"<urlset>" + b" " * 5_000_000)
    assert read_sitemap([bomb], f"{SITE}/b.xml.gz", SitemapRules(), SitemapLimits(max_bytes=1000)).urls == []
    assert robots_sitemaps("User-agent: *\nSitemap: /a.xml\nsitemap:http://x.dk/b.xml \n# Sitemap: c\n") == [
        "/a.xml", "http://x.dk/b.xml"]
    assert SitemapRules(url_pattern=r".*/feeds/.*\.xml").matches_url(f"{SITE}/feeds/all.xml")


def test_a_login_form_without_an_http_login_uri_fails_the_build(tmp_path: Path) -> None:
    beans = crawler_beans(extra_beans="""
      <bean id="credentialStore" class="org.archive.modules.credential.CredentialStore">
        <property name="credentials"><map><entry key="members" value-ref="login"/></map></property>
      </bean>
      <bean id="login" class="org.archive.modules.credential.HtmlFormCredential">
        <property name="domain" value="www.moderne.dk"/><property name="loginUri" value="members/login"/>
      </bean>
      <bean id="unused" class="org.archive.modules.credential.HttpAuthenticationCredential"/>""")
    (tmp_path / "crawler-beans.cxml").write_text(beans)
    (tmp_path / "seeds.txt").write_text(f"{SITE}/\n")
    with pytest.raises(ConfigError, match="credential members .HtmlFormCredential.: loginUri 'members/login' is "
                                          "not an http.s. URL"):
        load_crawl_config(tmp_path / "crawler-beans.cxml", tmp_path)
    (tmp_path / "crawler-beans.cxml").write_text(beans.replace("members/login", f"{SITE}/members/login"))
    config = load_crawl_config(tmp_path / "crawler-beans.cxml", tmp_path)
    assert [c.login_uri for c in config.form_credentials] == [f"{SITE}/members/login"]
    assert "credential bean unused is not in the credential store's credentials, unused" in config.warnings
    assert any("no cookie store bean" in warning for warning in config.warnings)
