#!/usr/bin/env python3
"""Whether this kernel stamps loopback TCP data with its arrival time (SO_TIMESTAMPNS).

The way for a client that reads late (after a timed sleep, bench/RESULTS.md "Who pays
for a client's wake-ups") to still time each response as it landed: the stamp a
recvmsg returns is when the last segment it read was queued on the socket, not when
the read happened. Two checks on a loopback connection: one segment read 5 ms late,
and two segments sent 5 ms apart read together (the stamp is the second one's).
"""

import socket
import struct
import time

SO_TIMESTAMPNS = 35  # linux/asm-generic/socket.h; SCM_TIMESTAMPNS is the same number


def main() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    client = socket.create_connection(srv.getsockname())
    server, _ = srv.accept()
    client.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    for second in (False, True):
        sent = time.clock_gettime(time.CLOCK_REALTIME)
        server.send(b"a" * 60)
        time.sleep(0.005)
        if second:
            server.send(b"b" * 60)
            time.sleep(0.002)
        data, ancillary, _, _ = client.recvmsg(4096, 256)
        read = time.clock_gettime(time.CLOCK_REALTIME)
        stamps = [d for level, kind, d in ancillary if kind == SO_TIMESTAMPNS]
        if not stamps:
            print(f"{len(data)} bytes: no arrival stamp")
            continue
        sec, ns = struct.unpack("qq", stamps[0][:16])
        print(f"{len(data)} bytes: stamped {1e6 * (sec + ns / 1e9 - sent):.0f} µs after the first send, "
              f"read {1e6 * (read - sent):.0f} µs after it")
    for s in (client, server, srv):
        s.close()


if __name__ == "__main__":
    main()
