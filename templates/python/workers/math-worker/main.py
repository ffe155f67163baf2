"""math-worker in Python: registers ``math::add`` and ``math::hello`` (GET /math/hello).

    svc trigger math::add a=1 b=2                   # {"c": 3}
    curl -s 'localhost:3111/math/hello?name=Ada'    # {"message": "Hello, Ada, from Python"}

caller-worker (TypeScript) calls math::add by its id: svc trigger math::add_two_numbers a=1 b=2.
svc starts this file with SVC_URL, SVC_WORKER_NAME and SVC_NAMESPACE set; register_worker reads them,
so the same code runs unchanged under `svc`, `svc compose` or by hand.
"""

import signal
import threading
from typing import Any

import pydantic
from svc import register_worker


class Numbers(pydantic.BaseModel):
    a: float
    b: float


def add(data: Numbers) -> dict[str, float]:
    # A non-number fails validation: the caller gets the error with its own code.
    return {"c": data.a + data.b}


def hello(request: dict[str, Any]) -> dict[str, Any]:
    # An http trigger sends the request (method, path, query_params, body, ...) and takes a response.
    name = (request.get("query_params") or {}).get("name") or "world"
    return {"status_code": 200, "body": {"message": f"Hello, {name}, from Python"}}


svc = register_worker()
svc.register_function("math::add", add, description="Adds a and b: {a, b} -> {c}")
svc.register_function("math::hello", hello, description="Greets ?name= over GET /math/hello")
svc.register_trigger({"type": "http", "function_id": "math::hello", "config": {"api_path": "/math/hello", "http_method": "GET"}})
print("math-worker (Python) registered math::add and math::hello")

# svc stops workers with SIGTERM: close the connection cleanly, then exit.
stopped = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopped.set())
signal.signal(signal.SIGINT, lambda *_: stopped.set())
stopped.wait()
svc.shutdown()
