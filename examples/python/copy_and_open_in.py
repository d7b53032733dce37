#!/usr/bin/env python3
"""A Python app on ShareBroker through ctypes (standard library only).

Copies under the policy and pastes back, and opens a document in an allowed and a blocked
target. With --embedded it uses the in-memory platform and plays the server; otherwise it
attaches to the running agent (sharebrokerd), which must have registered the Python interpreter
running this script as an app.

    python3 copy_and_open_in.py --embedded [--lib PATH/libsharebroker.so.1]
    python3 copy_and_open_in.py [--socket PATH] [ALLOWED BLOCKED]
"""
import argparse
import ctypes
import ctypes.util
import sys

SB_OK = 0
SB_KEEP = -1
SB_AUTH_AUTHORIZED = 1
SB_OPEN_IN_WHITELIST = 2
SB_PASTEBOARD_SECURE_COPY = 2
SB_POLICY_STATE_APPLIED = 1
SB_CHANNEL_DOCUMENT_INTERACTION = 0
SB_TRANSFER_DELIVERED = 0
SB_COPY_ACTIONS = {0: "clear", 1: "sealed", 2: "blocked"}
SB_TYPE_TEXT = b"public.utf8-plain-text"
SB_ACK_MESSAGE_MAX = 512

c_int32, c_uint32, c_size_t, c_char_p, c_void_p = (
    ctypes.c_int32, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p)


class Acknowledgment(ctypes.Structure):
    _fields_ = [("state", c_int32), ("message", ctypes.c_char * SB_ACK_MESSAGE_MAX)]


READY = ctypes.CFUNCTYPE(None, c_void_p)
AUTH = ctypes.CFUNCTYPE(None, c_void_p, c_int32, c_char_p, ctypes.POINTER(Acknowledgment))
POLICY_NOTE = ctypes.CFUNCTYPE(None, c_void_p, c_int32)


class Callbacks(ctypes.Structure):
    # The layout of sb_callbacks (include/sharebroker.h); unused members stay NULL.
    _fields_ = [("struct_size", c_uint32), ("user_data", c_void_p),
                ("ready", READY), ("auth_state_changed", AUTH),
                ("config_changed", c_void_p), ("open_in_policy_changed", c_void_p),
                ("open_in_attempted_when_blocked", POLICY_NOTE),
                ("open_url_attempted_when_unauthorized", c_void_p),
                ("drag_and_drop_attempted_to_non_appconnect_app", c_void_p),
                ("pasteboard_policy_changed", c_void_p), ("copy_attempted_when_unauthorized", c_void_p),
                ("print_policy_changed", c_void_p), ("secure_services_availability_changed", c_void_p),
                ("secure_file_io_policy_changed", c_void_p), ("log_level_changed", c_void_p),
                ("will_resign_active", c_void_p), ("did_become_active", c_void_p)]


class PolicyUpdate(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("auth", c_int32), ("auth_message", c_char_p),
                ("open_in", c_int32), ("open_in_whitelist", ctypes.POINTER(c_char_p)),
                ("open_in_whitelist_count", c_size_t), ("pasteboard", c_int32), ("print", c_int32),
                ("secure_file_io", c_int32), ("log_level", c_int32), ("drag_and_drop", c_int32),
                ("managed_browser_required", c_int32), ("replace_config", c_int32),
                ("config", c_void_p), ("config_count", c_size_t)]


class Decision(ctypes.Structure):
    _fields_ = [("allowed", c_int32), ("rule", c_int32), ("generation", ctypes.c_uint64)]


class CopyResult(ctypes.Structure):
    _fields_ = [("action", c_int32), ("rule", c_int32), ("notifies_app", c_int32), ("generation", ctypes.c_uint64)]


class TransferResult(ctypes.Structure):
    _fields_ = [("outcome", c_int32), ("decision", Decision), ("path", c_char_p), ("name", c_char_p)]


class Item(ctypes.Structure):
    _fields_ = [("type", c_char_p), ("bytes", ctypes.POINTER(ctypes.c_uint8)), ("length", c_size_t)]


def load(path):
    lib = ctypes.CDLL(path or ctypes.util.find_library("sharebroker") or "libsharebroker.so.1")
    lib.sb_version.restype = c_uint32
    lib.sb_last_error_message.restype = c_char_p
    lib.sb_status_name.restype = c_char_p
    lib.sb_status_name.argtypes = [c_int32]
    lib.sb_rule_name.restype = c_char_p
    lib.sb_rule_name.argtypes = [c_int32]
    lib.sb_copy_rule_name.restype = c_char_p
    lib.sb_copy_rule_name.argtypes = [c_int32]
    for name, args in {
        "sb_broker_create_embedded": [c_char_p, ctypes.POINTER(c_void_p)],
        "sb_broker_attach": [c_char_p, ctypes.POINTER(Callbacks), ctypes.POINTER(c_void_p)],
        "sb_broker_start": [c_void_p, ctypes.POINTER(Callbacks)],
        "sb_broker_apply": [c_void_p, ctypes.POINTER(PolicyUpdate), c_void_p],
        "sb_broker_destroy": [c_void_p],
        "sb_copy": [c_void_p, c_char_p, ctypes.c_char_p, c_size_t, ctypes.POINTER(CopyResult)],
        "sb_paste": [c_void_p, ctypes.POINTER(ctypes.POINTER(Item))],
        "sb_open_in": [c_void_p, c_char_p, ctypes.c_char_p, c_size_t, c_char_p, c_int32,
                       ctypes.POINTER(ctypes.POINTER(TransferResult))],
    }.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = c_int32
    lib.sb_item_free.argtypes = [ctypes.POINTER(Item)]
    lib.sb_item_free.restype = None
    lib.sb_transfer_result_free.argtypes = [ctypes.POINTER(TransferResult)]
    lib.sb_transfer_result_free.restype = None
    return lib


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedded", action="store_true")
    parser.add_argument("--lib")
    parser.add_argument("--socket")
    parser.add_argument("targets", nargs="*", default=["org.example.sheets", "org.example.chat"])
    args = parser.parse_args()
    lib = load(args.lib)
    if lib.sb_version() >> 16 != 1:
        sys.exit(f"libsharebroker has interface {lib.sb_version() >> 16}, this program speaks 1")

    def check(what, status):
        if status != SB_OK:
            sys.exit(f"{what} failed: {lib.sb_status_name(status).decode()}: {lib.sb_last_error_message().decode()}")

    # The callbacks must stay referenced while the broker lives.
    def on_ready(_):
        print("ready: policies are readable")

    def on_auth(_, state, message, ack):
        print(f"authorization: {state} ({message.decode()})")
        ack.contents.state = SB_POLICY_STATE_APPLIED

    def on_blocked(_, policy):
        print(f"open in blocked by policy {policy}: the target got a dummy file")

    keep = (READY(on_ready), AUTH(on_auth), POLICY_NOTE(on_blocked))
    callbacks = Callbacks(struct_size=ctypes.sizeof(Callbacks), ready=keep[0], auth_state_changed=keep[1],
                          open_in_attempted_when_blocked=keep[2])
    allowed, blocked = args.targets[0], args.targets[1]
    broker = c_void_p()
    if args.embedded:
        check("create", lib.sb_broker_create_embedded(b"com.acme.notes", ctypes.byref(broker)))
        check("start", lib.sb_broker_start(broker, ctypes.byref(callbacks)))
        whitelist = (c_char_p * 1)(allowed.encode())
        # SB_POLICY_UPDATE_INIT: every member "keep" (a zeroed update would be the strictest policy).
        update = PolicyUpdate(struct_size=ctypes.sizeof(PolicyUpdate), auth=SB_KEEP, open_in=SB_KEEP,
                              pasteboard=SB_KEEP, print=SB_KEEP, secure_file_io=SB_KEEP, log_level=SB_KEEP,
                              drag_and_drop=SB_KEEP, managed_browser_required=SB_KEEP)
        update.auth = SB_AUTH_AUTHORIZED
        update.open_in, update.open_in_whitelist, update.open_in_whitelist_count = SB_OPEN_IN_WHITELIST, whitelist, 1
        update.pasteboard = SB_PASTEBOARD_SECURE_COPY
        check("apply", lib.sb_broker_apply(broker, ctypes.byref(update), None))
    else:
        socket = args.socket.encode() if args.socket else None
        check("attach", lib.sb_broker_attach(socket, ctypes.byref(callbacks), ctypes.byref(broker)))
    try:
        secret = b"secret plan"
        copied = CopyResult()
        check("copy", lib.sb_copy(broker, SB_TYPE_TEXT, secret, len(secret), ctypes.byref(copied)))
        print(f"copy: {SB_COPY_ACTIONS[copied.action]} ({lib.sb_copy_rule_name(copied.rule).decode()})")
        item = ctypes.POINTER(Item)()
        status = lib.sb_paste(broker, ctypes.byref(item))
        if status == SB_OK:
            data = ctypes.string_at(item.contents.bytes, item.contents.length)
            print(f"paste: {len(data)} bytes of {item.contents.type.decode()}: {data.decode()}")
            lib.sb_item_free(item)
        else:
            print(f"paste: nothing readable ({lib.sb_status_name(status).decode()})")
        document = b"%PDF-1.7 quarterly numbers"
        for target in (allowed, blocked):
            result = ctypes.POINTER(TransferResult)()
            check("open in", lib.sb_open_in(broker, b"Q3.pdf", document, len(document), target.encode(),
                                            SB_CHANNEL_DOCUMENT_INTERACTION, ctypes.byref(result)))
            outcome = "delivered" if result.contents.outcome == SB_TRANSFER_DELIVERED else "dummy"
            print(f"open in {target}: {outcome} ({lib.sb_rule_name(result.contents.decision.rule).decode()})")
            lib.sb_transfer_result_free(result)
    finally:
        check("destroy", lib.sb_broker_destroy(broker))


if __name__ == "__main__":
    main()
