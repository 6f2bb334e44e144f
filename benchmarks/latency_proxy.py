"""A TCP proxy that delays every request by a fixed time: object-store latency on loopback.

Real object stores answer a GET after tens of milliseconds; moto on loopback answers in well
under one. Each chunk a client sends (an HTTP request's head, in practice) is forwarded to the
target `--delay-ms` later, on that connection only, so requests on other connections are not
held up by it: a reader with several requests in flight waits once, one that sends them in
turn waits every time. Answers are passed back undelayed.

    python benchmarks/latency_proxy.py --port 9001 --target 127.0.0.1:9000 --delay-ms 20
"""

from __future__ import annotations

import argparse
import asyncio


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while chunk := await reader.read(1 << 16):
            if delay:
                await asyncio.sleep(delay)
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def serve(port: int, host: str, target_port: int, delay: float) -> None:
    async def connect(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(host, target_port)
        await asyncio.gather(pump(client_reader, server_writer, delay), pump(server_reader, client_writer, 0.0))

    server = await asyncio.start_server(connect, "127.0.0.1", port)
    print(f"ready {port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--target", required=True, help="host:port")
    p.add_argument("--delay-ms", type=float, required=True)
    args = p.parse_args()
    host, target_port = args.target.rsplit(":", 1)
    asyncio.run(serve(args.port, host, int(target_port), args.delay_ms / 1000))


if __name__ == "__main__":
    main()
