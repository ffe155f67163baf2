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
import { describe, it } from 'node:test'
import { cargo } from '../../../test/support/rust.ts'

/** A clean build and every suite take a few minutes on the shared 2-core machine. */
const TIMEOUT_MS = 20 * 60 * 1000

function tail(text: string, lines = 80): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n')
}

describe('Rust SDK (packages/sdk-rust)', () => {
  it('passes cargo test --locked', { timeout: TIMEOUT_MS }, async () => {
    const { code, output } = await cargo(['test', '--locked'])
    assert.equal(code, 0, `cargo test failed:\n${tail(output)}`)
    assert.match(output, /test result: ok\. [1-9]\d* passed/)
  })

  it('is clean under cargo clippy --all-targets -- -D warnings', { timeout: TIMEOUT_MS }, async () => {
    const { code, output } = await cargo(['clippy', '--all-targets', '--locked', '--', '-D', 'warnings'])
    assert.equal(code, 0, `clippy found problems:\n${tail(output)}`)
  })
})
