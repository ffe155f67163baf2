import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SvcError } from 'svc-protocol/errors'
import { parsePattern, Router, type HttpMethod, type Lookup } from './router.ts'

function spec(method: HttpMethod, pattern: string, functionId = `fn ${method} ${pattern}`, namespace = 'default') {
  return { method, pattern: parsePattern(pattern), functionId, namespace }
}

/** A router with one binding per [method, pattern]; the binding data is the pattern text. */
function routerWith(routes: [HttpMethod, string][]): Router<string> {
  const router = new Router<string>()
  routes.forEach(([method, pattern], i) => router.add(`t${i}`, spec(method, pattern), `${method} ${pattern}`))
  return router
}

/** A compact view of a lookup, for deepEqual. */
function view(result: Lookup<string>): unknown {
  switch (result.status) {
    case 'found':
      return { binding: result.binding, params: { ...result.params }, route: result.route.pattern, viaGet: result.viaGet }
    case 'options':
    case 'method_not_allowed':
      return { status: result.status, allow: result.allow }
    default:
      return { status: result.status }
  }
}

function found(router: Router<string>, method: string, path: string) {
  const result = router.lookup(method, path)
  assert.equal(result.status, 'found', `${method} ${path} should match, got ${JSON.stringify(view(result))}`)
  return result as Extract<Lookup<string>, { status: 'found' }>
}

function assertInvalid(pattern: string, reason: RegExp) {
  assert.throws(
    () => parsePattern(pattern),
    (err: unknown) => {
      assert.ok(err instanceof SvcError)
      assert.equal(err.code, 'INVALID_TRIGGER_CONFIG')
      assert.ok(err.message.startsWith(`api_path '${pattern}' is invalid: `), err.message)
      assert.match(err.message, reason)
      return true
    },
  )
}

describe('parsePattern (builtins.md §3.3)', () => {
  it('adds a missing leading slash', () => {
    assert.equal(parsePattern('users/:id').text, '/users/:id')
    assert.equal(parsePattern('/users/:id').text, '/users/:id')
  })

  it('reads static, parameter and wildcard segments', () => {
    const p = parsePattern('/files/:owner/raw/*')
    assert.deepEqual(p.paramNames, ['owner'])
    assert.equal(p.wildcard, true)
    assert.deepEqual(p.segments, [
      { kind: 'static', text: 'files' },
      { kind: 'param', name: 'owner' },
      { kind: 'static', text: 'raw' },
    ])
  })

  it('keeps a trailing slash as an empty final segment', () => {
    assert.deepEqual(parsePattern('/users/').segments, [
      { kind: 'static', text: 'users' },
      { kind: 'static', text: '' },
    ])
    assert.deepEqual(parsePattern('/').segments, [{ kind: 'static', text: '' }])
  })

  it('rejects empty inner segments', () => {
    assertInvalid('/a//b', /empty segments/)
    assertInvalid('//', /empty segments/)
    assertInvalid('', /empty/)
  })

  it('rejects a wildcard that is not last', () => {
    assertInvalid('/a/*/b', /'\*' is only allowed as the last segment/)
    assertInvalid('/a/*/', /'\*' is only allowed as the last segment/)
  })

  it('rejects bad and duplicate parameter names', () => {
    assertInvalid('/a/:', /parameter ':'/)
    assertInvalid('/a/:1x', /parameter ':1x'/)
    assertInvalid('/a/:x-y', /parameter ':x-y'/)
    assertInvalid('/a/:id/b/:id', /':id' appears twice/)
  })

  it('rejects query strings and fragments, which requests never match', () => {
    assertInvalid('/a?b=1', /'\?' or '#'/)
    assertInvalid('/a#x', /'\?' or '#'/)
  })

  it('treats text that merely contains * as static', () => {
    assert.deepEqual(parsePattern('/a/*.js').segments[1], { kind: 'static', text: '*.js' })
  })
})

describe('Router lookup (builtins.md §3.3)', () => {
  it('matches static routes exactly, case-sensitively, with significant trailing slashes', () => {
    const router = routerWith([
      ['GET', '/users'],
      ['GET', '/users/'],
      ['GET', '/'],
    ])
    assert.equal(found(router, 'GET', '/users').binding, 'GET /users')
    assert.equal(found(router, 'GET', '/users/').binding, 'GET /users/')
    assert.equal(found(router, 'GET', '/').binding, 'GET /')
    assert.equal(router.lookup('GET', '/Users').status, 'not_found')
    assert.equal(router.lookup('GET', '/users//').status, 'not_found')
  })

  it('delivers decoded parameter values by name', () => {
    const router = routerWith([['GET', '/users/:id/posts/:post_id']])
    const hit = found(router, 'GET', '/users/42/posts/a%20b')
    assert.deepEqual({ ...hit.params }, { id: '42', post_id: 'a b' })
    assert.equal(hit.route.pattern, '/users/:id/posts/:post_id')
  })

  it('splits before decoding: %2F stays inside one parameter', () => {
    const router = routerWith([['GET', '/files/:name']])
    assert.deepEqual({ ...found(router, 'GET', '/files/a%2Fb').params }, { name: 'a/b' })
    assert.equal(router.lookup('GET', '/files/a/b').status, 'not_found')
  })

  it('keeps segments with invalid escapes as received', () => {
    const router = routerWith([['GET', '/p/:v']])
    assert.equal(found(router, 'GET', '/p/100%').params.v, '100%')
    assert.equal(found(router, 'GET', '/p/%E0%A4%A').params.v, '%E0%A4%A')
    assert.equal(found(router, 'GET', '/p/%FF').params.v, '%FF')
    assert.equal(found(router, 'GET', '/p/caf%C3%A9').params.v, 'café')
  })

  it('matches static segments against decoded request segments', () => {
    const router = routerWith([['GET', '/caf%C3%A9/menu']])
    assert.ok(found(router, 'GET', '/café/menu'))
    assert.ok(found(router, 'GET', '/caf%C3%A9/menu'))
  })

  it('does not let a parameter match an empty segment', () => {
    const router = routerWith([['GET', '/users/:id']])
    assert.equal(router.lookup('GET', '/users/').status, 'not_found')
  })

  it('gives the wildcard the rest of the path, possibly empty, but not the bare prefix', () => {
    const router = routerWith([['GET', '/files/*']])
    assert.equal(found(router, 'GET', '/files/').params['*'], '')
    assert.equal(found(router, 'GET', '/files/a').params['*'], 'a')
    assert.equal(found(router, 'GET', '/files/a/b%20c').params['*'], 'a/b c')
    assert.equal(router.lookup('GET', '/files').status, 'not_found')
    assert.equal(found(routerWith([['GET', '/*']]), 'GET', '/').params['*'], '')
  })

  it('combines parameters and a wildcard', () => {
    const router = routerWith([['GET', '/repos/:owner/raw/*']])
    assert.deepEqual({ ...found(router, 'GET', '/repos/me/raw/src/x.ts').params }, { owner: 'me', '*': 'src/x.ts' })
  })

  it('prefers static, then parameter, then wildcard, with backtracking', () => {
    const router = routerWith([
      ['GET', '/a/b/d'],
      ['GET', '/a/:x/c'],
      ['GET', '/a/*'],
      ['GET', '/a/b'],
    ])
    assert.equal(found(router, 'GET', '/a/b/d').binding, 'GET /a/b/d')
    // '/a/b' is a static prefix here, but only '/a/:x/c' can finish the path.
    const viaParam = found(router, 'GET', '/a/b/c')
    assert.equal(viaParam.binding, 'GET /a/:x/c')
    assert.deepEqual({ ...viaParam.params }, { x: 'b' })
    assert.equal(found(router, 'GET', '/a/b').binding, 'GET /a/b')
    assert.equal(found(router, 'GET', '/a/z').binding, 'GET /a/*')
    const viaWildcard = found(router, 'GET', '/a/b/e')
    assert.equal(viaWildcard.binding, 'GET /a/*')
    assert.deepEqual({ ...viaWildcard.params }, { '*': 'b/e' })
  })

  it('gives each route its own parameter names at a shared position', () => {
    const router = routerWith([
      ['GET', '/a/:x/c'],
      ['GET', '/a/:y/d'],
    ])
    assert.deepEqual({ ...found(router, 'GET', '/a/1/c').params }, { x: '1' })
    assert.deepEqual({ ...found(router, 'GET', '/a/1/d').params }, { y: '1' })
  })

  it('keeps a parameter named __proto__ as a plain property', () => {
    const router = routerWith([['GET', '/x/:__proto__']])
    const params = found(router, 'GET', '/x/v').params
    assert.equal(Object.getPrototypeOf(params), Object.prototype)
    assert.deepEqual(Object.entries(params), [['__proto__', 'v']])
  })

  it('picks the route of the requested method, backtracking across methods', () => {
    const router = routerWith([
      ['GET', '/a/b'],
      ['POST', '/a/:x'],
    ])
    assert.equal(found(router, 'GET', '/a/b').binding, 'GET /a/b')
    const post = found(router, 'POST', '/a/b')
    assert.equal(post.binding, 'POST /a/:x')
    assert.deepEqual({ ...post.params }, { x: 'b' })
  })

  it('answers 405 data: the methods routed on the path, HEAD with GET, and OPTIONS', () => {
    const router = routerWith([
      ['GET', '/items/:id'],
      ['DELETE', '/items/:id'],
      ['POST', '/items'],
    ])
    assert.deepEqual(view(router.lookup('PUT', '/items/1')), {
      status: 'method_not_allowed',
      allow: 'GET, HEAD, DELETE, OPTIONS',
    })
    assert.deepEqual(view(router.lookup('GET', '/items')), { status: 'method_not_allowed', allow: 'POST, OPTIONS' })
    assert.deepEqual(view(router.lookup('PROPFIND', '/items')), { status: 'method_not_allowed', allow: 'POST, OPTIONS' })
    assert.deepEqual(view(router.lookup('PUT', '/nothing')), { status: 'not_found' })
  })

  it('serves HEAD from GET unless a HEAD route exists', () => {
    const router = routerWith([
      ['GET', '/a'],
      ['GET', '/b'],
      ['HEAD', '/b'],
    ])
    const a = found(router, 'HEAD', '/a')
    assert.equal(a.binding, 'GET /a')
    assert.equal(a.viaGet, true)
    const b = found(router, 'HEAD', '/b')
    assert.equal(b.binding, 'HEAD /b')
    assert.equal(b.viaGet, false)
    assert.equal(found(router, 'GET', '/a').viaGet, false)
  })

  it('answers OPTIONS on a routed path with Allow, unless an OPTIONS route exists', () => {
    const router = routerWith([
      ['GET', '/a'],
      ['PATCH', '/a'],
      ['OPTIONS', '/b'],
    ])
    assert.deepEqual(view(router.lookup('OPTIONS', '/a')), { status: 'options', allow: 'GET, HEAD, PATCH, OPTIONS' })
    assert.equal(found(router, 'OPTIONS', '/b').binding, 'OPTIONS /b')
    assert.equal(router.lookup('OPTIONS', '/c').status, 'not_found')
  })

  it('gives the same answers with 1 route or 1000 more routes around it', () => {
    const routes: [HttpMethod, string][] = [
      ['GET', '/users/:id'],
      ['GET', '/users/:id/posts/*'],
      ['POST', '/users'],
      ['GET', '/a/b/d'],
      ['GET', '/a/:x/c'],
      ['GET', '/static/*'],
    ]
    const probes: [string, string][] = [
      ['GET', '/users/7'],
      ['GET', '/users/7/posts/'],
      ['GET', '/users/7/posts/2024/01'],
      ['POST', '/users'],
      ['DELETE', '/users'],
      ['HEAD', '/users/7'],
      ['OPTIONS', '/users/7'],
      ['GET', '/a/b/d'],
      ['GET', '/a/b/c'],
      ['GET', '/a/b/e'],
      ['GET', '/static/app.js'],
      ['GET', '/nope'],
      ['GET', '/users/'],
    ]
    const small = routerWith(routes)
    const noise: [HttpMethod, string][] = []
    for (let i = 0; i < 1000; i++) {
      const method = (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const)[i % 5]!
      noise.push([method, i % 3 === 0 ? `/r${i}/:p/x${i}` : i % 3 === 1 ? `/r${i}/s/*` : `/users/:id/n${i}`])
    }
    const large = routerWith([...noise, ...routes])
    assert.equal(large.size, 1006)
    for (const [method, path] of probes) {
      assert.deepEqual(view(large.lookup(method, path)), view(small.lookup(method, path)), `${method} ${path}`)
    }
  })
})

describe('Router conflicts and promotion (builtins.md §3.3)', () => {
  it('lets bindings of the same pattern, function and namespace share the route until the last leaves', () => {
    const router = new Router<string>()
    router.add('r1', spec('GET', '/a/:x', 'f'), 'first')
    router.add('r2', spec('GET', '/a/:x', 'f'), 'second')
    assert.equal(found(router, 'GET', '/a/1').binding, 'first')
    router.remove('r1')
    assert.equal(found(router, 'GET', '/a/1').binding, 'second')
    router.remove('r2')
    assert.equal(router.lookup('GET', '/a/1').status, 'not_found')
    assert.equal(router.size, 0)
  })

  it('refuses another function, pattern text or namespace on the same shape with the exact message', () => {
    const router = new Router<string>()
    router.add('owner', spec('GET', '/a/:x', 'owner::fn'), 'owner')
    const conflict = (id: string, s: ReturnType<typeof spec>, message: string) =>
      assert.throws(
        () => router.add(id, s, id),
        (err: unknown) => err instanceof SvcError && err.code === 'ROUTE_CONFLICT' && err.message === message,
      )
    conflict('other-param', spec('GET', '/a/:y', 'owner::fn'), "Route 'GET /a/:y' conflicts with 'GET /a/:x' bound to function owner::fn")
    conflict('other-fn', spec('GET', 'a/:x', 'other::fn'), "Route 'GET /a/:x' conflicts with 'GET /a/:x' bound to function owner::fn")
    conflict(
      'other-ns',
      spec('GET', '/a/:x', 'owner::fn', 'team'),
      "Route 'GET /a/:x' conflicts with 'GET /a/:x' bound to function owner::fn",
    )
    assert.equal(found(router, 'GET', '/a/1').binding, 'owner')
    assert.equal(router.isActive('other-fn'), false)
    // Other methods and other shapes are independent.
    router.add('post', spec('POST', '/a/:x', 'other::fn'), 'post')
    router.add('wild', spec('GET', '/a/*', 'other::fn'), 'wild')
    assert.equal(found(router, 'POST', '/a/1').binding, 'post')
  })

  it('promotes the oldest refused binding when the owner goes away, with its replicas', () => {
    const promoted: string[] = []
    const router = new Router<string>({ onPromote: (id) => promoted.push(id) })
    router.add('owner', spec('GET', '/a/:x', 'f1'), 'owner')
    assert.throws(() => router.add('b1', spec('GET', '/a/:y', 'f2'), 'b1'))
    assert.throws(() => router.add('c1', spec('GET', '/a/:z', 'f3'), 'c1'))
    assert.throws(() => router.add('b2', spec('GET', '/a/:y', 'f2'), 'b2'))
    assert.deepEqual(promoted, [])
    router.remove('owner')
    assert.deepEqual(promoted, ['b1', 'b2'])
    const hit = found(router, 'GET', '/a/1')
    assert.equal(hit.binding, 'b1')
    assert.deepEqual({ ...hit.params }, { y: '1' })
    assert.equal(router.isActive('b2'), true)
    assert.equal(router.isActive('c1'), false)
    router.remove('b1')
    assert.deepEqual(promoted, ['b1', 'b2'], 'b2 still serves the route')
    router.remove('b2')
    assert.deepEqual(promoted, ['b1', 'b2', 'c1'])
    assert.deepEqual({ ...found(router, 'GET', '/a/1').params }, { z: '1' })
  })

  it('forgets a refused binding that is removed before promotion', () => {
    const promoted: string[] = []
    const router = new Router<string>({ onPromote: (id) => promoted.push(id) })
    router.add('owner', spec('GET', '/a', 'f1'), 'owner')
    assert.throws(() => router.add('late', spec('GET', '/a', 'f2'), 'late'))
    router.remove('late')
    router.remove('owner')
    assert.deepEqual(promoted, [])
    assert.equal(router.lookup('GET', '/a').status, 'not_found')
    assert.equal(router.size, 0)
  })

  it('treats a known trigger id as a replacement', () => {
    const router = new Router<string>()
    router.add('t', spec('GET', '/old', 'f'), 'v1')
    router.add('t', spec('GET', '/old', 'f'), 'v2')
    assert.equal(found(router, 'GET', '/old').binding, 'v2')
    router.add('t', spec('POST', '/new', 'f'), 'v3')
    assert.equal(router.lookup('GET', '/old').status, 'not_found')
    assert.equal(found(router, 'POST', '/new').binding, 'v3')
    assert.equal(router.size, 1)
  })

  it('prunes removed routes so that other lookups are unaffected', () => {
    const router = routerWith([
      ['GET', '/a/b/c'],
      ['GET', '/a/:x'],
    ])
    router.remove('t0')
    assert.equal(router.lookup('GET', '/a/b/c').status, 'not_found')
    assert.deepEqual({ ...found(router, 'GET', '/a/b').params }, { x: 'b' })
    router.remove('t1')
    assert.equal(router.lookup('GET', '/a/b').status, 'not_found')
    router.add('again', spec('GET', '/a/b/c'), 'again')
    assert.equal(found(router, 'GET', '/a/b/c').binding, 'again')
  })
})
