import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { applyPorts, pickFreePorts, portFree } from './ports.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-ports-'))
after(() => rmSync(dir, { recursive: true, force: true }))

describe('svc project init --ports auto (issue 11)', () => {
  it('writes the ports in place, keeping comments and placeholder variables, adding svc-stream', () => {
    const file = join(dir, 'config.yaml')
    writeFileSync(
      file,
      '# top comment\nworkers:\n  - name: svc-worker-manager\n    config:\n      host: 127.0.0.1 # loopback\n      port: 49134\n  - name: http\n    config:\n      port: ${HTTP_PORT:3111}\n  - name: svc-cron\n    enabled: false\n',
    )
    applyPorts(file, { engine: 49200, http: 3771, stream: 3772 })
    const text = readFileSync(file, 'utf8')
    assert.match(text, /^# top comment\n/)
    assert.match(text, /host: 127\.0\.0\.1 # loopback\n {6}port: 49200\n/)
    assert.match(text, /- name: http\n {4}config:\n {6}port: \$\{HTTP_PORT:3771\}\n/)
    assert.match(text, /- name: svc-stream\n {4}config:\n {6}port: 3772\n$/)
  })

  it('picks ports other than the defaults that are free, skipping a slot with a bound port', async () => {
    const server = createServer()
    // Slot 1 with random() = 0: hold its engine port, so slot 2 is chosen.
    const held = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false))
      server.listen(49135, '127.0.0.1', () => resolve(true))
    })
    try {
      const ports = await pickFreePorts(() => 0)
      if (held) assert.ok(ports.engine >= 49136, `slot 1 is skipped: ${JSON.stringify(ports)}`)
      assert.deepEqual([ports.http - 3111, ports.stream - 3112], [10 * (ports.engine - 49134), 10 * (ports.engine - 49134)])
      assert.notEqual(ports.engine, 49134)
      assert.ok(await portFree(ports.http))
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
