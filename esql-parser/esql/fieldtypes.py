"""The field-type constants of every message domain, as ESQL names them in ``(XMLNSC.Attribute)`` qualifiers.

Values follow IBM's published numbers where they are documented; a generic name (``XMLNSC.Field``,
``XMLNSC.Attribute``) has the value of its most common specific form, as in ACE.
"""

from __future__ import annotations

from esql.tree import NAME, NAME_VALUE, VALUE

_XMLNSC = {
    "Folder": 0x01000000,
    "DocumentType": 0x01000300,
    "XmlDeclaration": 0x01000400,
    "Value": 0x02000000,
    "PCDataValue": 0x02000000,
    "CDataValue": 0x02000001,
    "HybridValue": 0x02000002,
    "EntityReferenceStart": 0x02000100,
    "EntityReferenceEnd": 0x02000200,
    "Comment": 0x02000400,
    "ProcessingInstruction": 0x02000401,
    "Field": 0x03000000,
    "PCDataField": 0x03000000,
    "CDataField": 0x03000001,
    "HybridField": 0x03000002,
    "Attribute": 0x03000100,
    "DoubleAttribute": 0x03000100,
    "SingleAttribute": 0x03000101,
    "NamespaceDecl": 0x03000102,
    "DoubleNamespaceDecl": 0x03000102,
    "SingleNamespaceDecl": 0x03000103,
    "BitStream": 0x03000200,
    "EntityDefinition": 0x03000300,
    "DoubleEntityDefinition": 0x03000300,
    "SingleEntityDefinition": 0x03000301,
    "EntityReference": 0x02000100,
    # Content written as it stands, markup included. IBM publishes no number for this constant,
    # so this one is flowbroker's own (distinct from every other XMLNSC type).
    "AsisElementContent": 0x03000004,
}

# The XML and XMLNS domains keep text as separate nameless Content children of an Element.
_XML = {
    "Element": 0x01000000,
    "Tag": 0x01000000,
    "Attribute": 0x03000100,
    "Attr": 0x03000100,
    "Content": 0x02000000,
    "CDataSection": 0x02000001,
    "Comment": 0x02000400,
    "ProcessingInstruction": 0x03000401,
    "XmlDecl": 0x01000400,
    "Version": 0x03000100,
    "Encoding": 0x03000100,
    "Standalone": 0x03000100,
    "DocTypeDecl": 0x01000300,
    "EntityReferenceStart": 0x02000100,
    "EntityReferenceEnd": 0x02000200,
    "BitStream": 0x03000200,
    "AsisElementContent": 0x03000000,
}

_XMLNS = {
    **_XML,
    "NamespaceDecl": 0x03000102,
    "DoubleNamespaceDecl": 0x03000102,
    "SingleNamespaceDecl": 0x03000103,
}

_JSON = {"Object": 0x01000000, "Array": 0x01001000, "Value": NAME_VALUE, "Field": NAME_VALUE}

# MRM and CWF trees are plain name-value trees; the message set, not the field type, gives meaning.
_MRM = {"Element": NAME_VALUE, "Field": NAME_VALUE, "Group": NAME, "Value": VALUE}

FIELD_TYPES: dict[str, int] = {
    "Name": NAME,
    "Value": VALUE,
    "NameValue": NAME_VALUE,
    **{f"XMLNSC.{k}": v for k, v in _XMLNSC.items()},
    **{f"XML.{k}": v for k, v in _XML.items()},
    **{f"XMLNS.{k}": v for k, v in _XMLNS.items()},
    **{f"JSON.{k}": v for k, v in _JSON.items()},
    **{f"MRM.{k}": v for k, v in _MRM.items()},
}


def lookup(qualified: str) -> int | None:
    """The value of ``DOMAIN.Name`` (domain case-insensitive, name as IBM spells it), or None."""
    domain, _, name = qualified.partition(".")
    return FIELD_TYPES.get(f"{domain.upper()}.{name}" if name else qualified)
