//! math-worker in Rust: registers `math::add` and `math::hello` (GET /math/hello).
//!
//! ```sh
//! svc trigger math::add a=1 b=2                  # {"c": 3.0}
//! curl -s 'localhost:3111/math/hello?name=Ada'   # {"message": "Hello, Ada, from Rust"}
//! ```
//!
//! caller-worker (TypeScript) calls math::add by its id: `svc trigger math::add_two_numbers a=1 b=2`.
//! svc starts the release binary with SVC_URL, SVC_WORKER_NAME and SVC_NAMESPACE set;
//! `register_worker("")` reads them, so the same binary runs under `svc`, `svc compose` or by hand.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use svc_sdk::{register_worker, Error, HttpRequest, HttpResponse, InitOptions, RegisterFunction, RegisterTriggerInput};

/// The request of math::add; its JSON Schema (schemars) is the function's request format.
#[derive(Deserialize, JsonSchema)]
struct Numbers {
    a: f64,
    b: f64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    c: f64,
}

fn add(input: Numbers) -> Result<Sum, Error> {
    Ok(Sum { c: input.a + input.b })
}

/// An http trigger sends the request (method, path, query_params, body, ...) and takes a response.
fn hello(request: HttpRequest) -> Result<HttpResponse, Error> {
    let name = request.query_params.get("name").and_then(|v| v.first()).unwrap_or("world").to_string();
    Ok(HttpResponse::json(200, serde_json::json!({ "message": format!("Hello, {name}, from Rust") })))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // "" reads SVC_URL; the client keeps reconnecting with backoff and replays its registrations.
    let svc = register_worker("", InitOptions { metadata: None, headers: None, otel: None, namespace: None })?;
    svc.register_function("math::add", RegisterFunction::new(add).description("Adds a and b: {a, b} -> {c}"));
    svc.register_function("math::hello", RegisterFunction::new(hello).description("Greets ?name= over GET /math/hello"));
    svc.register_trigger(RegisterTriggerInput {
        trigger_type: "http".into(),
        function_id: "math::hello".into(),
        config: serde_json::json!({ "api_path": "/math/hello", "http_method": "GET" }),
        metadata: None,
    })?;
    println!("math-worker (Rust) registered math::add and math::hello");
    // svc stops workers with SIGTERM, which ends this process; the engine drops its registrations.
    std::future::pending::<()>().await;
    Ok(())
}
