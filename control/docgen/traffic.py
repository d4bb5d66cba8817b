"""Send IPv4/UDP frames (ECT(0), 1042-byte frames) into the switch's port 1 (from the peer veth end)."""
import socket, struct, sys, time
iface, dst, n, pps = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b)//2), b)); s = (s >> 16) + (s & 0xffff); return ~(s + (s >> 16)) & 0xffff
payload = b"x" * 1000
udp = struct.pack("!HHHH", 40000, 5001, 8 + len(payload), 0) + payload
hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 2, 20 + len(udp), 1, 0, 64, 17, 0, socket.inet_aton("10.0.0.1"), socket.inet_aton(dst))
hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
frame = bytes.fromhex("02cc00010001") + bytes.fromhex("02000a000001") + b"\x08\x00" + hdr + udp
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind((iface, 0))
for i in range(n):
    s.send(frame); time.sleep(1 / pps)
