/**
 * The rules of `svc project init` that do not need the CLI process: target directory, argument
 * resolution and prompting, dependency specifiers, project identity, next steps, installs.
 */
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, describe, it } from 'node:test'
import { CliError, ExitCode } from '../lib/errors.ts'
import { dependencySpecifiers, withDependencySpecifiers, withPackageManager } from './dependencies.ts'
import { initProject } from './init.ts'
import { installCommand, installDirectories, installFailedError, runInstall } from './install.ts'
import { formatNextSteps, nextSteps } from './next-steps.ts'
import { formatProjectIni, parseProjectIni, projectIdentity } from './project-ini.ts'
import { isInteractive } from '../lib/interactive.ts'
import { resolveInitRequest } from './request.ts'
import type { Prompter } from './request.ts'
import { writeProjectIni } from './scaffold.ts'
import { sdkTarball } from './vendor.ts'
import { checkTargetDirectory, displayDirectory, targetDirectory } from './target.ts'
import { requireTemplate } from './templates.ts'
import type { InitOptions } from './types.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'svc-init-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

let count = 0
function fresh(): string {
  return join(scratch, `d${count++}`)
}

const failsWith = (code: string, exitCode: number, message: string | RegExp) => (err: unknown) =>
  err instanceof CliError && err.code === code && err.exitCode === exitCode && (typeof message === 'string' ? err.message === message : message.test(err.message))

describe('target directory (cli.md §4.1)', () => {
  it('is --dir resolved against cwd, else ./NAME', () => {
    assert.equal(targetDirectory('/home/ada', 'my-app', undefined), '/home/ada/my-app')
    assert.equal(targetDirectory('/home/ada', 'my-app', 'code/x'), '/home/ada/code/x')
    assert.equal(targetDirectory('/home/ada', 'my-app', '/srv/x'), '/srv/x')
    assert.equal(targetDirectory('/home/ada', 'my-app', '.'), '/home/ada')
  })

  it('is shown as the user would type it', () => {
    assert.equal(displayDirectory('/home/ada/my-app', '/home/ada'), './my-app')
    assert.equal(displayDirectory('/home/ada/workers/w', '/home/ada'), './workers/w')
    assert.equal(displayDirectory('/home/ada', '/home/ada'), '.')
    assert.equal(displayDirectory('/srv/x', '/home/ada'), '/srv/x')
    assert.equal(displayDirectory('/home/other', '/home/ada'), '/home/other')
  })

  it('may be absent or empty', () => {
    const dir = fresh()
    assert.deepEqual(checkTargetDirectory(dir, scratch, false), { exists: false, entries: [] })
    mkdirSync(dir)
    assert.deepEqual(checkTargetDirectory(dir, scratch, false), { exists: true, entries: [] })
  })

  it('may hold dotfiles, such as .git or an existing .svc/project.ini', () => {
    const dir = fresh()
    mkdirSync(join(dir, '.git'), { recursive: true })
    mkdirSync(join(dir, '.svc'), { recursive: true })
    writeFileSync(join(dir, '.svc', 'project.ini'), 'project_id = x\n')
    writeFileSync(join(dir, '.env'), 'A=1\n')
    assert.deepEqual(checkTargetDirectory(dir, scratch, false), { exists: true, entries: [] })
  })

  it('must not hold anything else unless --force (exit 1)', () => {
    const dir = fresh()
    mkdirSync(dir)
    writeFileSync(join(dir, 'notes.txt'), '')
    const shown = displayDirectory(dir, scratch)
    assert.throws(
      () => checkTargetDirectory(dir, scratch, false),
      failsWith('DIRECTORY_NOT_EMPTY', ExitCode.Failure, `Directory ${shown} is not empty; pass --force to scaffold into it anyway`),
    )
    assert.deepEqual(checkTargetDirectory(dir, scratch, true), { exists: true, entries: ['notes.txt'] })
  })

  it('must not be a file, even with --force', () => {
    const file = fresh()
    writeFileSync(file, '')
    assert.throws(() => checkTargetDirectory(file, scratch, true), failsWith('NOT_A_DIRECTORY', ExitCode.Failure, /exists and is not a directory$/))
  })
})

/** Answers prompts from a script, recording what was asked. */
function scripted(answers: { name?: string; template?: string }): Prompter & { asked: string[] } {
  const asked: string[] = []
  return {
    asked,
    async name(defaultName, validate) {
      asked.push(`name (${defaultName})`)
      const answer = answers.name ?? defaultName
      assert.equal(validate(answer), true, 'the scripted answer is valid')
      return answer
    },
    async template(templates, defaultTemplate) {
      asked.push(`template (${defaultTemplate}; ${templates.map((t) => t.name).join(' ')})`)
      return answers.template ?? defaultTemplate
    },
  }
}

describe('arguments and prompts (cli.md §1 Interactive, §4.1)', () => {
  it('is interactive only with two TTYs, CI unset, and neither --json nor --yes', () => {
    const base = { stdinIsTTY: true, stdoutIsTTY: true, env: {}, json: false, yes: false }
    assert.equal(isInteractive(base), true)
    assert.equal(isInteractive({ ...base, stdinIsTTY: false }), false)
    assert.equal(isInteractive({ ...base, stdoutIsTTY: false }), false)
    assert.equal(isInteractive({ ...base, env: { CI: 'true' } }), false)
    assert.equal(isInteractive({ ...base, env: { CI: '' } }), false)
    assert.equal(isInteractive({ ...base, json: true }), false)
    assert.equal(isInteractive({ ...base, yes: true }), false)
  })

  it('non-interactive: NAME is required (exit 2), the template defaults to bare', async () => {
    await assert.rejects(resolveInitRequest({ cwd: '/w' }), failsWith('INVALID_ARGUMENT', ExitCode.Usage, 'Missing argument NAME'))
    const request = await resolveInitRequest({ name: 'my-app', cwd: '/w' })
    assert.equal(request.name, 'my-app')
    assert.equal(request.template.name, 'bare')
    assert.equal(request.directory, '/w/my-app')
  })

  it('checks given values before asking anything', async () => {
    const prompter = scripted({})
    await assert.rejects(resolveInitRequest({ name: 'Bad Name', cwd: '/w' }, prompter), failsWith('INVALID_ARGUMENT', ExitCode.Usage, /^Invalid project name 'Bad Name'/))
    await assert.rejects(resolveInitRequest({ template: 'nope', cwd: '/w' }, prompter), failsWith('UNKNOWN_TEMPLATE', ExitCode.Usage, /^Unknown template 'nope'/))
    assert.deepEqual(prompter.asked, [])
  })

  it('interactive: asks for NAME and template when missing, defaulting the name to the --dir name', async () => {
    const prompter = scripted({ name: 'shop', template: 'quickstart' })
    const request = await resolveInitRequest({ cwd: '/w' }, prompter)
    assert.deepEqual(prompter.asked, ['name (my-app)', 'template (bare; bare quickstart starter link-shortener browser python rust worker)'])
    assert.equal(request.name, 'shop')
    assert.equal(request.template.name, 'quickstart')
    assert.equal(request.directory, '/w/shop')

    const fromDir = scripted({})
    const inDir = await resolveInitRequest({ dir: 'code/billing-api', template: 'worker', cwd: '/w' }, fromDir)
    assert.deepEqual(fromDir.asked, ['name (billing-api)'])
    assert.equal(inDir.name, 'billing-api')
    assert.equal(inDir.directory, '/w/code/billing-api')
  })

  it('interactive: asks nothing that was given', async () => {
    const prompter = scripted({})
    await resolveInitRequest({ name: 'x', template: 'bare', cwd: '/w' }, prompter)
    assert.deepEqual(prompter.asked, [])
  })
})

describe('svc-sdk specifier (cli.md §4.1)', () => {
  function cliRoot(files: Record<string, string>): string {
    const root = fresh()
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, file)), { recursive: true })
      writeFileSync(join(root, file), text)
    }
    return root
  }

  it('is ^<cli version> when the CLI has no svc-sdk tarball', () => {
    assert.deepEqual(dependencySpecifiers(new Set(), 'workers/w', '0.4.0'), { 'svc-sdk': '^0.4.0', 'svc-helpers': '^0.4.0' })
    assert.equal(sdkTarball(cliRoot({}), '0.4.0'), undefined)
    assert.equal(sdkTarball(cliRoot({ 'packages/sdk/package.json': JSON.stringify({ name: 'not-svc' }) }), '0.4.0'), undefined)
  })

  it('is a file: path relative to the package.json, to the project-local vendor/ tarball (issue 11)', () => {
    assert.deepEqual(dependencySpecifiers(new Set(['svc-sdk']), 'workers/w', '0.4.0'), { 'svc-sdk': 'file:../../vendor/svc-sdk-0.4.0.tgz', 'svc-helpers': '^0.4.0' })
    assert.equal(dependencySpecifiers(new Set(['svc-sdk']), '', '0.4.0')['svc-sdk'], 'file:vendor/svc-sdk-0.4.0.tgz')
  })

  it('takes the tarball an installed CLI ships in vendor/', () => {
    const root = cliRoot({ 'vendor/svc-sdk-0.4.0.tgz': 'tgz' })
    assert.equal(sdkTarball(root, '0.4.0'), join(root, 'vendor/svc-sdk-0.4.0.tgz'))
  })

  it('packs the checkout\'s SDK once, then reuses the tarball until an SDK file changes', () => {
    const first = sdkTarball(ROOT, '0.1.0')
    assert.equal(first, join(ROOT, 'dist/vendor/svc-sdk-0.1.0.tgz'))
    const made = statSync(first).mtimeMs
    assert.equal(sdkTarball(ROOT, '0.1.0'), first)
    assert.equal(statSync(first).mtimeMs, made)
  })

  it('is written into every dependency field of a package.json, other entries untouched', () => {
    const text = JSON.stringify({ name: 'w', dependencies: { 'svc-sdk': '^0.1.0', zod: '^3' }, devDependencies: { tsx: '^4' } }, null, 2)
    const out = JSON.parse(withDependencySpecifiers(text, { 'svc-sdk': 'file:../../vendor/svc-sdk-0.1.0.tgz', 'svc-helpers': '^0.1.0' }))
    assert.deepEqual(out, { name: 'w', dependencies: { 'svc-sdk': 'file:../../vendor/svc-sdk-0.1.0.tgz', zod: '^3' }, devDependencies: { tsx: '^4' } })
  })

  it('package managers other than npm are written into JavaScript and TypeScript manifests only', () => {
    const ts = '# mine\nname: w\nruntime:\n  kind: typescript\n  package_manager: npm # default\n  entry: src/index.ts\n'
    assert.equal(withPackageManager(ts, 'npm'), ts)
    assert.equal(withPackageManager(ts, 'pnpm'), ts.replace('package_manager: npm', 'package_manager: pnpm'))
    const py = 'name: w\nruntime:\n  kind: python\n  entry: app\n'
    assert.equal(withPackageManager(py, 'bun'), py)
  })
})

describe('.svc/project.ini (cli.md §2)', () => {
  it('holds project_id, project_name, template and created_with in key = value lines', () => {
    const dir = fresh()
    assert.equal(writeProjectIni(dir, { project_name: 'demo', template: 'bare', created_with: '0.1.0' }), '.svc/project.ini')
    const text = readFileSync(join(dir, '.svc/project.ini'), 'utf8')
    assert.match(text, /^project_id = [0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\nproject_name = demo\ntemplate = bare\ncreated_with = 0\.1\.0\n$/)
    assert.deepEqual(Object.keys(parseProjectIni(text)), ['project_id', 'project_name', 'template', 'created_with'])
  })

  it('keeps the project_id of an existing file; replaces one that is not a UUID', () => {
    const dir = fresh()
    writeProjectIni(dir, { project_name: 'a', template: 'bare', created_with: '0.1.0' })
    const first = parseProjectIni(readFileSync(join(dir, '.svc/project.ini'), 'utf8')).project_id
    writeProjectIni(dir, { project_name: 'b', template: 'quickstart', created_with: '0.2.0' })
    const second = parseProjectIni(readFileSync(join(dir, '.svc/project.ini'), 'utf8'))
    assert.deepEqual(second, { project_id: first, project_name: 'b', template: 'quickstart', created_with: '0.2.0' })

    const file = join(fresh(), 'project.ini')
    mkdirSync(join(file, '..'))
    writeFileSync(file, '; old\nproject_id = 42\n')
    assert.notEqual(projectIdentity(file, { project_name: 'c', template: 'bare', created_with: '1' }).project_id, '42')
    assert.equal(formatProjectIni({ project_id: 'u', project_name: 'p', template: 't', created_with: 'v' }), 'project_id = u\nproject_name = p\ntemplate = t\ncreated_with = v\n')
  })
})

describe('next steps (cli.md §4.1)', () => {
  it('prints the block of cli.md §4.1 for a project, comments aligned', () => {
    const steps = nextSteps(requireTemplate('quickstart'), '/w/my-app', '/w')
    assert.equal(
      formatNextSteps(steps),
      [
        'Next steps:',
        '  cd my-app',
        '  svc                                         # engine, built-ins and workers',
        '  svc trigger math::add_two_numbers a=1 b=2   # calls math::add in math-worker',
        '',
      ].join('\n'),
    )
  })

  it('leaves out cd for the current directory and quotes odd paths', () => {
    assert.deepEqual(
      nextSteps(requireTemplate('bare'), '/w', '/w').map((s) => s.command),
      ['svc'],
    )
    assert.equal(nextSteps(requireTemplate('bare'), '/w/my app', '/w')[0]!.command, "cd 'my app'")
  })

  it('tells a new worker directory to be added with svc worker add', () => {
    assert.deepEqual(
      nextSteps(requireTemplate('worker'), '/w/workers/billing', '/w').map((s) => s.command),
      ['svc worker add ./workers/billing'],
    )
  })
})

describe('installing dependencies (cli.md §4.1)', () => {
  it('runs in each directory the template put a package.json in, the project first', () => {
    assert.deepEqual(installDirectories(['config.yaml', 'workers/b/package.json', 'package.json', 'workers/a/package.json', 'workers/a/src/index.ts']), [
      '',
      'workers/a',
      'workers/b',
    ])
    assert.deepEqual(installDirectories(['.gitignore', 'config.yaml']), [])
  })

  it('uses <manager> install', () => {
    assert.deepEqual(installCommand('pnpm'), { file: 'pnpm', args: ['install'] })
    assert.deepEqual(installCommand('npm'), { file: 'npm', args: ['install', '--no-audit', '--no-fund'] })
  })

  it('reports a failed install with the message of cli.md §4.1', async () => {
    const dir = fresh()
    mkdirSync(join(dir, 'workers', 'w'), { recursive: true })
    // A package.json npm cannot parse: a real npm failure, without the network.
    writeFileSync(join(dir, 'workers', 'w', 'package.json'), '{ "name": "w", ')
    const outcome = await runInstall(dir, 'workers/w', 'npm')
    assert.equal(outcome.ok, false)
    assert.match(outcome.reason!, /^npm exited with \d+$/)
    const error = installFailedError(outcome, 'npm', 'Project', './demo')
    assert.equal(error.exitCode, ExitCode.Failure)
    assert.equal(error.code, 'INSTALL_FAILED')
    assert.equal(error.message, `Project created, but installing dependencies failed in workers/w (${outcome.reason}). Run npm install there.`)
    assert.equal(installFailedError({ ...outcome, directory: '' }, 'npm', 'Worker', './billing').message.startsWith('Worker created, but installing dependencies failed in ./billing ('), true)
  })

  it('names a package manager that is not installed', async () => {
    const dir = fresh()
    mkdirSync(dir)
    const outcome = await runInstall(dir, '', 'no-such-manager' as 'npm')
    assert.deepEqual([outcome.ok, outcome.reason], [false, 'no-such-manager was not found'])
  })
})

describe('initProject', () => {
  const options = (over: Partial<InitOptions>): InitOptions => ({
    name: 'demo',
    template: 'bare',
    directory: fresh(),
    cwd: scratch,
    force: false,
    install: true,
    packageManager: 'npm',
    cliVersion: '0.1.0',
    cliRoot: ROOT,
    renderer: 'silent',
    ...over,
  })

  it('returns the --json result of cli.md §4.1', async () => {
    const opts = options({ template: 'quickstart', install: false })
    const result = await initProject(opts)
    assert.deepEqual(Object.keys(result), ['project', 'directory', 'template', 'files', 'installed', 'next_steps'])
    assert.equal(result.directory, opts.directory)
    assert.equal(result.installed, false)
    assert.ok(result.files.includes('.svc/project.ini'))
    assert.ok(result.files.includes('workers/math-worker/src/index.ts'))
    assert.deepEqual(result.files, [...result.files].sort())
    assert.equal(result.next_steps.at(-1), 'svc trigger math::add_two_numbers a=1 b=2')
  })

  it('a template without package.json has nothing left to install', async () => {
    const result = await initProject(options({}))
    assert.equal(result.installed, true)
  })

  it('writes nothing into a non-empty directory without --force', async () => {
    const opts = options({})
    mkdirSync(opts.directory)
    writeFileSync(join(opts.directory, 'keep.txt'), 'mine')
    await assert.rejects(initProject(opts), failsWith('DIRECTORY_NOT_EMPTY', ExitCode.Failure, /is not empty/))
    assert.equal(readFileSync(join(opts.directory, 'keep.txt'), 'utf8'), 'mine')
    const forced = await initProject({ ...opts, force: true })
    assert.ok(forced.files.includes('config.yaml'))
    assert.equal(readFileSync(join(opts.directory, 'keep.txt'), 'utf8'), 'mine')
  })
})
