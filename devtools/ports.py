"""A free TCP port on 127.0.0.1, for every server the tests, benchmarks and scripts start.

    free_port() -> 40123   (the system's choice: free now, not reserved)
"""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
