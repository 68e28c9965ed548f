"""Inside a jail: run one command in the task's environment through the framework's bridge.

`python3 -I -S bridge_client.py <command>`: prints the command's output as it comes and exits
with its exit code. Standard library only: it runs in the jail's runtime. See `bridge.py`.
"""

import json
import os
import socket
import struct
import sys

ADDRESS = ("127.0.0.1", int(os.environ.get("FLASHRSI_BRIDGE_PORT", "8087")))
EXIT = 0xFFFFFFFF


def main(command: str) -> int:
    with socket.create_connection(ADDRESS) as connection:
        connection.sendall(json.dumps({"command": command}).encode() + b"\n")
        stream = connection.makefile("rb")
        out = sys.stdout.buffer
        while header := stream.read(4):
            (length,) = struct.unpack(">I", header)
            if length == EXIT:
                return struct.unpack(">i", stream.read(4))[0]
            out.write(stream.read(length))
            out.flush()
    print("the command bridge closed before the command ended", file=sys.stderr)
    return 255


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
