import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError } from '../../runtime/config/errors.ts'
import { withDefaultCommand } from './argv.ts'
import { formatBanner, readyEvent } from './banner.ts'
import { CliError, debugEnabled, ExitCode, formatHumanError, formatJsonError, toCliError } from './errors.ts'

describe('default command (cli.md §1)', () => {
  it('runs start for no arguments or flags only', () => {
    assert.deepEqual(withDefaultCommand([]), ['start'])
    assert.deepEqual(withDefaultCommand(['--port', '0', '--json']), ['start', '--port', '0', '--json'])
    assert.deepEqual(withDefaultCommand(['-c', 'x.yaml']), ['start', '-c', 'x.yaml'])
  })

  it('leaves commands, --version and --help alone', () => {
    assert.deepEqual(withDefaultCommand(['trigger', 'a']), ['trigger', 'a'])
    assert.deepEqual(withDefaultCommand(['--version']), ['--version'])
    assert.deepEqual(withDefaultCommand(['--help']), ['--help'])
    assert.deepEqual(withDefaultCommand(['-h']), ['-h'])
  })
})

describe('CLI errors (cli.md §1, §1.1)', () => {
  it('prints Error, details and Hint lines in human mode', () => {
    const err = new CliError({ code: 'function_not_found', message: 'function_not_found: Function x not found', exitCode: ExitCode.Failure, hint: 'retry', details: 'at a\nat b' })
    assert.equal(formatHumanError(err), 'Error: function_not_found: Function x not found\nat a\nat b\nHint: retry\n')
  })

  it('adds the stack only in debug mode', () => {
    const err = new CliError({ code: 'X', message: 'boom', exitCode: ExitCode.Failure })
    assert.doesNotMatch(formatHumanError(err, false), /at /)
    assert.match(formatHumanError(err, true), /^Error: boom\nCliError: boom\n\s+at /)
    assert.equal(debugEnabled({ DEBUG: '1' }), true)
    assert.equal(debugEnabled({ DEBUG: '' }), false)
    assert.equal(debugEnabled({ DEBUG: '0' }), false)
    assert.equal(debugEnabled({}), false)
  })

  it('prints {"error":{"code","message"}} in JSON mode', () => {
    const err = new CliError({ code: 'INVALID_ARGUMENT', message: 'bad', exitCode: ExitCode.Usage })
    assert.deepEqual(JSON.parse(formatJsonError(err)), { error: { code: 'INVALID_ARGUMENT', message: 'bad' } })
    assert.deepEqual(JSON.parse(formatJsonError(err, { ok: false })), { ok: false, error: { code: 'INVALID_ARGUMENT', message: 'bad' } })
  })

  it('maps config errors to exit 2 and other errors to exit 1', () => {
    const config = toCliError(new ConfigError({ file: 'config.yaml', line: 1, column: 2, problem: 'nope' }))
    assert.equal(config.exitCode, 2)
    assert.equal(config.code, 'INVALID_CONFIG')
    assert.equal(config.message, 'config.yaml:1:2: nope')
    assert.equal(toCliError(ConfigError.notFound('x.yaml')).message, 'Config file x.yaml not found')
    const other = toCliError(Object.assign(new Error('disk full'), { code: 'ENOSPC' }))
    assert.deepEqual([other.exitCode, other.code, other.message], [1, 'ENOSPC', 'disk full'])
    const parse = toCliError(Object.assign(new Error('Nonexistent flag: --x\nSee more help with --help'), { oclif: { exit: 2 } }))
    assert.deepEqual([parse.exitCode, parse.message], [2, 'Nonexistent flag: --x'])
  })
})

describe('ready banner (cli.md §3)', () => {
  const info = {
    version: '0.1.0',
    readyMs: 420,
    engineUrls: ['ws://127.0.0.1:49134', 'ws://127.0.0.1:49135'],
    httpUrls: ['http://127.0.0.1:3111'],
    streamUrls: [],
    workers: [
      { name: 'math-worker', state: 'declared' },
      { name: 'caller-worker', state: 'disabled' },
    ],
    configFile: '/p/config.yaml',
    dataDir: '/p/.svc/data',
  }

  it('lists where each listener is', () => {
    assert.equal(
      formatBanner(info),
      'svc 0.1.0 ready in 420 ms\n' +
        '  engine    ws://127.0.0.1:49134\n' +
        '  engine    ws://127.0.0.1:49135\n' +
        '  http      http://127.0.0.1:3111\n' +
        '  workers   math-worker declared · caller-worker disabled\n',
    )
  })

  it('has an engine_ready twin with the first URL of each kind', () => {
    const event = readyEvent(info)
    assert.equal(event.event, 'engine_ready')
    assert.equal(event.engine_url, 'ws://127.0.0.1:49134')
    assert.equal(event.http_url, 'http://127.0.0.1:3111')
    assert.equal(event.stream_url, null)
    assert.deepEqual(event.engine_urls, info.engineUrls)
  })
})
