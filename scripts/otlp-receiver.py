#!/usr/bin/env python3
"""An OTLP/HTTP logs receiver for the agent's tests (Tests/AgentTests/OTLPExportTests.swift).

Every POST body is parsed with the official protobuf definitions (the opentelemetry-proto
package from PyPI, which `make deps` installs into .build-python/) as an
ExportLogsServiceRequest in OTLP's JSON encoding; unknown fields or wrong types are refused with
400. Each log record received is appended to OUT as one JSON line.

usage: otlp-receiver.py PORT_FILE OUT [PORT]   (PORT 0 or absent: any free port, written to PORT_FILE)
"""
import http.server
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

port_file, out = sys.argv[1], sys.argv[2]
port = int(sys.argv[3]) if len(sys.argv) > 3 else 0


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            request = json_format.Parse(body, ExportLogsServiceRequest())
        except json_format.ParseError as error:
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(error).encode())
            return
        with open(out, "a") as f:
            for resource_logs in request.resource_logs:
                resource = {a.key: a.value.string_value for a in resource_logs.resource.attributes}
                for scope_logs in resource_logs.scope_logs:
                    for record in scope_logs.log_records:
                        f.write(json.dumps({
                            "path": self.path,
                            "resource": resource,
                            "scope": scope_logs.scope.name,
                            "severity": record.severity_number,
                            "observed": record.observed_time_unix_nano,
                            "body": record.body.string_value,
                            "attributes": {a.key: a.value.string_value for a in record.attributes},
                        }) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", port), Handler)
with open(port_file, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
