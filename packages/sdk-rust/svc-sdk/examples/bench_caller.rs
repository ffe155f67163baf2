//! The calling side of the SDK benchmark (bench/sdk-rust.ts), measured like bench/measure.ts
//! measures the Node callers: sequential latency over BENCH_SAMPLES calls (default 5,000) after
//! 1,000 warm-up calls, then 1, 8 and 64 calls in flight for BENCH_DURATION_MS each (default
//! 3,000 ms; BENCH_IN_FLIGHT, e.g. `64`, measures only those counts). Prints one JSON line `{mode, p50_us, p99_us, samples, per_second, calls, cpu_ms}`.
//!
//! `cargo run --release --example bench_caller -- ws://127.0.0.1:49134`

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use svc_sdk::{register_worker, Error, InitOptions, Svc, TriggerRequest, WorkerMetadata};

fn payload() -> Value {
    // bench/payload.ts
    json!({ "order_id": "ord_7f3a9c21", "customer": "cus_42", "items": [3, 1, 4, 1, 5], "total_cents": 12999, "note": "leave at door" })
}

async fn call(client: &Svc, payload: &Value) -> Result<Value, Error> {
    client.trigger(TriggerRequest { function_id: "bench::echo".into(), payload, action: None, timeout_ms: None }).await
}

/// CPU time of this process (user + system), ms, from /proc/self/stat (clock ticks of 10 ms).
fn cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) * 10
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let address = std::env::args().nth(1).unwrap_or_default();
    let env_num = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let samples = env_num("BENCH_SAMPLES", 5000) as usize;
    let duration = Duration::from_millis(env_num("BENCH_DURATION_MS", 3000));
    let client = register_worker(&address, InitOptions { metadata: Some(WorkerMetadata::detect().name("bench-caller-rust")), ..InitOptions::default() })?;
    let payload = payload();
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Err(e) = call(&client, &payload).await {
        if Instant::now() > deadline {
            return Err(e);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cpu_start = cpu_ms();
    for _ in 0..1000 {
        call(&client, &payload).await?;
    }
    let mut times: Vec<f64> = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = Instant::now();
        call(&client, &payload).await?;
        times.push(start.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let round = |v: f64| (v * 10.0).round() / 10.0;
    let mut rates = serde_json::Map::new();
    let mut calls = (1000 + samples) as u64;
    // BENCH_IN_FLIGHT: the in-flight counts to measure, comma-separated (bench/measure.ts's variable).
    let in_flights: Vec<usize> = std::env::var("BENCH_IN_FLIGHT")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).filter(|&n| n > 0).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![1, 8, 64]);
    for in_flight in in_flights {
        let running = Arc::new(AtomicBool::new(true));
        let done = Arc::new(AtomicU64::new(0));
        let start = Instant::now();
        let lanes: Vec<_> = (0..in_flight)
            .map(|_| {
                let (client, payload, running, done) = (client.clone(), payload.clone(), running.clone(), done.clone());
                tokio::spawn(async move {
                    while running.load(Ordering::Relaxed) {
                        if call(&client, &payload).await.is_ok() {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(duration).await;
        running.store(false, Ordering::Relaxed);
        for lane in lanes {
            let _ = lane.await;
        }
        let n = done.load(Ordering::Relaxed);
        calls += n;
        rates.insert(in_flight.to_string(), json!((n as f64 / start.elapsed().as_secs_f64()).round() as u64));
    }
    let out = json!({
        "mode": "svc-rust",
        "p50_us": round(times[samples / 2]),
        "p99_us": round(times[samples * 99 / 100]),
        "samples": samples,
        "per_second": rates,
        "calls": calls,
        "cpu_ms": cpu_ms().saturating_sub(cpu_start),
    });
    println!("{out}");
    client.shutdown_async().await;
    Ok(())
}
