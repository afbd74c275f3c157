"""An imported ACE HTTP flow (HTTPInput → HTTPRequest → HTTPReply in the Toolkit) serves a request end to end."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from flowbroker.importers.ace.workspace import zip_dirs
from flowbroker.worker.harness import WorkerProcess

pytestmark = pytest.mark.timeout(240)

FLOW = """<?xml version="1.0" encoding="UTF-8"?>
<ecore:EPackage xmi:version="2.0" xmlns:xmi="http://www.omg.org/XMI"
    xmlns:ComIbmWSInput.msgnode="ComIbmWSInput.msgnode" xmlns:ComIbmWSRequest.msgnode="ComIbmWSRequest.msgnode"
    xmlns:ComIbmWSReply.msgnode="ComIbmWSReply.msgnode" xmlns:ecore="http://www.eclipse.org/emf/2002/Ecore"
    xmlns:eflow="http://www.ibm.com/wbi/2005/eflow" xmlns:utility="http://www.ibm.com/wbi/2005/eflow_utility"
    nsURI="rates/Quote.msgflow" nsPrefix="rates_Quote.msgflow">
  <eClassifiers xmi:type="eflow:FCMComposite" name="FCMComposite_1">
    <eSuperTypes href="http://www.ibm.com/wbi/2005/eflow#//FCMBlock"/>
    <composition>
      <nodes xmi:type="ComIbmWSInput.msgnode:FCMComposite_1" xmi:id="FCMComposite_1_1" location="20,20"
          URLSpecifier="aceimp/quote" messageDomainProperty="JSON" parseQueryString="true">
        <translation xmi:type="utility:ConstantString" string="Quote in"/>
      </nodes>
      <nodes xmi:type="ComIbmWSRequest.msgnode:FCMComposite_1" xmi:id="FCMComposite_1_2" location="160,20"
          URLSpecifier="http://127.0.0.1:{upstream}/rate" messageDomainProperty="JSON" timeoutForServer="20">
        <translation xmi:type="utility:ConstantString" string="Carrier rate"/>
      </nodes>
      <nodes xmi:type="ComIbmWSReply.msgnode:FCMComposite_1" xmi:id="FCMComposite_1_3" location="300,20">
        <translation xmi:type="utility:ConstantString" string="Quote out"/>
      </nodes>
      <connections xmi:type="eflow:FCMConnection" xmi:id="FCMConnection_1" targetNode="FCMComposite_1_2" sourceNode="FCMComposite_1_1" sourceTerminalName="OutTerminal.out" targetTerminalName="InTerminal.in"/>
      <connections xmi:type="eflow:FCMConnection" xmi:id="FCMConnection_2" targetNode="FCMComposite_1_3" sourceNode="FCMComposite_1_2" sourceTerminalName="OutTerminal.out" targetTerminalName="InTerminal.in"/>
    </composition>
  </eClassifiers>
</ecore:EPackage>
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Carrier(BaseHTTPRequestHandler):
    """The web service the imported flow calls: answers a POSTed order with a rate."""

    def do_POST(self) -> None:
        order = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = json.dumps({"kg": order["kg"], "rate": order["kg"] * 3}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def carrier() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Carrier)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_imported_http_flow_calls_the_service_and_answers_the_client(
    platform, carrier: int, tmp_path: Path
) -> None:
    project = tmp_path / "Rates"
    (project / "rates").mkdir(parents=True)
    (project / ".project").write_text("<projectDescription><name>Rates</name></projectDescription>")
    (project / "rates" / "Quote.msgflow").write_text(FLOW.replace("{upstream}", str(carrier)))
    response = platform.client.post(
        "/api/imports/ace",
        content=zip_dirs([project]),
        headers={**platform.headers, "Content-Type": "application/zip"},
    )
    assert response.status_code == 200, response.text
    (flow,) = response.json()["flows"]
    assert (flow["outcome"], flow["nodesMapped"], flow["unsupportedNodes"]) == ("created", 3, [])

    port = _free_port()
    with WorkerProcess(platform.data, env={"FLOWBROKER_HTTP_PORT": str(port)}):
        created = platform.request("POST", "/api/deployments", json={"flowName": "rates.Quote"})
        assert created.status_code == 202, created.text
        deployed = platform.wait_status(created.json()["id"], {"running", "failed"})
        assert deployed["status"] == "running", deployed
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.post(f"http://127.0.0.1:{port}/aceimp/quote", json={"kg": 7}, timeout=30)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"kg": 7, "rate": 21}
