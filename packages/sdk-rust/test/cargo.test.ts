/**
 * The Rust SDK's own suites (packages/sdk-rust, crates `svc-sdk` and `svc-helpers`) as part of
 * `npm test`: `cargo test --locked` (unit tests, proptest properties, the integration tests that
 * start real engines from bin/run.js, the recorded iii frames, rustdoc examples) and
 * `cargo clippy --all-targets --locked -- -D warnings` (which also denies a public item without
 * rustdoc). Builds go to the crate workspace's own `target/`.
 *
 * Without cargo the test fails with the command that installs it. `SVC_TEST_CARGO` points at
 * another cargo.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const CRATES = fileURLToPath(new URL('..', import.meta.url))
const INSTALL_HINT = 'install Rust >= 1.85 with cargo (rustup, or Debian: apt-get install -y cargo), or point SVC_TEST_CARGO at a cargo'
/** A clean build and every suite take a few minutes on the shared 2-core machine. */
const TIMEOUT_MS = 20 * 60 * 1000

/** The cargo to run: SVC_TEST_CARGO, else `cargo` on PATH, else rustup's default place. */
function findCargo(): string {
  const candidates = [process.env.SVC_TEST_CARGO, 'cargo', join(homedir(), '.cargo', 'bin', 'cargo')].filter((c): c is string => c !== undefined && c !== '')
  for (const candidate of candidates) {
    if (candidate.includes('/') && !existsSync(candidate)) continue
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate
  }
  assert.fail(`cargo was not found: ${INSTALL_HINT}`)
}

/** Runs cargo in the crate workspace; resolves with the exit code and the combined output. */
function cargo(bin: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: CRATES, env: { ...process.env, CARGO_TERM_COLOR: 'never' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output }))
  })
}

function tail(text: string, lines = 80): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n')
}

describe('Rust SDK (packages/sdk-rust)', () => {
  it('passes cargo test --locked', { timeout: TIMEOUT_MS }, async () => {
    const { code, output } = await cargo(findCargo(), ['test', '--locked'])
    assert.equal(code, 0, `cargo test failed:\n${tail(output)}`)
    assert.match(output, /test result: ok\. [1-9]\d* passed/)
  })

  it('is clean under cargo clippy --all-targets -- -D warnings', { timeout: TIMEOUT_MS }, async () => {
    const { code, output } = await cargo(findCargo(), ['clippy', '--all-targets', '--locked', '--', '-D', 'warnings'])
    assert.equal(code, 0, `clippy found problems:\n${tail(output)}`)
  })
})
