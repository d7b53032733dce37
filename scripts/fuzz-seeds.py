#!/usr/bin/env python3
"""Writes the seed corpora under Fuzz/corpus/<target>/ (run from anywhere; needs libsodium).

Seeds are small on purpose: libFuzzer's default -max_len is the largest seed (at least 4096),
and every extra kilobyte slows every run. Re-running rewrites the generated seeds; chunked
envelopes differ each time (secretstream headers are random), everything else is identical.

FuzzEnvelope seeds follow the input layout of Fuzz/Sources/FuzzEnvelope/main.swift (first byte: the
mode); the keys are the harness's fixed keys.
"""
import ctypes
import ctypes.util
import os
import re
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "corpus")

sodium = ctypes.CDLL(ctypes.util.find_library("sodium"))
assert sodium.sodium_init() >= 0

CURRENT_ID, PREVIOUS_ID = 0x53420002, 0x53420001
CURRENT_KEY = bytes(range(32))
PREVIOUS_KEY = bytes((0xA0 + i) & 0xFF for i in range(32))
MAGIC, VERSION = b"\x89SBX", 1


def header(kind, key_id, item_type):
    t = item_type.encode() if isinstance(item_type, str) else item_type
    return MAGIC + bytes([VERSION, kind]) + struct.pack(">I", key_id) + bytes([len(t)]) + t


def single_shot(key, key_id, item_type, plaintext, nonce=bytes(range(100, 124))):
    ad = header(0, key_id, item_type) + nonce
    out = ctypes.create_string_buffer(len(plaintext) + 16)
    written = ctypes.c_ulonglong()
    assert sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(
        out, ctypes.byref(written), plaintext, ctypes.c_ulonglong(len(plaintext)), ad,
        ctypes.c_ulonglong(len(ad)), None, nonce, key) == 0
    return ad + out.raw[:written.value]


def chunked(key, key_id, item_type, plaintext, chunk=64 << 10):
    stream_key = ctypes.create_string_buffer(32)
    assert sodium.crypto_kdf_derive_from_key(stream_key, ctypes.c_size_t(32), ctypes.c_uint64(1), b"SBX1strm", key) == 0
    state = ctypes.create_string_buffer(sodium.crypto_secretstream_xchacha20poly1305_statebytes())
    stream_header = ctypes.create_string_buffer(24)
    sodium.crypto_secretstream_xchacha20poly1305_init_push(state, stream_header, stream_key)
    ad = header(1, key_id, item_type) + stream_header.raw
    pieces = [plaintext[i:i + chunk] for i in range(0, len(plaintext), chunk)] or [b""]
    out = ad
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        cipher = ctypes.create_string_buffer(len(piece) + 17)
        written = ctypes.c_ulonglong()
        first_ad = ad if index == 0 else None
        sodium.crypto_secretstream_xchacha20poly1305_push(
            state, cipher, ctypes.byref(written), piece, ctypes.c_ulonglong(len(piece)), first_ad,
            ctypes.c_ulonglong(len(ad) if index == 0 else 0), ctypes.c_ubyte(3 if last else 0))
        out += cipher.raw[:written.value]
    return out


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def copy(target, name, source):
    with open(os.path.join(ROOT, source), "rb") as f:
        write(target, name, f.read())


def envelope_seeds():
    t = "FuzzEnvelope"
    text = "public.utf8-plain-text"
    # Mode 0: raw envelopes, valid under the harness's ring.
    write(t, "raw-single-current", b"\x00" + single_shot(CURRENT_KEY, CURRENT_ID, text, b"secret plan"))
    write(t, "raw-single-previous", b"\x00" + single_shot(PREVIOUS_KEY, PREVIOUS_ID, "public.png", bytes(range(64))))
    write(t, "raw-single-empty", b"\x00" + single_shot(CURRENT_KEY, CURRENT_ID, "", b""))
    write(t, "raw-single-unknown-key", b"\x00" + single_shot(CURRENT_KEY, 0xDEADBEEF, text, b"x"))
    write(t, "raw-chunked-current", b"\x00" + chunked(CURRENT_KEY, CURRENT_ID, text, b"chunked " * 40))
    write(t, "raw-chunked-empty", b"\x00" + chunked(PREVIOUS_KEY, PREVIOUS_ID, "", b""))
    write(t, "raw-not-an-envelope", b"\x00" + b"plain text on the pasteboard")
    # Mode 1: key, type length, type, 24-byte nonce, plaintext length (2 bytes), plaintext, mutations.
    nonce = bytes(range(24))
    write(t, "forged-single", b"\x01\x00" + bytes([len(text)]) + text.encode() + nonce + b"\x00\x05hello")
    write(t, "forged-single-flip", b"\x01\x01\x00" + nonce + b"\x00\x02hi" + b"\x00\x00\x05\x01")
    write(t, "forged-single-bad-utf8", b"\x01\x00\x02\xc3\x28" + nonce + b"\x00\x01!")
    # Mode 2: key, type length, type, size selector (+size), one tag choice per chunk, drop/add,
    # seed length, seed, mutations.
    write(t, "forged-chunked-one", b"\x02\x00\x04text\x00\x00\x40\x00\x00\x05hello")
    write(t, "forged-chunked-three", b"\x02\x01\x00\xff\x00\x02\x40\x00\x00\x00\x00\x00\x05abcde")
    write(t, "forged-chunked-wrong-tag", b"\x02\x00\x00\xff\x00\x01\x10\x00\xf3\x00\x00\x03abc")
    write(t, "forged-chunked-truncated", b"\x02\x00\x00\xff\x00\x01\x10\x00\x00\x00\xff\x00\x00\x03abc")
    # Mode 3: type length, type, flags (0xff: over 1 MiB), seed length (2 bytes), seed, mutations.
    write(t, "roundtrip-text", b"\x03" + bytes([len(text)]) + text.encode() + b"\x00\x00\x0bsecret plan")
    write(t, "roundtrip-mutate", b"\x03\x04text\x00\x00\x04abcd" + b"\x01\x00\x10\x00")
    write(t, "roundtrip-large", b"\x03\x04text\xff\x00\x04abcd\x00\x10")


def document_seeds():
    for name in sorted(os.listdir(os.path.join(ROOT, "examples", "policies"))):
        copy("FuzzPolicyDocument", "example-" + name, os.path.join("examples", "policies", name))
    copy("FuzzPolicyDocument", "example-device-default.json", os.path.join("examples", "device-default.json"))
    fixtures = os.path.join("Tests", "ShareBrokerPolicyDocumentTests", "Fixtures")
    for name in sorted(os.listdir(os.path.join(ROOT, fixtures))):
        if name.endswith(".json"):
            copy("FuzzIntuneImport", name, os.path.join(fixtures, name))


def simulator_seeds():
    """Scenarios built from the examples of docs/SIMULATE.md (the harness sends `start` itself)."""
    with open(os.path.join(ROOT, "docs", "SIMULATE.md")) as f:
        doc = f.read()
    examples = []
    for block in re.findall(r"```json\n(.*?)```", doc, re.S):
        # An example may span lines; each starts with {"op".
        for op in re.split(r"\n(?=\{\"op\")", block.strip()):
            line = " ".join(part.strip() for part in op.splitlines())
            if not line.startswith('{"op":"start"'):
                examples.append(line)
    examples += [s for s in re.findall(r"`(\{\"op\":[^`]*\})`", doc) if not s.startswith('{"op":"start"')]
    policy = '{"op":"policy","auth":"authorized","openIn":"whitelist","openInWhitelist":["com.acme.viewer"],' \
             '"pasteboard":"secureCopy","print":"authorized","dragAndDrop":"appConnectApps"}'
    t = "FuzzSimulatorLine"
    write(t, "doc-examples", ("\n".join(examples) + "\n").encode())
    write(t, "secure-copy", "\n".join([
        policy, '{"op":"copy","text":"secret plan"}', '{"op":"paste"}', '{"op":"paste","as":"com.acme.viewer"}',
        '{"op":"paste","as":"org.example.sheets"}', '{"op":"pasteboardRaw"}', '{"op":"state"}']).encode() + b"\n")
    write(t, "transfers", "\n".join([
        policy, '{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"com.acme.viewer"}',
        '{"op":"openIn","document":"a.txt","contentBase64":"aGVsbG8=","target":"org.example.sheets","via":"activitySheet"}',
        '{"op":"openURL","url":"mailto:cfo@acme.com?subject=Q3"}', '{"op":"openURL","url":"sheets://x"}',
        '{"op":"print"}', '{"op":"composeMail"}', '{"op":"dragAndDrop","target":"com.acme.viewer"}']).encode() + b"\n")
    write(t, "lifecycle", "\n".join([
        '{"op":"state"}', policy, '{"op":"device","secureServices":"unavailable"}',
        '{"op":"device","app":{"id":"com.acme.viewer","appConnect":true,"authorized":false}}',
        '{"op":"policy","openIn":"appConnectApps","ackWith":{"openIn":"error:viewer is missing"}}',
        '{"op":"serverLog"}', '{"op":"policy","auth":"retired"}', '{"op":"state"}']).encode() + b"\n")
    write(t, "web-views", "\n".join([
        policy, '{"op":"identity","user":"unmanaged"}',
        '{"op":"webView","id":"D","parent":"settingsScreen","policy":"currentIdentity"}',
        '{"op":"webView","id":"E","externalURLDelegate":{"internal":["https://docs.acme.com/"]}}',
        '{"op":"navigate","view":"E","url":"https://search.example.org/?q=x"}',
        '{"op":"copy","text":"from a web view","from":"E"}']).encode() + b"\n")
    write(t, "rejected-lines", b'not json\n{"op":"fly"}\n{"op":"policy","auth":"sideways"}\n\n{"op":"copy"}\r\n')


if __name__ == "__main__":
    for target in ["FuzzEnvelope", "FuzzPolicyDocument", "FuzzIntuneImport", "FuzzSimulatorLine"]:
        shutil.rmtree(os.path.join(CORPUS, target), ignore_errors=True)
    envelope_seeds()
    document_seeds()
    simulator_seeds()
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        size = sum(os.path.getsize(os.path.join(CORPUS, target, f)) for f in files)
        print(f"{target}: {len(files)} seeds, {size} bytes")
