/**
 * Hostile inputs for the python and rust parts of the supervisor (issue 18), with fast-check:
 * svc.worker.yaml with any `runtime.kind`/`entry`/`scripts.build`, any Cargo.toml text, any build
 * output, any start command. Each property names what a user could otherwise see go wrong.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { stringify } from 'yaml'
import { CompilerErrorScanner, startupErrorLine } from './compiler-output.ts'
import { ignoreMatcher } from './watch.ts'
import { binaryNameOf, ManifestError, parseManifest } from './manifest.ts'
import { commandWords, isSimpleCommand } from './process.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-languages-fuzz-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

/** Strings with the characters that matter to a shell, TOML and YAML, and some that are just odd. */
const hostile = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...'ab_-./$(){}`;|&<>"\' \n\\#=*?[]~\u0000é🙂'.split('')), maxLength: 40 }),
  fc.constantFrom('$(rm -rf ~)', '../../bin/sh', 'a b', '`id`', '${HOME}', '-rf', 'main.py; rm x', '', ' ', 'svc-worker'),
)

const SAFE_START = /^"\$\{CARGO_TARGET_DIR:-target\}\/release\/[A-Za-z0-9_-]{1,64}"$/

describe('python and rust manifests (fast-check)', () => {
  it('any runtime.kind/entry/scripts.build either parses or is refused with a ManifestError; a rust start never carries a name it did not check', () => {
    const dir = join(scratch, 'w')
    fc.assert(
      fc.property(
        fc.constantFrom('python', 'rust', 'typescript', 'go', 'Rust', ''),
        fc.option(hostile),
        fc.option(fc.oneof(hostile, fc.constant(['make']), fc.integer())),
        fc.option(fc.oneof(hostile, fc.constant('[package]\nname = "ok-name"\n'))),
        (kind, entry, build, cargoName) => {
          const runtime: Record<string, unknown> = { kind }
          if (entry !== null) runtime.entry = entry
          const doc: Record<string, unknown> = { name: 'w', runtime }
          if (build !== null) doc.scripts = { build }
          const cargo = cargoName === null ? undefined : cargoName.startsWith('[package]') ? cargoName : `[package]\nname = ${JSON.stringify(cargoName)}\n`
          let manifest
          try {
            manifest = parseManifest(stringify(doc), { directory: cargo === undefined ? dir : cargoDir(cargo) })
          } catch (err) {
            assert.ok(err instanceof ManifestError, `not a ManifestError: ${String(err)}`)
            return
          }
          if (kind === 'rust') {
            assert.ok(SAFE_START.test(manifest.scripts.start), manifest.scripts.start)
            assert.ok(isSimpleCommand(manifest.scripts.start))
            assert.equal(manifest.scripts.build, typeof build === 'string' ? build : 'cargo build --release')
          }
          if (kind === 'python') assert.match(manifest.scripts.start, /^\.venv\/bin\/python (-m )?\S/)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('binaryNameOf any Cargo.toml text is undefined or one safe word', () => {
    const line = fc.oneof(
      hostile,
      fc.constantFrom('[package]', '[[bin]]', '[dependencies]', '[ package ]', '[[bin]] # x', '[workspace]'),
      hostile.map((v) => `name = ${JSON.stringify(v)}`),
      hostile.map((v) => `name = '${v}'`),
    )
    fc.assert(
      fc.property(fc.array(line, { maxLength: 12 }), (lines) => {
        const name = binaryNameOf(lines.join('\n'))
        assert.ok(name === undefined || /^[A-Za-z0-9_-]{1,64}$/.test(name), String(name))
      }),
      { numRuns: 500 },
    )
  })

  it('the first compiler error of any output is undefined or an `error` line, clipped, with at most its place after it', () => {
    const line = fc.oneof(
      hostile,
      fc.constantFrom('error[E0308]: mismatched types', ' --> src/main.rs:2:18', 'error: could not compile `x`', '\u001b[31merror\u001b[0m: boom', 'warning: unused'),
      fc.string({ minLength: 290, maxLength: 400 }).map((s) => `error: ${s}`),
    )
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), (lines) => {
        const scanner = new CompilerErrorScanner()
        for (const l of lines) scanner.push(l)
        const first = scanner.firstError
        if (first === undefined) return assert.equal(scanner.oneLine, undefined)
        const [head, place, ...rest] = first.split('\n')
        assert.equal(rest.length, 0)
        assert.match(head!, /^error/)
        assert.ok(head!.length <= 300)
        if (place !== undefined) assert.match(place, /^ {2}--> \S.*:\d+:\d+$/)
        assert.ok(!scanner.oneLine!.includes('\n'))
      }),
      { numRuns: 500 },
    )
  })

  it('a start-up failure summary (issue 21) is one line of at most 200 characters for any output, and keeps the place Node printed', () => {
    // Lines shaped like the places the summary looks for, hostile ones among them: long runs of
    // ':' and '/' (backtracking), ANSI sequences, `file://` URLs with escapes, stack frames.
    const placeish = fc.oneof(
      fc.string({ unit: fc.constantFrom(...'/:.a1 ()@%\\'.split('')), maxLength: 300 }).map((t) => `/${t}`),
      fc.string({ unit: fc.constantFrom(...'/:.a1 ()'.split('')), maxLength: 300 }).map((t) => `    at ${t}`),
      fc.string({ maxLength: 300 }).map((t) => `file:///${t}:7`),
      fc.constantFrom('Error: Transform failed with 1 error:', '/w/a.ts:1:2: ERROR: x', '  File "/w/m.py", line 9', '\u001b[31mTypeError\u001b[0m: x', '^^^^', 'Node.js v24.0.0'),
      fc.string({ minLength: 290, maxLength: 400 }).map((t) => `SyntaxError: ${t}`),
    )
    fc.assert(
      fc.property(fc.array(fc.oneof(hostile, placeish), { maxLength: 40 }), fc.nat({ max: 99 }), (lines, n) => {
        const summary = startupErrorLine(lines, '/w')
        if (summary !== undefined) {
          assert.ok(summary.length <= 200, summary)
          assert.ok(!summary.includes('\n'))
        }
        const syntax = startupErrorLine([...lines.filter((l) => !/:\d+$|ERROR:|File "|\bat\b/.test(l)), `file:///w/src/x.mjs:${n}`, '', 'SyntaxError: Unexpected end of input'], '/w')
        assert.equal(syntax, `SyntaxError: Unexpected end of input (src/x.mjs:${n})`)
      }),
      { numRuns: 500 },
    )
  })

  it('the watcher never ignores a worker source file, whatever its directory, and always ignores editor and temporary files beside it', () => {
    const segment = fc.string({ unit: fc.constantFrom(...'abcxyz-_.'.split('')), minLength: 1, maxLength: 12 }).filter((t) => !/^\.|~$|\.(log|tmp|sw[pox])$/.test(t) && !['node_modules', 'dist', 'build', 'out', 'coverage', 'target', 'venv', '4913'].includes(t))
    const ignored = ignoreMatcher({ directory: '/p', patterns: [], paths: ['/p/config.yaml'] })
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 4 }), segment, fc.constantFrom('.ts', '.mjs', '.py', '.rs', '.json'), (dirs, name, ext) => {
        const file = join('/p', ...dirs, `${name}${ext}`)
        assert.ok(!ignored(file), file)
        for (const temp of [`${file}~`, join('/p', ...dirs, `.${name}${ext}.swp`), join('/p', ...dirs, `.#${name}${ext}`), join('/p', ...dirs, `.${name}${ext}.123.tmp`), join('/p', ...dirs, '4913')]) {
          assert.ok(ignored(temp), temp)
        }
      }),
      { numRuns: 500 },
    )
  })

  it('a start command svc runs without a shell gets the words sh would make of it, expansions included (issue 20)', () => {
    // Quoted strings, ${NAME} and ${NAME:-word} of set, empty and unset variables, and the
    // characters that matter to a shell; each simple command is given to /bin/sh as printf's arguments.
    const word = fc.oneof(
      hostile,
      fc.string({ unit: fc.constantFrom(...'ab_-./:@%+=,'.split('')), minLength: 1, maxLength: 8 }),
      fc.string({ unit: fc.constantFrom(...'ab $.-\'"'.split('')), maxLength: 8 }).map((t) => `'${t.replace(/'/g, '')}'`),
      fc.tuple(fc.constantFrom('A', 'B', 'UNSET', 'EMPTY'), fc.option(fc.string({ unit: fc.constantFrom(...'ab-./: '.split('')), maxLength: 6 })), fc.string({ unit: fc.constantFrom(...'ab '.split('')), maxLength: 4 })).map(
        ([name, fallback, around]) => `"${around}\${${name}${fallback === null ? '' : `:-${fallback}`}}${around}"`,
      ),
    )
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', A: 'a b', B: "'$x' \"y\"", EMPTY: '' }
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 4 }), fc.constantFrom(' ', '  ', '\t'), (words, gap) => {
        const command = words.join(gap)
        // sh cannot be asked about a NUL: no process argument can hold one.
        fc.pre(!command.includes('\u0000'))
        const split = commandWords(command, env)
        if (!isSimpleCommand(command)) return assert.equal(split, undefined)
        const sh = spawnSync('/bin/sh', ['-c', `printf '%s\\0' ${command}`], { env, encoding: 'utf8' })
        assert.equal(sh.status, 0, `${command}: ${sh.stderr}`)
        assert.deepEqual(split, sh.stdout.split('\0').slice(0, -1), command)
      }),
      { numRuns: 300 },
    )
  })

  it('a start command svc execs holds no shell operator, substitution or redirection outside single quotes', () => {
    fc.assert(
      fc.property(hostile, hostile, (a, b) => {
        // A long word that fails at its end once took exponential time (a start command hung svc).
        for (const command of [a, `${a} ${b}`, `"${a}"`, `.venv/bin/python ${a}`, `${'a'.repeat(200)}${a};`]) {
          if (!isSimpleCommand(command)) continue
          const unquoted = command.replace(/'[^']*'/g, '')
          assert.doesNotMatch(unquoted, /[;&|<>`\n\\*?~]|\$\(|\$[A-Za-z_]/, command)
        }
      }),
      { numRuns: 1000 },
    )
  })
})

let cargoDirs = 0
/** A fresh worker directory holding `text` as its Cargo.toml. */
function cargoDir(text: string): string {
  const dir = join(scratch, `c${cargoDirs++}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'Cargo.toml'), text)
  return dir
}
