"""Small flow documents written by the import tests."""

from __future__ import annotations


def flow_using(uses: list[str], nsuri: str) -> str:
    """A minimal flow document whose nodes are instances of the subflows ``uses`` (paths)."""
    xmlns = "".join(f' xmlns:s{i}="{u}"' for i, u in enumerate(uses))
    instances = "".join(
        f'\n      <nodes xmi:type="s{i}:FCMComposite_1" xmi:id="FCMComposite_1_{i + 1}" location="{20 + 100 * i},20">'
        f'<translation xmi:type="utility:ConstantString" string="use {u}"/></nodes>'
        for i, u in enumerate(uses)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<ecore:EPackage xmi:version="2.0" xmlns:xmi="http://www.omg.org/XMI"'
        ' xmlns:ecore="http://www.eclipse.org/emf/2002/Ecore" xmlns:eflow="http://www.ibm.com/wbi/2005/eflow"'
        f' xmlns:utility="http://www.ibm.com/wbi/2005/eflow_utility"{xmlns} nsURI="{nsuri}">\n'
        '  <eClassifiers xmi:type="eflow:FCMComposite" name="FCMComposite_1">\n'
        f"    <composition>{instances}\n    </composition>\n"
        "  </eClassifiers>\n</ecore:EPackage>\n"
    )
