/**
 * Node's compile cache for svc (bin/compile-cache.js, issue 20 "Engine start"): where it lives (the
 * user's own cache folder, never a shared one), that `svc` creates it readable by its owner only and
 * hands it to the processes it starts, and that the user's own settings (`NODE_COMPILE_CACHE`,
 * `NODE_DISABLE_COMPILE_CACHE`) win.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix, win32 } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
// @ts-expect-error plain JavaScript without declarations (bin/ runs before any build)
import { compileCacheDirectory, enableCompileCache } from '../bin/compile-cache.js'

const RUN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'svc-compile-cache-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

const directory = compileCacheDirectory as (env: NodeJS.ProcessEnv, platform: NodeJS.Platform, home: string) => string
const enable = enableCompileCache as (module: unknown, env: NodeJS.ProcessEnv) => string | undefined

describe('compileCacheDirectory', () => {
  it('is the platform’s per-user cache folder', () => {
    assert.equal(directory({}, 'linux', '/home/ada'), '/home/ada/.cache/svc/node-compile-cache')
    assert.equal(directory({ XDG_CACHE_HOME: '/var/cache/ada' }, 'linux', '/home/ada'), '/var/cache/ada/svc/node-compile-cache')
    assert.equal(directory({}, 'darwin', '/Users/ada'), '/Users/ada/Library/Caches/svc/node-compile-cache')
  })

  it('ignores an XDG_CACHE_HOME that is not absolute (the XDG spec), never resolving it against the working directory', () => {
    for (const xdg of ['', 'cache', './cache', '../../tmp', '~/.cache']) {
      assert.equal(directory({ XDG_CACHE_HOME: xdg }, 'linux', '/home/ada'), '/home/ada/.cache/svc/node-compile-cache', JSON.stringify(xdg))
    }
  })

  it('property: any XDG_CACHE_HOME or LOCALAPPDATA gives an absolute folder under it (when absolute) or the home folder', () => {
    const hostile = fc.oneof(
      fc.string(),
      fc.constantFrom('', '.', '..', '/', '//', '../..', 'C:', 'C:\\', '\\\\server\\share', '/tmp/../etc', 'a\u0000b', '~', '$HOME', '%LOCALAPPDATA%'),
      fc.array(fc.constantFrom('..', '.', 'x', ''), { maxLength: 6 }).map((parts) => `/${parts.join('/')}`),
    )
    fc.assert(
      fc.property(hostile, hostile, fc.constantFrom<NodeJS.Platform>('linux', 'darwin', 'freebsd', 'win32'), (xdg, local, platform) => {
        const home = platform === 'win32' ? 'C:\\Users\\ada' : '/home/ada'
        const path = platform === 'win32' ? win32 : posix
        const result = directory({ XDG_CACHE_HOME: xdg, LOCALAPPDATA: local }, platform, home)
        assert.ok(result.endsWith('node-compile-cache'), result)
        if (platform === 'darwin') assert.equal(result, '/Users/ada/Library/Caches/svc/node-compile-cache'.replace('/Users/ada', home))
        assert.ok(path.isAbsolute(result), result)
        if (platform === 'win32') assert.equal(result, path.join(path.isAbsolute(local) ? local : path.join(home, 'AppData', 'Local'), 'svc', 'Cache', 'node-compile-cache'))
        else if (platform !== 'darwin') assert.equal(result, path.join(path.isAbsolute(xdg) ? xdg : path.join(home, '.cache'), 'svc', 'node-compile-cache'))
      }),
      { numRuns: 500 },
    )
  })
})

describe('enableCompileCache', () => {
  const statuses = { ENABLED: 1, ALREADY_ENABLED: 2, FAILED: 0, DISABLED: 3 }
  const fakeModule = (status: number, calls: string[]) => ({
    constants: { compileCacheStatus: statuses },
    enableCompileCache: (dir: string) => {
      calls.push(dir)
      return { status }
    },
  })

  it('hands the folder to child processes through NODE_COMPILE_CACHE once Node enabled it', () => {
    const calls: string[] = []
    const env: NodeJS.ProcessEnv = { XDG_CACHE_HOME: join(scratch, 'xdg') }
    const dir = enable(fakeModule(statuses.ENABLED, calls), env)
    assert.equal(dir, join(scratch, 'xdg', 'svc', 'node-compile-cache'))
    assert.deepEqual(calls, [dir])
    assert.equal(env.NODE_COMPILE_CACHE, dir)
    assert.equal(statSync(dir!).mode & 0o777, 0o700, 'readable by its owner only')
  })

  it('leaves the user’s NODE_COMPILE_CACHE and NODE_DISABLE_COMPILE_CACHE alone, and a refusal off', () => {
    const calls: string[] = []
    assert.equal(enable(fakeModule(statuses.ENABLED, calls), { NODE_COMPILE_CACHE: '/elsewhere' }), '/elsewhere')
    assert.equal(enable(fakeModule(statuses.ENABLED, calls), { NODE_DISABLE_COMPILE_CACHE: '1' }), undefined)
    assert.deepEqual(calls, [])
    const env: NodeJS.ProcessEnv = { XDG_CACHE_HOME: join(scratch, 'refused') }
    assert.equal(enable(fakeModule(statuses.FAILED, calls), env), undefined)
    assert.equal(env.NODE_COMPILE_CACHE, undefined)
    assert.equal(enable({}, {}), undefined, 'a Node without module.enableCompileCache')
  })
})

describe('svc', () => {
  const svc = (home: string, extra: NodeJS.ProcessEnv = {}) => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, ...extra }
    delete env.XDG_CACHE_HOME
    delete env.NODE_COMPILE_CACHE
    delete env.NODE_DISABLE_COMPILE_CACHE
    Object.assign(env, extra)
    return execFileSync(process.execPath, [RUN, '--version'], { env, encoding: 'utf8' })
  }

  it('keeps the compiled code of what it loads in ~/.cache/svc/node-compile-cache, owner only', () => {
    const home = mkdtempSync(join(scratch, 'home-'))
    assert.match(svc(home), /^svc\//)
    const dir = join(home, '.cache', 'svc', 'node-compile-cache')
    assert.ok(existsSync(dir), 'the cache folder exists')
    assert.equal(statSync(join(home, '.cache')).mode & 0o777, 0o700)
    assert.ok(readdirSync(dir, { recursive: true }).length > 0, 'Node wrote compiled code into it')
  })

  it('turning the cache on loads none of Node\'s file streams (no ES module face of node:fs at every start)', () => {
    const home = mkdtempSync(join(scratch, 'home-'))
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home }
    delete env.XDG_CACHE_HOME
    delete env.NODE_COMPILE_CACHE
    delete env.NODE_DISABLE_COMPILE_CACHE
    // What bin/run.js does before loading svc; process.moduleLoadList names Node's internal modules loaded so far.
    const script = `const { enableCompileCache } = await import(${JSON.stringify(new URL('../bin/compile-cache.js', import.meta.url).href)})
const dir = enableCompileCache(process.getBuiltinModule('node:module'), process.env)
console.log(JSON.stringify({ dir, streams: process.moduleLoadList.includes('NativeModule internal/fs/streams') }))`
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8' })) as { dir?: string; streams: boolean }
    assert.equal(out.dir, join(home, '.cache', 'svc', 'node-compile-cache'), 'the cache is on')
    assert.equal(out.streams, false, 'internal/fs/streams not loaded')
  })

  it('writes no cache with NODE_DISABLE_COMPILE_CACHE=1', () => {
    const home = mkdtempSync(join(scratch, 'home-'))
    assert.match(svc(home, { NODE_DISABLE_COMPILE_CACHE: '1' }), /^svc\//)
    assert.ok(!existsSync(join(home, '.cache')), 'no cache folder')
  })
})
