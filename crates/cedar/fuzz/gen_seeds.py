#!/usr/bin/env python3
"""Writes the seed inputs under seeds/<target>/: well-formed CEDAR messages
(what a real client sends), for the fuzzer to mutate from. Run from this
directory: python3 gen_seeds.py"""

import base64
import os
import struct

DC_AUTHENTICATE = 60010
DC_SEC_QUERY = 60040


def int_(v):
    return struct.pack(">q", v)


def str_(s, crypto=False):
    b = s.encode() + b"\0"
    return (int_(len(b)) if crypto else b"") + b


def ad(attrs):
    out = int_(len(attrs))
    for line in attrs:
        out += str_(line)
    return out + str_("") + str_("")


def message(payload, cut=4091):
    """One message as packets (the last marked)."""
    out = b""
    chunks = [payload[i : i + cut] for i in range(0, len(payload), cut)] or []
    for i, c in enumerate(chunks):
        out += bytes([1 if i == len(chunks) - 1 else 0]) + struct.pack(">I", len(c)) + c
    return out


# P-256's generator, uncompressed: a valid public key (the session key
# then agreed is nobody's secret, which is fine for a fuzzer).
G = base64.b64encode(
    bytes.fromhex(
        "04"
        "6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296"
        "4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5"
    )
).decode()


def policy(command=5, auth="OPTIONAL", methods="FS,CLAIMTOBE", extra=(), key=True):
    return [
        f"Command = {command}",
        f'AuthenticationNew = "{auth}"',
        f'Authentication = "{auth}"',
        'Encryption = "OPTIONAL"',
        'Integrity = "OPTIONAL"',
        f'AuthMethods = "{methods}"',
        'CryptoMethods = "AES,BLOWFISH,3DES"' if key else 'CryptoMethods = "BLOWFISH"',
        *([f'ECDHPublicKey = "{G}"'] if key else []),
        'SessionDuration = "60"',
        "SessionLease = 3600",
        'Enact = "NO"',
        'RemoteVersion = "$CondorVersion: 25.14.1 2026-09-24 $"',
        *extra,
    ]


def auth_msg(attrs):
    return message(int_(DC_AUTHENTICATE) + ad(attrs))


SEEDS = {
    "handshake": {
        "bare-read": message(int_(5) + ad(['MyType = "Query"', "Requirements = true"])),
        "bare-unknown": message(int_(424242)),
        "bare-admin": message(int_(60030)),
        "auth-none": auth_msg(policy(auth="NEVER")),
        "auth-optional": auth_msg(policy()),
        "sec-query": auth_msg(policy(command=DC_SEC_QUERY, extra=["AuthCommand = 1000"])),
        "claimtobe": auth_msg(policy(command=1000, auth="REQUIRED", methods="CLAIMTOBE"))
        + message(int_(2))
        + message(int_(1) + str_("alice")),
        "claimtobe-refused": auth_msg(policy(command=1000, auth="REQUIRED", methods="CLAIMTOBE"))
        + message(int_(2))
        + message(int_(0)),
        "fs": auth_msg(policy(command=60030, auth="REQUIRED", methods="FS"))
        + message(int_(4))
        + message(int_(0)),
        "claimtobe-unkeyed": auth_msg(policy(command=1000, auth="REQUIRED", methods="CLAIMTOBE", key=False))
        + message(int_(2))
        + message(int_(1) + str_("alice@example.org")),
        "fs-then-claimtobe": auth_msg(policy(command=1000, auth="PREFERRED"))
        + message(int_(6))
        + message(int_(-1))
        + message(int_(6))
        + message(int_(1) + str_("bob")),
        "no-method": auth_msg(policy(auth="REQUIRED", methods="SSL,TOKEN")) + message(int_(256 | 2048)),
        "ecdh-bad-point": auth_msg(
            policy(key=False, extra=['CryptoMethods = "AES"', 'ECDHPublicKey = "BAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="'])
        ),
        "unkeyed": auth_msg(policy(key=False)),
        "resume": auth_msg(
            ["Command = 5", 'UseSession = "YES"', 'Sid = "fuzzhost:1:1700000000:1"', "ResumeResponse = true"]
        ),
        "zkm": message(int_(DC_AUTHENTICATE) + int_(2) + str_("Command = 5") + str_("ZKM") + str_('Enact = "NO"', True) + str_("") + str_("")),
        "split-packets": message(int_(DC_AUTHENTICATE) + ad(policy()), cut=7),
    },
    "decode": {
        # First byte: script length; then the script (value kinds, see
        # decode.rs: 0 int, 1 i32, 2 char, 3 double, 4 str, 5 nullstr,
        # 6 ad, 7 bytes, 8 bool, 9 switch string mode); then the payload.
        "ad": bytes([1, 6]) + ad(['Name = "slot1@x"', "Cpus = 4", "Req = Cpus > 2 && Name =!= \"a\\\\b\""]),
        "mixed": bytes([5, 0, 4, 3, 5, 6]) + int_(7) + str_("Sid") + int_(1073741823) + int_(1) + b"\xff" + ad(["A = 1"]),
        "crypto": bytes([3, 9, 4, 6]) + str_("ab", True) + int_(1) + str_("B = {1, 2, 3}", True) + str_("", True) + str_("", True),
        "zkm": bytes([1, 6]) + int_(2) + str_("X = 1") + str_("ZKM") + str_("ClaimId = \"secret\"", True) + str_("") + str_(""),
        "header": bytes([1, 0, 0, 2, 0x69, 0]),
        "sinful": b"<127.0.0.1:9618?addrs=127.0.0.1-9618&noUDP&sock=collector&alias=x%20y>",
        "sinful6": b"<[::1]:1234?a=b;c>",
    },
}

for target, seeds in SEEDS.items():
    d = os.path.join("seeds", target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
