"""Every reader of a crawl template parses it one way (harvestdef.crawltemplate.template_parser): entities
stay unexpanded and no file or network resource named by the template is read."""

from __future__ import annotations

from harvestdef.crawltemplate import DEDUPLICATION_INDEX_LOCATION, placeholder, template_parser, warcinfo_items
from harvester.engine.beans import parse_beans
from harvester.jobdir import INDEX_PLACEHOLDER, without_deduplication


def template_with_entities(secret_path) -> str:
    return (f'<?xml version="1.0"?>\n<!DOCTYPE beans [<!ENTITY word "expanded">'
            f'<!ENTITY secret SYSTEM "file://{secret_path}">]>\n'
            '<beans><bean id="dedup" class="is.hi.bok.deduplication.DeDuplicator">'
            '<property name="enabled" value="true"/></bean>'
            '<bean id="note" class="Note"><property name="text"><value>&word; &secret;</value></property></bean>'
            '</beans>')


def test_switching_deduplication_off_expands_no_entity_and_reads_no_file(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the harvester's private key", encoding="utf-8")
    edited = without_deduplication(template_with_entities(secret))
    assert 'name="enabled" value="false"' in edited
    assert "private key" not in edited and "expanded" not in edited
    assert "&word;" in edited and "&secret;" in edited


def test_the_engine_reads_a_template_without_expanding_its_entities(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the harvester's private key", encoding="utf-8")
    beans = parse_beans(template_with_entities(secret).encode("utf-8"))
    assert [bean.bean_id for bean in beans] == ["dedup", "note"]
    assert "private key" not in repr(beans) and "expanded" not in repr(beans)


def test_one_parser_per_parse_and_one_spelling_of_the_index_placeholder():
    assert template_parser() is not template_parser()  # lxml parsers are not shared between threads
    index_placeholder = "%{DEDUPLICATION_INDEX_LOCATION_PLACEHOLDER}"
    assert INDEX_PLACEHOLDER == placeholder(DEDUPLICATION_INDEX_LOCATION) == index_placeholder


def test_warcinfo_items_of_a_document_without_them_is_none():
    assert warcinfo_items("") is None
    assert warcinfo_items("<beans><!-- metadataItems --></beans>") is None
    assert warcinfo_items("metadataItems <not xml") is None
    assert warcinfo_items('<beans><property name="metadataItems"><map><entry key="a" value="1"/></map>'
                          '</property></beans>') == {"a": "1"}
