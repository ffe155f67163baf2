import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { exitCodeFor, toComposeCliError } from './errors.ts'
import { ComposeError } from './errors.ts'
import { generateNamespace } from './names.ts'
import { formatDaemonBanner } from './serve.ts'

describe('generateNamespace', () => {
  it('gives two lower-case words joined by a dash', () => {
    for (let i = 0; i < 50; i++) assert.match(generateNamespace(), /^[a-z]+-[a-z]+$/)
    assert.equal(generateNamespace(() => 2), 'brave-bison')
  })
})

describe('formatDaemonBanner', () => {
  it('prints the three lines of cli.md §4.7', () => {
    assert.equal(
      formatDaemonBanner('brave-otter', 'ws://127.0.0.1:49134'),
      'compose daemon serving namespace brave-otter on ws://127.0.0.1:49134\n' +
        'Add a worker:  svc trigger -n brave-otter compose::add worker=./workers/api\n' +
        'Start:         svc trigger -n brave-otter compose::up\n',
    )
  })
})

describe('compose exit codes', () => {
  it('maps file and argument problems to 2 and the rest to 1 (cli.md §1.1)', () => {
    assert.equal(exitCodeFor('INVALID_COMPOSE_FILE'), 2)
    assert.equal(exitCodeFor('NO_COMPOSE_FILE'), 2)
    assert.equal(exitCodeFor('WRONG_NAMESPACE'), 2)
    assert.equal(exitCodeFor('DAEMON_ALREADY_SERVING'), 1)
    assert.equal(exitCodeFor('PROJECT_DID_NOT_START'), 1)
    const cli = toComposeCliError(new ComposeError('INVALID_COMPOSE_FILE', 'worker-compose.yaml:1:1: x'))
    assert.equal(cli.exitCode, 2)
    assert.equal(cli.code, 'INVALID_COMPOSE_FILE')
    assert.equal(cli.message, 'worker-compose.yaml:1:1: x')
  })
})
