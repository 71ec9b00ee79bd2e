#!/usr/bin/env python3
"""Resolves a Consul service by DNS SRV and prints host:port of the first
answer, as a client of llmgw-router.service.consul would find a router.
Usage: srv.py DNS_HOST DNS_PORT NAME. Standard library only."""
import socket
import struct
import sys


def name_end(b, i):
    while True:
        n = b[i]
        if n == 0:
            return i + 1
        if n & 0xC0 == 0xC0:
            return i + 2
        i += n + 1


def read_name(b, i):
    out = []
    while True:
        n = b[i]
        if n == 0:
            return ".".join(out)
        if n & 0xC0 == 0xC0:
            out.append(read_name(b, ((n & 0x3F) << 8) | b[i + 1]))
            return ".".join(out)
        out.append(b[i + 1:i + 1 + n].decode())
        i += n + 1


def main():
    host, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    q = struct.pack(">HHHHHH", 0x4C47, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    q += struct.pack(">HH", 33, 1)  # SRV, IN
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(q, (host, port))
    r, _ = s.recvfrom(4096)
    _, flags, qd, an, ns, ar = struct.unpack(">HHHHHH", r[:12])
    if flags & 0xF or an == 0:
        sys.exit("no SRV answer for %s (rcode %d)" % (name, flags & 0xF))
    i = 12
    for _ in range(qd):
        i = name_end(r, i) + 4
    srv, addrs = None, {}
    for _ in range(an + ns + ar):
        owner = read_name(r, i)
        i = name_end(r, i)
        typ, _, _, rdlen = struct.unpack(">HHIH", r[i:i + 10])
        i += 10
        data = r[i:i + rdlen]
        if typ == 33 and srv is None:
            srv = (read_name(r, i + 6), struct.unpack(">H", data[4:6])[0])
        elif typ == 1:
            addrs[owner] = socket.inet_ntoa(data)
        i += rdlen
    target, srv_port = srv
    print("%s:%d" % (addrs.get(target, target), srv_port))


if __name__ == "__main__":
    main()
