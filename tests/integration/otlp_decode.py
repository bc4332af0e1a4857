"""otlp_decode - an OTLP profiles request body decoded by `protoc --decode`
against the official schema (tests/otlp), its text format read into nested
dicts, and the views the fleet tests need (resources, profiles, samples
with their frames and attributes)."""
import os
import re
import subprocess

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "otlp")
REQUEST = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"
SERVICE = "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto"


def protoc_decode(body):
    """(returncode, text, stderr) of protoc --decode on BODY."""
    out = subprocess.run(["protoc", f"--proto_path={SCHEMA}", f"--decode={REQUEST}", SERVICE],
                         input=body, capture_output=True, timeout=120)
    return out.returncode, out.stdout.decode("utf-8", "replace"), out.stderr.decode("utf-8", "replace")


def _unescape(s):
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = s[i + 1]
        if n in "01234567":
            m = re.match(r"[0-7]{1,3}", s[i + 1:])
            out.append(int(m.group(0), 8))
            i += 1 + len(m.group(0))
        elif n == "x":
            m = re.match(r"[0-9a-fA-F]{1,2}", s[i + 2:])
            out.append(int(m.group(0), 16))
            i += 2 + len(m.group(0))
        else:
            out += {"n": b"\n", "t": b"\t", "r": b"\r", '"': b'"', "'": b"'", "\\": b"\\"}.get(n, n.encode())
            i += 2
    return bytes(out)


def parse_text(text):
    """protobuf text format -> dict of field -> list of values (dicts for messages)."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
            continue
        if line.endswith("{"):
            name = line[:-1].strip()
            child = {}
            stack[-1].setdefault(name, []).append(child)
            stack.append(child)
            continue
        name, _, value = line.partition(": ")
        if value.startswith('"'):
            v = _unescape(value[1:-1])
        elif re.match(r"^-?\d+$", value):
            v = int(value)
        else:
            v = value
        stack[-1].setdefault(name, []).append(v)
    return root


def one(d, k, default=0):
    v = d.get(k)
    return v[0] if v else default


class Request:
    def __init__(self, text):
        self.m = parse_text(text)
        d = one(self.m, "dictionary", {})
        self.strings = [s.decode("utf-8", "replace") for s in d.get("string_table", [])]
        self.attrs = d.get("attribute_table", [])
        self.stacks = d.get("stack_table", [])
        self.locs = d.get("location_table", [])
        self.funcs = d.get("function_table", [])
        self.maps = d.get("mapping_table", [])
        self.links = d.get("link_table", [])

    def s(self, i):
        return self.strings[i] if 0 <= i < len(self.strings) else None

    @staticmethod
    def any_value(v):
        if "string_value" in v:
            return one(v, "string_value").decode("utf-8", "replace")
        if "int_value" in v:
            return one(v, "int_value")
        if "array_value" in v:
            return [Request.any_value(x) for x in one(v, "array_value", {}).get("values", [])]
        return None

    def link(self, i):
        """(trace_id, span_id) bytes of link_table[i]; None for index 0 (no link)"""
        if i <= 0 or i >= len(self.links):
            return None
        ln = self.links[i]
        return one(ln, "trace_id", b""), one(ln, "span_id", b"")

    def attr(self, i):
        a = self.attrs[i]
        return self.s(one(a, "key_strindex")), self.any_value(one(a, "value", {}))

    def frames(self, stack_index):
        """function names, leaf first (inlined ones before their caller)"""
        out = []
        for li in self.stacks[stack_index].get("location_indices", []):
            for line in self.locs[li].get("lines", []):
                out.append(self.s(one(self.funcs[one(line, "function_index")], "name_strindex")))
        return out

    def resources(self):
        for rp in self.m.get("resource_profiles", []):
            res = one(rp, "resource", {})
            attrs = {kv["key"][0].decode(): self.any_value(one(kv, "value", {})) for kv in res.get("attributes", [])}
            profiles = []
            for sp in rp.get("scope_profiles", []):
                for p in sp.get("profiles", []):
                    st = one(p, "sample_type", {})
                    samples = []
                    for smp in p.get("samples", []):
                        samples.append({
                            "frames": self.frames(one(smp, "stack_index")),
                            "attrs": dict(self.attr(i) for i in smp.get("attribute_indices", [])),
                            "value": sum(smp.get("values", [])),
                            "link": self.link(one(smp, "link_index")),
                        })
                    profiles.append({"type": self.s(one(st, "type_strindex")),
                                     "unit": self.s(one(st, "unit_strindex")),
                                     "period": one(p, "period"), "samples": samples,
                                     "scope": one(one(sp, "scope", {}), "name", b"").decode()})
            yield attrs, profiles
