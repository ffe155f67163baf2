import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getCACertificates, setDefaultCACertificates } from 'node:tls'
import { after, before, describe, it } from 'node:test'
import { SvcError } from 'svc-protocol/errors'
import { invokeOverHttp, isPrivateAddress, type HostResolver, type ResolvedAddress } from './http-invoke.ts'
import type { HttpFunctionsPolicy } from './types.ts'

interface Received {
  method: string
  path: string
  headers: IncomingMessage['headers']
  body: string
}

/** A real HTTP server on `host` that records every request and connection and answers with `handler`. */
class TestServer {
  readonly requests: Received[] = []
  connections = 0
  handler: (req: Received, res: ServerResponse) => void = (_req, res) => res.end('{"ok":true}')
  readonly server: Server

  constructor(server?: Server) {
    this.server = server ?? createServer()
    this.server.on('connection', () => this.connections++)
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }
        this.requests.push(received)
        this.handler(received, res)
      })
    })
  }

  async listen(host = '127.0.0.1', port = 0): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(port, host, () => resolve())
    })
    return (this.server.address() as AddressInfo).port
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}

/** The local test server is plain http on 127.0.0.1: allowlisted, it is exempt from both rules (§12.4). */
const LOCAL: HttpFunctionsPolicy = { url_allowlist: ['127.0.0.1'], block_private_ips: true, require_https: true }
const STRICT: HttpFunctionsPolicy = { url_allowlist: [], block_private_ips: true, require_https: false }
const ctx = { function_id: 'fn::remote' }

/** A resolver that answers `answers[i]` on call i (the last answer repeats) and counts its calls. */
function scriptedResolver(...answers: (ResolvedAddress[] | Error)[]): HostResolver & { calls: string[] } {
  const calls: string[] = []
  const resolve = async (host: string): Promise<ResolvedAddress[]> => {
    const answer = answers[Math.min(calls.length, answers.length - 1)]!
    calls.push(host)
    if (answer instanceof Error) throw answer
    return answer
  }
  return Object.assign(resolve, { calls })
}

const v4 = (address: string): ResolvedAddress[] => [{ address, family: 4 }]

async function rejection(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise
  } catch (err) {
    assert.ok(err instanceof SvcError, `expected an SvcError, got ${String(err)}`)
    return err
  }
  assert.fail('expected the call to fail')
}

describe('invokeOverHttp (protocol.md §6.8)', () => {
  const server = new TestServer()
  let base = ''
  before(async () => {
    base = `http://127.0.0.1:${await server.listen()}`
  })
  after(() => server.close())

  it('POSTs the JSON text of data with the §6.8 headers and returns the JSON result', async () => {
    server.handler = (_req, res) => res.end('{"sum":3}')
    const result = await invokeOverHttp(
      { url: `${base}/add?x=1`, headers: { 'X-Extra': 'yes' } },
      'math::add',
      { a: 1, b: 2 },
      { function_id: 'math::add', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', baggage: 'svc.function.id=caller%3A%3Afn,k=v' },
      LOCAL,
    )
    assert.deepEqual(result, { sum: 3 })
    const req = server.requests.at(-1)!
    assert.equal(req.method, 'POST')
    assert.equal(req.path, '/add?x=1')
    assert.equal(req.body, '{"a":1,"b":2}')
    assert.equal(req.headers['content-type'], 'application/json')
    assert.equal(req.headers['x-svc-function-id'], 'math::add')
    assert.match(String(req.headers['x-svc-invocation-id']), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    assert.ok(Math.abs(Number(req.headers['x-svc-timestamp']) - Date.now() / 1000) < 5)
    assert.equal(req.headers['x-svc-caller-function-id'], 'caller::fn')
    assert.equal(req.headers.traceparent, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')
    assert.equal(req.headers.baggage, 'svc.function.id=caller%3A%3Afn,k=v')
    assert.equal(req.headers['x-extra'], 'yes')
    assert.equal(req.headers['x-svc-signature'], undefined)
  })

  it('GET sends no body', async () => {
    server.handler = (_req, res) => res.end('[1]')
    assert.deepEqual(await invokeOverHttp({ url: `${base}/get`, method: 'GET' }, 'f::get', { a: 1 }, ctx, LOCAL), [1])
    const req = server.requests.at(-1)!
    assert.equal(req.method, 'GET')
    assert.equal(req.body, '')
  })

  it('2xx with an empty body is no result; non-JSON is invalid_response', async () => {
    server.handler = (_req, res) => res.writeHead(204).end()
    assert.equal(await invokeOverHttp({ url: `${base}/empty` }, 'f::e', {}, ctx, LOCAL), undefined)
    server.handler = (_req, res) => res.end('not json')
    const err = await rejection(invokeOverHttp({ url: `${base}/text` }, 'f::t', {}, ctx, LOCAL))
    assert.equal(err.code, 'invalid_response')
    assert.equal(err.message, `Response of ${base}/text is not JSON`)
  })

  it('non-2xx: the error body code and message, else http_error', async () => {
    server.handler = (_req, res) => res.writeHead(422).end('{"error":{"code":"out_of_stock","message":"no more"}}')
    let err = await rejection(invokeOverHttp({ url: `${base}/err` }, 'f::err', {}, ctx, LOCAL))
    assert.deepEqual([err.code, err.message], ['out_of_stock', 'no more'])
    server.handler = (_req, res) => res.writeHead(500).end('boom')
    err = await rejection(invokeOverHttp({ url: `${base}/500` }, 'f::500', {}, ctx, LOCAL))
    assert.deepEqual([err.code, err.message], ['http_error', 'HTTP 500 Internal Server Error'])
    server.handler = (_req, res) => res.writeHead(503).end('{"error":{"code":1}}')
    err = await rejection(invokeOverHttp({ url: `${base}/503` }, 'f::503', {}, ctx, LOCAL))
    assert.deepEqual([err.code, err.message], ['http_error', 'HTTP 503 Service Unavailable'])
  })

  it('does not follow redirects', async () => {
    server.handler = (req, res) => (req.path === '/moved' ? res.writeHead(302, { location: '/target' }).end() : res.end('{"followed":true}'))
    const before = server.requests.length
    const err = await rejection(invokeOverHttp({ url: `${base}/moved` }, 'f::r', {}, ctx, LOCAL))
    assert.deepEqual([err.code, err.message], ['http_error', 'HTTP 302 Found'])
    assert.deepEqual(server.requests.slice(before).map((r) => r.path), ['/moved'])
  })

  it('hmac signs "<timestamp>.<body>"; bearer and api_key send the secret; an unset variable is secret_not_set', async () => {
    process.env.SVC_TEST_HMAC = 'hmac-secret'
    process.env.SVC_TEST_TOKEN = 'tok'
    server.handler = (_req, res) => res.end('{}')
    await invokeOverHttp({ url: `${base}/h`, auth: { type: 'hmac', secret_key: 'SVC_TEST_HMAC' } }, 'f::h', { n: 1 }, ctx, LOCAL)
    let req = server.requests.at(-1)!
    const expected = createHmac('sha256', 'hmac-secret').update(`${String(req.headers['x-svc-timestamp'])}.${req.body}`).digest('hex')
    assert.equal(req.headers['x-svc-signature'], `sha256=${expected}`)

    await invokeOverHttp({ url: `${base}/b`, auth: { type: 'bearer', token_key: 'SVC_TEST_TOKEN' } }, 'f::b', {}, ctx, LOCAL)
    assert.equal(server.requests.at(-1)!.headers.authorization, 'Bearer tok')
    await invokeOverHttp({ url: `${base}/k`, auth: { type: 'api_key', header: 'X-Api-Key', value_key: 'SVC_TEST_TOKEN' } }, 'f::k', {}, ctx, LOCAL)
    req = server.requests.at(-1)!
    assert.equal(req.headers['x-api-key'], 'tok')

    delete process.env.SVC_TEST_UNSET
    const count = server.requests.length
    const err = await rejection(invokeOverHttp({ url: `${base}/u`, auth: { type: 'hmac', secret_key: 'SVC_TEST_UNSET' } }, 'f::u', {}, ctx, LOCAL))
    assert.deepEqual([err.code, err.message], ['secret_not_set', 'Environment variable SVC_TEST_UNSET is not set'])
    assert.equal(server.requests.length, count)
  })

  it('a server that does not answer in timeout_ms is http_request_failed', async () => {
    server.handler = () => undefined
    const started = Date.now()
    const err = await rejection(invokeOverHttp({ url: `${base}/slow`, timeout_ms: 200 }, 'f::slow', {}, ctx, LOCAL))
    assert.deepEqual([err.code, err.message], ['http_request_failed', `HTTP request to ${base}/slow failed: timed out after 200ms`])
    assert.ok(Date.now() - started < 2000)
  })

  it('a refused connection is http_request_failed', async () => {
    const closed = new TestServer()
    const port = await closed.listen()
    await closed.close()
    const err = await rejection(invokeOverHttp({ url: `http://127.0.0.1:${port}/` }, 'f::gone', {}, ctx, LOCAL))
    assert.equal(err.code, 'http_request_failed')
    assert.match(err.message, new RegExp(`^HTTP request to http://127\\.0\\.0\\.1:${port}/ failed: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`))
  })
})

describe('http_functions policy (protocol.md §12.4)', () => {
  const server = new TestServer()
  let port = 0
  before(async () => {
    port = await server.listen()
  })
  after(() => server.close())

  it('require_https refuses http: unless the host is allowlisted', async () => {
    const policy: HttpFunctionsPolicy = { url_allowlist: [], block_private_ips: false, require_https: true }
    const err = await rejection(invokeOverHttp({ url: `http://127.0.0.1:${port}/` }, 'f::x', {}, ctx, policy))
    assert.deepEqual([err.code, err.message], ['url_validation_failed', `URL http://127.0.0.1:${port}/ is not allowed: https is required (http_functions.require_https)`])
    assert.equal(server.connections, 0)
  })

  it('an invalid URL, another scheme or credentials in the URL are url_validation_failed', async () => {
    for (const [url, rule] of [
      ['not a url', 'not a valid URL'],
      ['file:///etc/passwd', 'only http and https URLs can be invoked'],
      [`http://user:pw@127.0.0.1:${port}/`, 'credentials in the URL are not supported; use auth'],
    ] as const) {
      const err = await rejection(invokeOverHttp({ url }, 'f::x', {}, ctx, LOCAL))
      assert.deepEqual([err.code, err.message], ['url_validation_failed', `URL ${url} is not allowed: ${rule}`])
    }
    assert.equal(server.connections, 0)
  })

  it('a lookup that fails is url_validation_failed naming the DNS error (fails closed)', async () => {
    const dnsError = Object.assign(new Error('getaddrinfo ENOTFOUND fn.svc.test'), { code: 'ENOTFOUND' })
    const resolve = scriptedResolver(dnsError)
    const err = await rejection(invokeOverHttp({ url: `http://fn.svc.test:${port}/` }, 'f::x', {}, ctx, STRICT, { resolve }))
    assert.equal(err.code, 'url_validation_failed')
    assert.equal(
      err.message,
      `URL http://fn.svc.test:${port}/ is not allowed: cannot resolve fn.svc.test (getaddrinfo ENOTFOUND fn.svc.test) (http_functions.block_private_ips)`,
    )
    assert.deepEqual(resolve.calls, ['fn.svc.test'])
  })

  it('the system resolver: a name that does not exist (RFC 6761 .invalid) is url_validation_failed', async () => {
    const err = await rejection(invokeOverHttp({ url: 'https://no-such-host.invalid/fn' }, 'f::x', {}, ctx))
    assert.equal(err.code, 'url_validation_failed')
    assert.match(err.message, /^URL https:\/\/no-such-host\.invalid\/fn is not allowed: cannot resolve no-such-host\.invalid \(getaddrinfo E[A-Z_]+ no-such-host\.invalid\)/)
  })

  it('a name with no addresses is refused; without block_private_ips a failed lookup is http_request_failed', async () => {
    let err = await rejection(invokeOverHttp({ url: `http://fn.svc.test:${port}/` }, 'f::x', {}, ctx, STRICT, { resolve: scriptedResolver([]) }))
    assert.deepEqual([err.code, err.message], ['url_validation_failed', `URL http://fn.svc.test:${port}/ is not allowed: fn.svc.test resolves to no address (http_functions.block_private_ips)`])
    const open: HttpFunctionsPolicy = { url_allowlist: [], block_private_ips: false, require_https: false }
    const dnsError = Object.assign(new Error('getaddrinfo ENOTFOUND fn.svc.test'), { code: 'ENOTFOUND' })
    err = await rejection(invokeOverHttp({ url: `http://fn.svc.test:${port}/` }, 'f::x', {}, ctx, open, { resolve: scriptedResolver(dnsError) }))
    assert.deepEqual([err.code, err.message], ['http_request_failed', `HTTP request to http://fn.svc.test:${port}/ failed: getaddrinfo ENOTFOUND fn.svc.test`])
  })

  it('a name that resolves to a private address is refused, also when only one of its addresses is', async () => {
    for (const answer of [
      v4('127.0.0.1'),
      [{ address: '93.184.215.14', family: 4 }, { address: '10.1.2.3', family: 4 }],
      [{ address: '::ffff:7f00:1', family: 6 }],
    ] satisfies ResolvedAddress[][]) {
      const err = await rejection(invokeOverHttp({ url: `http://fn.svc.test:${port}/` }, 'f::x', {}, ctx, STRICT, { resolve: scriptedResolver(answer) }))
      assert.deepEqual([err.code, err.message], ['url_validation_failed', `URL http://fn.svc.test:${port}/ is not allowed: private address (http_functions.block_private_ips)`])
    }
    assert.equal(server.connections, 0)
  })

  it('a private IP literal is refused without a lookup', async () => {
    const resolve = scriptedResolver(v4('93.184.215.14'))
    for (const url of [`http://127.0.0.1:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`, `http://[::1]:${port}/`, `http://0.0.0.0:${port}/`]) {
      const err = await rejection(invokeOverHttp({ url }, 'f::x', {}, ctx, STRICT, { resolve }))
      assert.equal(err.code, 'url_validation_failed', url)
    }
    assert.deepEqual(resolve.calls, [])
    assert.equal(server.connections, 0)
  })

  it('DNS rebinding: the request goes to the checked address, never to what a second lookup says', async () => {
    // First answer: a public address (TEST-NET-3, nothing listens there). Any later lookup: this
    // machine's loopback, where the server listens. Connecting by name again would reach it.
    const resolve = scriptedResolver(v4('203.0.113.7'), v4('127.0.0.1'))
    const err = await rejection(invokeOverHttp({ url: `http://rebind.svc.test:${port}/`, timeout_ms: 300 }, 'f::x', {}, ctx, STRICT, { resolve }))
    assert.equal(err.code, 'http_request_failed')
    // Depending on the network, the attempt on 203.0.113.7 is refused at once (the error names the
    // address) or hangs until the timeout; either way nothing reached the rebinding target.
    assert.match(err.message, new RegExp(`failed: (connect E[A-Z]+ 203\\.0\\.113\\.7:${port}|timed out after 300ms)$`))
    assert.deepEqual(resolve.calls, ['rebind.svc.test'])
    assert.equal(server.connections, 0)
  })

  it('the connection uses the first lookup: a second answer pointing elsewhere is never used', async () => {
    // Two servers on the same port: 127.0.0.1 (first answer) and 127.0.0.2 (what a new lookup would say).
    const first = new TestServer()
    const other = new TestServer()
    const samePort = await first.listen('127.0.0.1')
    await other.listen('127.0.0.2', samePort)
    first.handler = (_req, res) => res.end('"first"')
    other.handler = (_req, res) => res.end('"other"')
    try {
      const resolve = scriptedResolver(v4('127.0.0.1'), v4('127.0.0.2'))
      const policy: HttpFunctionsPolicy = { url_allowlist: ['*.svc.test'], block_private_ips: true, require_https: true }
      assert.equal(await invokeOverHttp({ url: `http://fn.svc.test:${samePort}/pin` }, 'f::pin', {}, ctx, policy, { resolve }), 'first')
      assert.deepEqual(resolve.calls, ['fn.svc.test'])
      // Each call resolves once, afresh: the next call goes where the next answer says.
      assert.equal(await invokeOverHttp({ url: `http://fn.svc.test:${samePort}/pin` }, 'f::pin', {}, ctx, policy, { resolve }), 'other')
      assert.deepEqual(resolve.calls, ['fn.svc.test', 'fn.svc.test'])
      assert.equal(first.requests.length, 1)
      assert.equal(other.requests.length, 1)
      assert.equal(first.requests[0]!.headers.host, `fn.svc.test:${samePort}`)
    } finally {
      await first.close()
      await other.close()
    }
  })

  it('allowlisted hosts are exempt from both rules: localhost through the system resolver, and wildcards', async () => {
    server.handler = (_req, res) => res.end('{"ok":1}')
    const policy: HttpFunctionsPolicy = { url_allowlist: ['localhost', '*.svc.test'], block_private_ips: true, require_https: true }
    assert.deepEqual(await invokeOverHttp({ url: `http://localhost:${port}/a` }, 'f::a', {}, ctx, policy), { ok: 1 })
    assert.deepEqual(await invokeOverHttp({ url: `http://deep.fn.svc.test:${port}/b` }, 'f::b', {}, ctx, policy, { resolve: scriptedResolver(v4('127.0.0.1')) }), { ok: 1 })
    const err = await rejection(invokeOverHttp({ url: `http://svc.test.evil:${port}/c` }, 'f::c', {}, ctx, policy, { resolve: scriptedResolver(v4('127.0.0.1')) }))
    assert.equal(err.code, 'url_validation_failed')
    assert.deepEqual(server.requests.map((r) => r.path), ['/a', '/b'])
  })

  it('isPrivateAddress: loopback, private, link-local, unique-local and their IPv4-mapped forms', () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.0.1', '224.0.0.1', '255.255.255.255',
      '::1', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', 'ff02::1', 'not-an-ip']) {
      assert.equal(isPrivateAddress(address), true, address)
    }
    for (const address of ['93.184.215.14', '8.8.8.8', '172.32.0.1', '192.169.0.1', '203.0.113.7', '2606:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(isPrivateAddress(address), false, address)
    }
  })
})

describe('HTTPS to a checked address (protocol.md §6.8)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-http-invoke-'))
  const defaultCAs = getCACertificates('default')
  let cert = ''
  let key = ''
  before(() => {
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=fn.svc.test', '-addext', 'subjectAltName=DNS:fn.svc.test', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { encoding: 'utf8' })
    assert.equal(made.status, 0, `openssl (needed to make a test certificate): ${made.error?.message ?? made.stderr}`)
    cert = readFileSync(join(dir, 'cert.pem'), 'utf8')
    key = readFileSync(join(dir, 'key.pem'), 'utf8')
  })
  after(() => {
    setDefaultCACertificates(defaultCAs)
    rmSync(dir, { recursive: true, force: true })
  })

  it('connects to the pinned address and verifies the certificate against the host name (SNI = host name)', async () => {
    const names: string[] = []
    const tls = new TestServer(createHttpsServer({ cert, key, SNICallback: (name, cb) => { names.push(name); cb(null) } }))
    const port = await tls.listen('127.0.0.1')
    tls.handler = (_req, res) => res.end('{"secure":true}')
    const policy: HttpFunctionsPolicy = { url_allowlist: ['fn.svc.test'], block_private_ips: true, require_https: true }
    try {
      // Untrusted certificate: verification is on, the call fails before any request.
      let err = await rejection(invokeOverHttp({ url: `https://fn.svc.test:${port}/` }, 'f::s', {}, ctx, policy, { resolve: scriptedResolver(v4('127.0.0.1')) }))
      assert.equal(err.code, 'http_request_failed')
      assert.match(err.message, /self-signed certificate/)
      assert.equal(tls.requests.length, 0)

      // Trusted: the certificate names fn.svc.test only (no IP), so it verifies only against the host name.
      setDefaultCACertificates([...defaultCAs, cert])
      assert.deepEqual(await invokeOverHttp({ url: `https://fn.svc.test:${port}/` }, 'f::s', {}, ctx, policy, { resolve: scriptedResolver(v4('127.0.0.1')) }), { secure: true })
      assert.deepEqual(names, ['fn.svc.test', 'fn.svc.test'])

      // The same server reached as another name that resolves to it: the certificate does not match.
      const other: HttpFunctionsPolicy = { url_allowlist: ['other.svc.test'], block_private_ips: true, require_https: true }
      err = await rejection(invokeOverHttp({ url: `https://other.svc.test:${port}/` }, 'f::s', {}, ctx, other, { resolve: scriptedResolver(v4('127.0.0.1')) }))
      assert.equal(err.code, 'http_request_failed')
      assert.match(err.message, /Hostname\/IP does not match certificate's altnames/)
      assert.equal(tls.requests.length, 1)
    } finally {
      await tls.close()
    }
  })
})
