"""A test server with a known capacity: it answers at once while the arrival rate over
the last WINDOW_S stays at or below CAPACITY requests/s, and holds every answer SLOW_S
once it is above — a latency that rises at a known rate, for testing the capacity
search against the real engine. asyncio, HTTP/1.1 keep-alive, fixed 2-byte body.

Run: python -m tests.knee_server PORT CAPACITY   (prints "ready" when listening)
"""

from __future__ import annotations

import asyncio
import collections
import sys
import time

WINDOW_S = 0.25
SLOW_S = 0.03
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


class Knee(asyncio.Protocol):
    arrivals: collections.deque = collections.deque()
    capacity = 100.0

    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        self.buf += data
        while b"\r\n\r\n" in self.buf:
            _, self.buf = self.buf.split(b"\r\n\r\n", 1)
            now = time.monotonic()
            q = Knee.arrivals
            q.append(now)
            while q and q[0] < now - WINDOW_S:
                q.popleft()
            if len(q) > Knee.capacity * WINDOW_S:
                asyncio.get_running_loop().call_later(SLOW_S, self._answer)
            else:
                self._answer()

    def _answer(self):
        if not self.transport.is_closing():
            self.transport.write(RESPONSE)


async def main(port: int, capacity: float) -> None:
    Knee.capacity = capacity
    server = await asyncio.get_running_loop().create_server(Knee, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
