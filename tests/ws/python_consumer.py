"""A consumer written the way a Python team would, from docs/protocol.md alone, with the
`websockets` library: subscribe, take one job, ack it. Run by python_consumer_test.ts.

Usage: python3 python_consumer.py WS_URL QUEUE MAX_SIZE   (MAX_SIZE "default" keeps the
library's own limit, 1 MiB). Prints one JSON line: {"acked": id}, or {"closed": code} with the
code this side closed with (1009 when it refused a frame over max_size).
"""
import asyncio
import json
import sys

import websockets


async def main(url, queue, max_size):
    # A short close_timeout: after refusing a frame the library waits that long for the closing
    # handshake (10 s by default), behind the bytes of the frame it will not read.
    options = {"close_timeout": 1}
    if max_size != "default":
        options["max_size"] = int(max_size)
    try:
        async with websockets.connect(url, **options) as ws:
            await ws.send(json.dumps({"op": "subscribe", "ref": 1, "queue": queue, "prefetch": 1}))
            while True:
                frame = json.loads(await ws.recv())
                if frame["op"] != "job":
                    continue
                token = frame["lease"]["token"]
                await ws.send(json.dumps({"op": "ack", "ref": 2, "id": frame["id"], "token": token}))
                while True:
                    reply = json.loads(await ws.recv())
                    if reply.get("ref") == 2:
                        print(json.dumps({"acked": reply["id"]}))
                        return
    except websockets.exceptions.ConnectionClosed as closed:
        # The code this side closed with (1009: a message over max_size), else the peer's.
        sent = closed.sent.code if closed.sent else None
        print(json.dumps({"closed": sent if sent is not None else closed.code}))


asyncio.run(asyncio.wait_for(main(*sys.argv[1:4]), 30))
