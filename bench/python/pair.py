"""One side of the Python SDK benchmark (bench/python-sdk.ts), for svc-sdk (`svc`) or iii-sdk
(`iii`): the two expose the same API, so one script serves both.

    python pair.py callee <svc|iii> <engine url>   serves bench::py-echo (an async echo), prints {"ready": true}
    python pair.py caller <svc|iii> <engine url>   prints {"p50_us", "p99_us", "per_second_64"}

The caller measures BENCH_SAMPLES (default 3000) sequential blocking `trigger` calls after 500
warm-up calls, then keeps 64 `trigger_async` calls in flight for BENCH_DURATION_MS (default 3000).
Telemetry is off on both sides (like for like).
"""

import asyncio
import json
import os
import sys
import threading
import time

role, sdk, url = sys.argv[1], sys.argv[2], sys.argv[3]
if sdk == "svc":
    from svc import InitOptions, register_worker
else:
    from iii import InitOptions, register_worker  # type: ignore[no-redef]

client = register_worker(url, InitOptions(worker_name=f"bench-{sdk}-{role}", otel={"enabled": False}))
FUNCTION = f"bench::py-echo-{sdk}"
PAYLOAD = {"id": 42, "name": "benchmark", "tags": ["a", "b", "c"], "nested": {"x": 1.5, "y": True}, "text": "x" * 20}

if role == "callee":
    async def echo(data):
        return data

    client.register_function(FUNCTION, echo)
    time.sleep(0.5)
    print(json.dumps({"ready": True}), flush=True)
    threading.Event().wait()

request = {"function_id": FUNCTION, "payload": PAYLOAD}
deadline = time.monotonic() + 30
while True:
    try:
        client.trigger(request)
        break
    except Exception:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)

samples = int(os.environ.get("BENCH_SAMPLES", "3000"))
for _ in range(500):
    client.trigger(request)
times = []
for _ in range(samples):
    start = time.perf_counter_ns()
    client.trigger(request)
    times.append((time.perf_counter_ns() - start) / 1000)
times.sort()


async def in_flight(n: int, duration_s: float) -> float:
    done = 0
    running = True

    async def lane() -> None:
        nonlocal done
        while running:
            await client.trigger_async(request)
            done += 1

    start = time.perf_counter()
    tasks = [asyncio.ensure_future(lane()) for _ in range(n)]
    await asyncio.sleep(duration_s)
    running = False
    await asyncio.gather(*tasks)
    return done / (time.perf_counter() - start)


rate = asyncio.run(in_flight(64, int(os.environ.get("BENCH_DURATION_MS", "3000")) / 1000))
print(json.dumps({"p50_us": round(times[len(times) // 2], 1), "p99_us": round(times[int(len(times) * 0.99)], 1), "per_second_64": round(rate)}), flush=True)
client.shutdown()
os._exit(0)
