/**
 * Access control over real sockets (protocol.md §13, §3.1, §5.11, §8.1, §11): the auth function,
 * expose rules and their precedence, the session prefix, the middleware, the registration hooks
 * and filtered listings. One engine, three listeners: a trusted one without rbac (where the
 * gateway functions live), a public one with an auth function and hooks, and one with only a
 * middleware and the AuthResult defaults.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import WebSocket from 'ws'
import type { Logger } from '../runtime/engine/types.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { RawWorker, type Frame } from './support/raw-worker.ts'
import { waitFor } from './support/wait.ts'

let t: TestEngine
let trusted: RawWorker
let analytics: RawWorker
let publicUrl: string
let middlewareUrl: string
const open: RawWorker[] = []
const authInputs: any[] = []
const middlewareInputs: any[] = []
const hookInputs: Record<string, any[]> = { function: [], trigger: [], triggerType: [] }

before(async () => {
  t = await startTestEngine({
    builtins: [],
    config: { registration_namespace_grace_ms: 30 },
    extraListeners: [
      {
        rbac: {
          auth_function_id: 'gw::auth',
          on_function_registration_function_id: 'gw::on-function',
          on_trigger_registration_function_id: 'gw::on-trigger',
          on_trigger_type_registration_function_id: 'gw::on-trigger-type',
          expose_functions: [
            'api::ping',
            'match("api::*")',
            "match('pub::*::read')",
            { match: 'reports::*', namespace: 'analytics' },
            { metadata: { public: true } },
            { metadata: { tier: 'match("gold*")' } },
            'match("tenant1::*")',
            'engine::functions::list',
            'engine::functions::info',
          ],
        },
      },
      { middleware_function_id: 'gw::middleware', rbac: { expose_functions: ['match("api::*")', 'engine::functions::list'] } },
    ],
  })
  publicUrl = t.urls[1]!
  middlewareUrl = t.urls[2]!
  trusted = await RawWorker.connect(t.url, { announce: { name: 'gateway' } })
  open.push(trusted)
  trusted.serve('gw::auth', (input) => {
    authInputs.push(input)
    const role = input.headers['x-role']
    if (role === 'refuse') throw Object.assign(new Error('invalid token'), { code: 'DENIED' })
    if (role === 'none') return undefined
    if (role === 'bad') return { allowed_functions: 'private::allowed' }
    if (role === 'prefix') return { function_registration_prefix: 'tenant1', allowed_trigger_types: ['custom'] }
    if (role === 'ns') return { namespaces: { analytics: ['reports::*'] } }
    if (role === 'nofn') return { allow_function_registration: false }
    return {
      allowed_functions: ['private::allowed'],
      forbidden_functions: ['api::secret'],
      allow_trigger_type_registration: true,
      allowed_trigger_types: ['http', 'custom', 'blocked'],
      context: { user: 'ada' },
    }
  })
  trusted.serve('gw::on-function', (input) => {
    hookInputs.function!.push(input)
    if (input.function_id.startsWith('deny::')) throw new Error('no deny')
    if (input.function_id === 'rename::x') return { function_id: 'renamed::x', description: 'mapped' }
    if (input.function_id.startsWith('null::')) return null
    return {}
  })
  trusted.serve('gw::on-trigger', (input) => {
    hookInputs.trigger!.push(input)
    if (input.trigger_type === 'blocked') throw new Error('blocked type')
    if (input.function_id === 'map::me') return { function_id: 'api::mapped', config: { mapped: true } }
    return {}
  })
  trusted.serve('gw::on-trigger-type', (input) => {
    hookInputs.triggerType!.push(input)
    if (input.trigger_type_id === 'nope') throw new Error('not this one')
    if (input.trigger_type_id === 'rename-type') return { trigger_type_id: 'renamed-type', description: 'mapped' }
    return {}
  })
  trusted.serve('gw::middleware', async (input) => {
    middlewareInputs.push(input)
    if (input.payload?.mode === 'reject') throw Object.assign(new Error('not through here'), { code: 'MW_DENIED' })
    const payload = input.payload?.mode === 'rewrite' ? { rewritten: true } : input.payload
    const answer = await trusted.call(input.function_id, payload, { namespace: input.namespace })
    if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code })
    return answer.result
  })
  for (const id of ['api::ping', 'api::echo', 'api::secret', 'api::mapped', 'private::allowed', 'private::hidden', 'pub::x::read', 'pub::x::write']) {
    trusted.serve(id, (data) => ({ from: id, data }))
  }
  trusted.serve('meta::public', () => 'public', { metadata: { public: true } })
  trusted.serve('meta::gold', () => 'gold', { metadata: { tier: 'gold-plus' } })
  trusted.serve('meta::silver', () => 'silver', { metadata: { tier: 'silver' } })
  analytics = await RawWorker.connect(t.url, { announce: { name: 'analytics', namespace: 'analytics' } })
  open.push(analytics)
  analytics.serve('reports::daily', () => 'daily report')
  analytics.serve('secret::numbers', () => 42)
  await waitFor(async () => (await trusted.call('engine::functions::list', {})).result.functions.some((f: any) => f.function_id === 'reports::daily'), 'the condition')
})

after(async () => {
  await Promise.all(open.map((w) => w.close()))
  await t.stop()
})

/** A client on the public listener, authenticated with `x-role: role`. */
async function client(role = 'user', url = publicUrl, announce?: Record<string, unknown>): Promise<RawWorker> {
  const w = await RawWorker.connect(url, { headers: { 'x-role': role }, ...(announce ? { announce } : {}) })
  open.push(w)
  return w
}

/** Connects and collects what a refused client sees: its frames and the close code. */
async function refused(role: string, path = ''): Promise<{ frames: Frame[]; code: number; reason: string }> {
  const socket = new WebSocket(publicUrl + path, { headers: { 'x-role': role } })
  const frames: Frame[] = []
  socket.on('message', (data) => frames.push(JSON.parse(data.toString())))
  return new Promise((resolve) => socket.once('close', (code, reason) => resolve({ frames, code, reason: reason.toString() })))
}

describe('auth function (§3.1, §13.2)', () => {
  it('receives the upgrade headers (lower-cased), the decoded query parameters and the client address', async () => {
    const before = authInputs.length
    const w = await RawWorker.connect(`${publicUrl}/?token=a%20b&token=c&flag`, { headers: { 'X-Role': 'user', 'X-Trace': 'one' } })
    open.push(w)
    const input = authInputs[before]
    assert.equal(input.headers['x-role'], 'user')
    assert.equal(input.headers['x-trace'], 'one')
    assert.deepEqual(input.query_params, { token: ['a b', 'c'], flag: [''] })
    assert.match(input.ip_address, /127\.0\.0\.1/)
    assert.deepEqual(Object.keys(input).sort(), ['headers', 'ip_address', 'query_params'])
  })

  it('a refusal sends one AUTH_ERROR frame with the function message, closes with 1008 and registers nothing', async () => {
    const { frames, code } = await refused('refuse')
    assert.equal(code, 1008)
    assert.deepEqual(frames, [{ type: 'error', error: { code: 'AUTH_ERROR', message: 'invalid token' } }])
    const workers = (await trusted.call('engine::workers::list', {})).result.workers
    assert.equal(workers.filter((w: any) => w.ip_address !== null).length, workers.length)
  })

  it('no result and an ill-typed result refuse with the messages of §7.2', async () => {
    assert.deepEqual((await refused('none')).frames, [{ type: 'error', error: { code: 'AUTH_ERROR', message: 'auth function returned no result' } }])
    assert.deepEqual((await refused('bad')).frames, [
      { type: 'error', error: { code: 'AUTH_ERROR', message: 'invalid auth result: allowed_functions must be an array of strings' } },
    ])
  })

  it('authenticates /otel the same way', async () => {
    const { frames, code } = await refused('refuse', '/otel')
    assert.equal(code, 1008)
    assert.equal(frames[0]?.error?.code, 'AUTH_ERROR')
  })

  it('frames sent before the auth result are handled after it, in order', async () => {
    const socket = new WebSocket(publicUrl, { headers: { 'x-role': 'user' } })
    const frames: Frame[] = []
    socket.on('message', (data) => frames.push(JSON.parse(data.toString())))
    await new Promise((resolve) => socket.once('open', resolve))
    socket.send(JSON.stringify({ type: 'invokefunction', invocation_id: 'early', function_id: 'api::ping', data: 1 }))
    await waitFor(() => frames.some((f) => f.invocation_id === 'early'), "frames.some((f) => f.invocation_id === 'early')")
    assert.equal(frames[0]!.type, 'workerregistered')
    assert.deepEqual(frames.find((f) => f.invocation_id === 'early')!.result, { from: 'api::ping', data: 1 })
    socket.close()
  })
})

describe('access check (§13.3)', () => {
  it('allows each kind of expose rule and denies the rest with FORBIDDEN', async () => {
    const w = await client()
    const allowed = ['api::ping', 'api::echo', 'pub::x::read', 'meta::public', 'meta::gold', 'private::allowed']
    for (const id of allowed) assert.equal((await w.call(id, {})).error, undefined, id)
    for (const id of ['pub::x::write', 'meta::silver', 'private::hidden']) {
      assert.deepEqual((await w.call(id, {})).error, { code: 'FORBIDDEN', message: `function '${id}' not allowed (add to rbac.expose_functions)` })
    }
    assert.equal((await w.call('reports::daily', {}, { namespace: 'analytics' })).result, 'daily report')
    assert.deepEqual((await w.call('secret::numbers', {}, { namespace: 'analytics' })).error, {
      code: 'FORBIDDEN',
      message: "function 'secret::numbers' not allowed in namespace 'analytics'",
    })
  })

  it('forbidden_functions wins over an expose rule', async () => {
    const w = await client()
    assert.deepEqual((await w.call('api::secret', {})).error, {
      code: 'FORBIDDEN',
      message: "function 'api::secret' not allowed (remove from forbidden_functions)",
    })
  })

  it('namespaces grants allow patterns in a namespace and restrict the announce', async () => {
    const w = await client('ns')
    assert.equal((await w.call('secret::numbers', {}, { namespace: 'analytics' })).error?.code, 'FORBIDDEN')
    assert.equal((await w.call('reports::daily', {}, { namespace: 'analytics' })).result, 'daily report')
    const refusedAnnounce = await w.call('engine::workers::register', { name: 'x', namespace: 'elsewhere' })
    assert.deepEqual(refusedAnnounce.error, { code: 'FORBIDDEN', message: "namespace 'elsewhere' not allowed for this session (permitted: default, analytics)" })
    assert.equal((await w.call('engine::workers::register', { name: 'x', namespace: 'analytics' })).error, undefined)
  })

  it('the infrastructure set is always allowed; a denied void call is silent', async () => {
    const w = await client()
    assert.deepEqual((await w.call('engine::workers::register', { name: 'infra' })).result, { success: true })
    w.send({ type: 'invokefunction', function_id: 'private::hidden', data: {}, action: { type: 'void' } })
    assert.equal(await w.silent((f) => f.type === 'invocationresult'), true)
  })

  it('a permissive listener is unchanged', async () => {
    assert.deepEqual((await trusted.call('private::hidden', 7)).result, { from: 'private::hidden', data: 7 })
    const all = (await trusted.call('engine::functions::list', {})).result.functions.map((f: any) => f.function_id)
    for (const id of ['api::secret', 'private::hidden', 'meta::silver']) assert.ok(all.includes(id), id)
  })
})

describe('listings (§11)', () => {
  it('engine::functions::list shows only what the session may invoke', async () => {
    const w = await client()
    const ids = (await w.call('engine::functions::list', {})).result.functions.map((f: any) => f.function_id)
    for (const id of ['api::ping', 'api::echo', 'pub::x::read', 'meta::public', 'meta::gold', 'private::allowed']) assert.ok(ids.includes(id), id)
    for (const id of ['api::secret', 'private::hidden', 'pub::x::write', 'meta::silver', 'gw::auth', 'secret::numbers']) assert.ok(!ids.includes(id), id)
  })

  it('engine::functions::info answers FORBIDDEN for a function the session may not see', async () => {
    const w = await client()
    assert.deepEqual((await w.call('engine::functions::info', { function_id: 'private::hidden' })).error, {
      code: 'FORBIDDEN',
      message: "Function 'private::hidden' is not visible to this session.",
    })
    const batch = (await w.call('engine::functions::info', { function_ids: ['api::ping', 'private::hidden', 'no::such'] })).result.functions
    assert.equal(batch[0].function_id, 'api::ping')
    assert.deepEqual(batch.slice(1), [
      { function_id: 'private::hidden', error: 'forbidden' },
      { function_id: 'no::such', error: 'not_found' },
    ])
  })
})

describe('registration gates, prefix and hooks (§13.2, §13.5)', () => {
  it('the function hook sees the id as sent, maps it, or denies it', async () => {
    const w = await client()
    w.serve('rename::x', () => 'renamed answer')
    w.send({ type: 'registerfunction', id: 'deny::x' })
    assert.deepEqual(await w.next((f) => f.type === 'registrationrejected' && f.function_id === 'deny::x'), {
      type: 'registrationrejected',
      code: 'FUNCTION_NAMESPACE_CONFLICT',
      reason: 'hook_denied',
      message: 'registration denied by gw::on-function: no deny',
      namespace: 'default',
      function_id: 'deny::x',
      owner_worker_id: '',
    })
    w.send({ type: 'registerfunction', id: 'null::x' })
    const nullDenied = await w.next((f) => f.type === 'registrationrejected' && f.function_id === 'null::x')
    assert.equal(nullDenied.message, 'registration denied by gw::on-function: the hook returned no result')
    await waitFor(async () => (await trusted.call('engine::functions::info', { function_id: 'renamed::x' })).result?.description === 'mapped', 'the condition')
    // Frames to the worker keep the id it sent (§5.8).
    assert.equal((await trusted.call('renamed::x', {})).result, 'renamed answer')
    const input = hookInputs.function!.find((i) => i.function_id === 'rename::x')
    assert.deepEqual(input, { function_id: 'rename::x', description: null, metadata: null, namespace: 'default', context: { user: 'ada' } })
  })

  it('a session prefix is applied to stored ids and trigger targets and stripped from calls to the worker', async () => {
    const w = await client('prefix')
    const seen: Frame[] = []
    w.serve('fn', (_data, frame) => {
      seen.push(frame)
      return 'prefixed answer'
    })
    await waitFor(async () => (await trusted.call('tenant1::fn', {})).result === 'prefixed answer', "(await trusted.call('tenant1::fn', {})).result === 'prefixed answer'")
    assert.equal(seen[0]!.function_id, 'fn')
    w.send({ type: 'registertrigger', id: 'pt-1', trigger_type: 'custom', function_id: 'fn', config: {} })
    await waitFor(async () => {
      const list = (await trusted.call('engine::registered-triggers::list', {})).result.registered_triggers
      return list.some((b: any) => b.id === 'pt-1' && b.function_id === 'tenant1::fn')
    }, 'the condition')
    w.send({ type: 'registertriggertype', id: 'mine' })
    const rejected = await w.next((f) => f.type === 'registrationrejected')
    assert.equal(rejected.reason, 'forbidden')
    assert.equal(rejected.message, 'trigger type registration is not allowed for this session')
  })

  it('allow_function_registration: false refuses every function', async () => {
    const w = await client('nofn')
    w.send({ type: 'registerfunction', id: 'any::fn' })
    const rejected = await w.next((f) => f.type === 'registrationrejected')
    assert.equal(rejected.reason, 'forbidden')
    assert.equal(rejected.message, 'function registration is not allowed for this session')
  })

  it('trigger registrations: allowed types, the hook (deny and map), and the target check', async () => {
    const w = await client()
    w.send({ type: 'registertrigger', id: 'tr-type', trigger_type: 'other', function_id: 'api::ping', config: {} })
    assert.deepEqual((await w.next((f) => f.type === 'triggerregistrationresult' && f.id === 'tr-type')).error, {
      code: 'FORBIDDEN',
      message: "trigger type 'other' not allowed for this session",
    })
    w.send({ type: 'registertrigger', id: 'tr-hook', trigger_type: 'blocked', function_id: 'api::ping', config: {} })
    assert.deepEqual((await w.next((f) => f.type === 'triggerregistrationresult' && f.id === 'tr-hook')).error, {
      code: 'FORBIDDEN',
      message: 'registration denied by gw::on-trigger: blocked type',
    })
    w.send({ type: 'registertrigger', id: 'tr-target', trigger_type: 'custom', function_id: 'private::hidden', config: {} })
    assert.equal((await w.next((f) => f.type === 'triggerregistrationresult' && f.id === 'tr-target')).error.code, 'FORBIDDEN')
    w.send({ type: 'registertrigger', id: 'tr-map', trigger_type: 'custom', function_id: 'map::me', config: { a: 1 }, metadata: { m: 1 } })
    await waitFor(async () => {
      const list = (await trusted.call('engine::registered-triggers::list', {})).result.registered_triggers
      const b = list.find((x: any) => x.id === 'tr-map')
      return b !== undefined && b.function_id === 'api::mapped' && b.config.mapped === true
    }, 'the condition')
    assert.deepEqual(hookInputs.trigger!.find((i) => i.trigger_id === 'tr-map'), {
      trigger_id: 'tr-map',
      trigger_type: 'custom',
      function_id: 'map::me',
      config: { a: 1 },
      metadata: { m: 1 },
      namespace: 'default',
      context: { user: 'ada' },
    })
    // Unregistering by the id the worker sent removes the stored binding.
    w.send({ type: 'unregistertrigger', id: 'tr-map' })
    await waitFor(async () => !(await trusted.call('engine::registered-triggers::list', {})).result.registered_triggers.some((b: any) => b.id === 'tr-map'), 'the condition')
  })

  it('the trigger type hook maps or denies; engine-owned types stay reserved', async () => {
    const w = await client()
    w.send({ type: 'registertriggertype', id: 'nope', description: 'x' })
    const denied = await w.next((f) => f.type === 'registrationrejected' && f.trigger_type_id === 'nope')
    assert.equal(denied.reason, 'hook_denied')
    assert.equal(denied.message, 'registration denied by gw::on-trigger-type: not this one')
    w.send({ type: 'registertriggertype', id: 'rename-type', description: 'original' })
    await waitFor(async () => (await trusted.call('engine::triggers::list', {})).result.triggers.some((x: any) => x.id === 'renamed-type' && x.description === 'mapped'), 'the condition')
    assert.deepEqual(hookInputs.triggerType!.find((i) => i.trigger_type_id === 'rename-type'), { trigger_type_id: 'rename-type', description: 'original', context: { user: 'ada' } })
    w.send({ type: 'registertriggertype', id: 'engine::workers-available' })
    assert.equal((await w.next((f) => f.type === 'registrationrejected' && f.trigger_type_id === 'engine::workers-available')).reason, 'reserved_id')
  })
})

describe('middleware (§13.4)', () => {
  it('receives the call with the session context and forwards it', async () => {
    const w = await client('user', middlewareUrl)
    const answer = await w.call('api::echo', { mode: 'forward', n: 1 }, { metadata: { trace: 'x' } })
    assert.deepEqual(answer.result, { from: 'api::echo', data: { mode: 'forward', n: 1 } })
    assert.equal(answer.function_id, 'api::echo')
    assert.deepEqual(middlewareInputs.at(-1), {
      function_id: 'api::echo',
      payload: { mode: 'forward', n: 1 },
      namespace: 'default',
      action: null,
      context: {},
      metadata: { trace: 'x' },
    })
  })

  it('can rewrite the call or reject it; its error becomes the caller’s', async () => {
    const w = await client('user', middlewareUrl)
    assert.deepEqual((await w.call('api::ping', { mode: 'rewrite' })).result, { from: 'api::ping', data: { rewritten: true } })
    assert.deepEqual((await w.call('api::ping', { mode: 'reject' })).error, { code: 'MW_DENIED', message: 'not through here' })
  })

  it('never diverts engine:: calls, nor calls the access check refused', async () => {
    const w = await client('user', middlewareUrl)
    const before = middlewareInputs.length
    assert.ok(Array.isArray((await w.call('engine::functions::list', {})).result.functions))
    assert.equal((await w.call('private::hidden', { mode: 'forward' })).error.code, 'FORBIDDEN')
    assert.equal(middlewareInputs.length, before)
  })

  it('a listener with rbac but no auth function gives the AuthResult defaults', async () => {
    const w = await client('user', middlewareUrl)
    w.send({ type: 'registertriggertype', id: 'defaults::type' })
    assert.equal((await w.next((f) => f.type === 'registrationrejected')).reason, 'forbidden')
    w.serve('defaults::fn', () => 'ok')
    await waitFor(async () => (await trusted.call('engine::functions::list', {})).result.functions.some((f: any) => f.function_id === 'defaults::fn'), 'the condition')
  })
})

describe('listeners reachable from other hosts', () => {
  it('warns at start when such a listener has no rbac', async () => {
    const warnings: string[] = []
    const log: Logger = { debug() {}, info() {}, error() {}, warn: (message) => warnings.push(message) }
    const e = await startTestEngine({ builtins: [], listener: { host: '0.0.0.0' }, extraListeners: [{ host: '0.0.0.0', rbac: { expose_functions: [] } }], log })
    try {
      assert.equal(warnings.filter((w) => w.includes('has no rbac block')).length, 1)
    } finally {
      await e.stop()
    }
  })
})
