//! The invoked side of the SDK benchmark (bench/sdk-rust.ts): serves `bench::echo`, which answers
//! with its payload, and prints `{"ready":true}` once connected. Stops on SIGTERM (the default action).
//!
//! `cargo run --release --example bench_callee -- ws://127.0.0.1:49134`

use serde_json::Value;
use svc_sdk::{register_worker, ConnectionState, Error, InitOptions, RegisterFunction, WorkerMetadata};

fn main() -> Result<(), Error> {
    let address = std::env::args().nth(1).unwrap_or_default();
    let client = register_worker(&address, InitOptions { metadata: Some(WorkerMetadata::detect().name("bench-callee-rust")), ..InitOptions::default() })?;
    client.register_function("bench::echo", RegisterFunction::new_async(|data: Value| async move { Ok::<_, Error>(data) }));
    let _ready = client.add_connection_state_listener(|state| {
        if state == ConnectionState::Connected {
            println!("{{\"ready\":true}}");
        }
    });
    loop {
        std::thread::park();
    }
}
