"""The forms the WARC writer makes by hand are the standard ones: base32 digests as base64.b32encode gives
them, record ids that are version-4 UUIDs, header blocks as warcio's StatusAndHeaders writes them."""

from __future__ import annotations

import base64
import hashlib
import io
import uuid

from warcio.statusandheaders import StatusAndHeaders

from harvester.engine.warcwriting.spool import sha1_label
from harvester.engine.warcwriting.warcrecords import WARC_VERSION, new_record_id, write_record


def test_digest_labels_are_base64s_base32():
    for size in range(0, 600, 7):
        hasher = hashlib.sha1(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
        assert sha1_label(hasher) == "sha1:" + base64.b32encode(hasher.digest()).decode("ascii")


def test_record_ids_are_random_version_4_uuids():
    ids = {new_record_id() for _ in range(1000)}
    assert len(ids) == 1000
    for record_id in ids:
        assert record_id.startswith("<urn:uuid:") and record_id.endswith(">")
        value = uuid.UUID(record_id[len("<urn:uuid:"):-1])
        assert (value.version, value.variant) == (4, uuid.RFC_4122)
        assert str(value) == record_id[len("<urn:uuid:"):-1]


def test_a_header_block_is_what_warcio_writes():
    fields = [("WARC-Record-ID", new_record_id()), ("WARC-Type", "response"),
              ("WARC-Target-URI", "http://www.økologi.dk/side æ.html")]
    out = io.BytesIO()
    write_record(out, fields, io.BytesIO(b"block"), 5, compress=False)
    expected = StatusAndHeaders("", [*fields, ("Content-Length", "5")], protocol=WARC_VERSION).to_bytes()
    assert out.getvalue() == expected + b"block\r\n\r\n"
