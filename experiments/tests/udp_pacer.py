"""A stand-in for a user's own sender program, for the external-arm test:
UDP datagrams to DST at a fixed payload rate until stopped, or (``sink``)
a receiver that counts what arrives. Prints one line when it ends, so the
test can see its output was kept.

    udp_pacer.py send DST MBPS PAYLOAD_BYTES
    udp_pacer.py sink
"""
import signal
import socket
import sys
import time

PORT = 5001


def send(dst: str, mbps: float, payload: int) -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gap = payload * 8 / (mbps * 1e6)
    data, sent, t = b"\0" * payload, 0, time.monotonic()
    try:
        while True:
            try:
                s.sendto(data, (dst, PORT))
                sent += 1
            except OSError:
                pass  # an ICMP error from an earlier datagram; keep pace
            t += gap
            time.sleep(max(0.0, t - time.monotonic()))
    except KeyboardInterrupt:
        pass
    finally:
        print(f"sent {sent} datagrams of {payload} bytes", flush=True)
    return 0


def sink() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", PORT))
    got = 0
    try:
        while True:
            s.recv(65536)
            got += 1
    except KeyboardInterrupt:
        pass
    finally:
        print(f"received {got} datagrams", flush=True)
    return 0


if __name__ == "__main__":
    # `timeout` and p4cc stop a program with SIGTERM.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if sys.argv[1] == "send":
        sys.exit(send(sys.argv[2], float(sys.argv[3]), int(sys.argv[4])))
    sys.exit(sink())
