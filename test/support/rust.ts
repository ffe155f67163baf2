/**
 * The Rust toolchain of svc's tests: finding cargo, and the Rust SDK's conformance worker
 * (`packages/sdk-rust/conformance`, test/conformance/README.md) built once per test process with
 * `cargo build --release --locked` into the crates' own `target/` (so nothing is cached outside
 * the clone; `.ci/run` points `CARGO_HOME` there too). Without cargo it fails with the command that
 * installs it.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from './processes.ts'

/** The crate workspace: `svc-sdk`, `svc-helpers` and the conformance worker. */
export const CRATES = join(ROOT, 'packages', 'sdk-rust')
export const CARGO_INSTALL_HINT = 'install Rust >= 1.85 with cargo (rustup, or Debian: apt-get install -y cargo), or point SVC_TEST_CARGO at a cargo'

/**
 * The cargo to run: `SVC_TEST_CARGO`, else `cargo` on PATH, else rustup's default place.
 * @throws AssertionError with {@link CARGO_INSTALL_HINT} when there is none.
 */
export function findCargo(): string {
  const candidates = [process.env.SVC_TEST_CARGO, 'cargo', join(homedir(), '.cargo', 'bin', 'cargo')].filter((c): c is string => c !== undefined && c !== '')
  for (const candidate of candidates) {
    if (candidate.includes('/') && !existsSync(candidate)) continue
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate
  }
  assert.fail(`cargo was not found: ${CARGO_INSTALL_HINT}`)
}

/** Runs cargo in the crate workspace; resolves with the exit code and the combined output. */
export function cargo(args: string[], bin = findCargo()): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: CRATES, env: { ...process.env, CARGO_TERM_COLOR: 'never' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output }))
  })
}

let built: Promise<string> | undefined

/**
 * The path of the Rust conformance worker binary (`target/release/conformance-worker`), built on
 * the first call of a test process (later calls share that build; cargo itself makes a build that
 * is up to date cost a second).
 * @throws AssertionError with cargo's last lines when the build fails.
 */
export function rustConformanceWorker(): Promise<string> {
  built ??= (async () => {
    const { code, output } = await cargo(['build', '--release', '--locked', '-p', 'svc-conformance-worker'])
    assert.equal(code, 0, `cargo build --release of the Rust conformance worker failed:\n${output.trimEnd().split('\n').slice(-40).join('\n')}`)
    return join(CRATES, 'target', 'release', 'conformance-worker')
  })()
  return built
}
