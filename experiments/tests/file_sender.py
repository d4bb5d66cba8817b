"""A stand-in for a user's own file sender, for the one-flow external-arm
test: sends FILE to DST over TCP and exits once the receiver has confirmed
every byte (exit status 0), or (``sink``) a receiver that takes any number
of such transfers at once and prints a line for each.

    file_sender.py send DST FILE
    file_sender.py sink
"""
import signal
import socket
import sys
import threading

PORT = 5002


def send(dst: str, path: str) -> int:
    data = open(path, "rb").read()
    with socket.create_connection((dst, PORT), timeout=30) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = int(s.recv(32).decode() or -1)
    print(f"sent {len(data)} bytes, receiver confirmed {got}", flush=True)
    return 0 if got == len(data) else 1


def _take(conn: socket.socket) -> None:
    n = 0
    with conn:
        while chunk := conn.recv(65536):
            n += len(chunk)
        conn.sendall(str(n).encode())
    print(f"received {n} bytes", flush=True)


def sink() -> int:
    s = socket.create_server(("0.0.0.0", PORT), backlog=64)
    try:
        while True:
            conn, _ = s.accept()
            threading.Thread(target=_take, args=(conn,), daemon=True).start()
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    # `timeout` and p4cc stop a program with SIGTERM.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if sys.argv[1] == "send":
        sys.exit(send(sys.argv[2], sys.argv[3]))
    sys.exit(sink())
