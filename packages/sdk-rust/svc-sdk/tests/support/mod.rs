//! A real svc engine for the integration tests: `node bin/run.js --json` in a temporary project
//! whose listener and built-in ports are free ones, read until its `engine_ready` line.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use svc_sdk::telemetry::{flush_otel, internal};
use svc_sdk::{ConnectionState, Svc, TriggerRequest};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..").canonicalize().expect("repo root")
}

/// A port nothing listens on right now (bound, read, released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub struct Engine {
    pub child: Option<Child>,
    pub url: String,
    pub http_url: String,
    pub dir: PathBuf,
    pub port: u16,
    extra: String,
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("svc-rust-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Engine {
    /// An engine whose listener, svc-http and svc-stream take ports the system picks (`port: 0`,
    /// so no other test can take them between a pick and the bind), `extra` YAML appended to
    /// `workers:`. A restart reuses the listener's port.
    pub fn start(extra: &str) -> Engine {
        let dir = temp_dir();
        let (child, url, http_url) = spawn(&dir, 0, extra);
        let port = url.rsplit(':').next().and_then(|p| p.trim_end_matches('/').parse().ok()).unwrap_or_else(|| panic!("no port in {url}"));
        Engine { child: Some(child), url, http_url, dir, port, extra: extra.to_string() }
    }

}

fn spawn(dir: &PathBuf, port: u16, extra: &str) -> (Child, String, String) {
    {
        let config = format!(
            "registration_namespace_grace_ms: 250\nhttp_functions:\n  url_allowlist: [127.0.0.1]\nworkers:\n  - name: svc-worker-manager\n    config:\n      port: {port}\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n{extra}"
        );
        std::fs::write(dir.join("config.yaml"), config).unwrap();
        let root = repo_root();
        let mut child = Command::new(root.join("node_modules/.bin/node"))
            .arg(root.join("bin/run.js"))
            .arg("--json")
            .current_dir(dir)
            .env_remove("SVC_URL")
            .env_remove("SVC_NAMESPACE")
            .env("OTEL_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start svc (npm exec -- tsc -b first?)");
        // Everything the engine prints is kept, so a start that fails says why.
        let printed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let err_log = printed.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = err_log.lock().unwrap();
                if log.len() < 64 * 1024 {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let out_log = printed.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) {
                    if event["event"] == "engine_ready" {
                        let _ = tx.send((event["engine_url"].as_str().unwrap_or("").to_string(), event["http_url"].as_str().unwrap_or("").to_string()));
                    }
                }
                let mut log = out_log.lock().unwrap();
                if log.len() < 64 * 1024 {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        let (url, http_url) = match rx.recv_timeout(Duration::from_secs(90)) {
            Ok(ready) => ready,
            Err(e) => {
                let status = child.try_wait().ok().flatten();
                std::thread::sleep(Duration::from_millis(100)); // lets the readers take the last lines
                panic!("engine_ready: {e:?} (exit {status:?}); the engine printed:\n{}", printed.lock().unwrap());
            }
        };
        (child, url, http_url)
    }
}

impl Engine {
    /// SIGKILL, then wait for the exit.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the engine again on the same port and project.
    pub fn restart(&mut self) {
        self.kill9();
        let (child, url, http_url) = spawn(&self.dir, self.port, &self.extra);
        self.child = Some(child);
        self.url = url;
        self.http_url = http_url;
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits until `client` reports `state` (at most 60 s, then panics).
pub async fn wait_for_state(client: &Svc, state: ConnectionState) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let guard = client.add_connection_state_listener(move |s| {
        let _ = tx.send(s);
    });
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(s) = rx.recv().await {
            if s == state {
                return;
            }
        }
    })
    .await;
    guard.remove();
    found.unwrap_or_else(|_| panic!("client never reached {state:?}; it is {:?}", client.get_connection_state()));
}

/// Polls `check` until it returns Some (at most 30 s).
pub async fn eventually<T, F, Fut>(mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "condition not met within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A call of `function_id` with `payload` and a 20 s timeout.
pub fn request(function_id: &str, payload: Value) -> TriggerRequest {
    TriggerRequest { function_id: function_id.into(), payload, action: None, timeout_ms: Some(20000) }
}

/// The span `name` of trace `trace_id` as `engine::traces::tree` gives it, once it is there.
pub async fn span_of(client: &Svc, trace_id: &str, name: &str) -> Value {
    eventually(|| {
        let client = client.clone();
        let trace_id = trace_id.to_string();
        let name = name.to_string();
        async move {
            let tree = client.trigger(request("engine::traces::tree", json!({"trace_id": trace_id}))).await.ok()?;
            let mut stack: Vec<Value> = tree["roots"].as_array().cloned().unwrap_or_default();
            while let Some(node) = stack.pop() {
                if node["name"] == name.as_str() {
                    return Some(node);
                }
                stack.extend(node["children"].as_array().cloned().unwrap_or_default());
            }
            None
        }
    })
    .await
}

/// Spans the process's OpenTelemetry pipeline has exported so far, after a flush.
pub fn exported() -> u64 {
    flush_otel();
    internal::spans_exported().expect("telemetry is on")
}
