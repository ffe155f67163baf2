/**
 * The template catalogue of `svc project init` (cli.md §4.1) and the files each template copies.
 * Template files live in `templates/<name>/` of the CLI package.
 */
import { readdirSync } from 'node:fs'
import { join, posix } from 'node:path'
import { CliError, ExitCode } from '../lib/errors.ts'
import type { TemplateInfo } from './types.ts'

/** The template used when `--template` is not given. */
export const DEFAULT_TEMPLATE = 'bare'

/** Available templates, in the order cli.md §4.1 lists them. */
export const TEMPLATES: readonly TemplateInfo[] = [
  {
    name: 'bare',
    description: 'config.yaml, worker-compose.yaml, .gitignore and README.md; no workers (default)',
    kind: 'project',
  },
  {
    name: 'quickstart',
    description: 'bare + two TypeScript workers: math::add, and math::add_two_numbers calling it on POST /math/add-two-numbers',
    kind: 'project',
    base: 'bare',
    tryIt: { command: 'svc trigger math::add_two_numbers a=1 b=2', comment: 'calls math::add in math-worker' },
  },
  {
    name: 'starter',
    description: 'bare + one TypeScript worker at the project root: GET /hello with a state counter, a cron schedule and a live stream',
    kind: 'project',
    base: 'bare',
    tryIt: { command: "curl -s 'localhost:3111/hello?name=Ada'", comment: 'counts greetings in state, records them in the activity stream' },
  },
  {
    name: 'link-shortener',
    description: 'bare + a JavaScript worker serving short links over HTTP, kept in the state worker',
    kind: 'project',
    base: 'bare',
    tryIt: {
      command: `curl -s -X POST localhost:3111/links -H 'content-type: application/json' -d '{"url":"https://nodejs.org"}'`,
      comment: 'create a short link',
    },
  },
  {
    name: 'browser',
    description: 'bare + a web page that is an svc worker (svc-browser-sdk), served and admitted by a TypeScript worker, on an rbac listener',
    kind: 'project',
    base: 'bare',
    tryIt: { command: "curl -s 'localhost:3111/ask-browser?name=Ada'", comment: 'after opening the page the worker prints: Node calls the page' },
    browserSdk: 'public/svc-browser-sdk.js',
  },
  {
    name: 'python',
    description: 'bare + a Python worker (math::add, GET /math/hello) and the quickstart\'s TypeScript caller of math::add on POST /math/add-two-numbers',
    kind: 'project',
    base: 'bare',
    include: ['quickstart/workers/caller-worker'],
    sdks: ['python'],
    worker: 'workers/math-worker',
    tryIt: { command: 'svc trigger math::add_two_numbers a=1 b=2', comment: 'TypeScript calls math::add in the Python worker' },
  },
  {
    name: 'rust',
    description: 'bare + a Rust worker (math::add, GET /math/hello) and the quickstart\'s TypeScript caller of math::add on POST /math/add-two-numbers',
    kind: 'project',
    base: 'bare',
    include: ['quickstart/workers/caller-worker'],
    sdks: ['rust'],
    worker: 'workers/math-worker',
    tryIt: { command: 'svc trigger math::add_two_numbers a=1 b=2', comment: 'TypeScript calls math::add in the Rust worker' },
  },
  {
    name: 'worker',
    description: 'one TypeScript worker directory registering <name>::hello, no project files; add it with svc worker add',
    kind: 'worker',
  },
]

/** The catalogue entry for `name`, or undefined. */
export function findTemplate(name: string): TemplateInfo | undefined {
  return TEMPLATES.find((t) => t.name === name)
}

/**
 * The catalogue entry for `name`.
 * @throws {CliError} `Unknown template 'x'. Available templates: bare, …` (code `UNKNOWN_TEMPLATE`, exit 2)
 */
export function requireTemplate(name: string): TemplateInfo {
  const found = findTemplate(name)
  if (found) return found
  throw new CliError({
    code: 'UNKNOWN_TEMPLATE',
    message: `Unknown template '${name}'. Available templates: ${TEMPLATES.map((t) => t.name).join(', ')}`,
    exitCode: ExitCode.Usage,
    hint: 'svc project init --list-templates describes them',
  })
}

/** The `--list-templates` table: a header, then one line per template, columns aligned. */
export function formatTemplateTable(templates: readonly TemplateInfo[] = TEMPLATES): string {
  const rows = [['TEMPLATE', 'DESCRIPTION'], ...templates.map((t) => [t.name, t.description])]
  const width = Math.max(...rows.map(([name]) => name!.length)) + 2
  return rows.map(([name, description]) => `${name!.padEnd(width)}${description}\n`).join('')
}

/**
 * Names that npm leaves out of or renames in a published package: template files carry them as
 * `_<name>` and are renamed on copy.
 */
const RENAMED_ON_COPY: Readonly<Record<string, string>> = {
  _gitignore: '.gitignore',
  _npmrc: '.npmrc',
  _npmignore: '.npmignore',
}

/** Left behind when someone installs or runs a template in place; never copied. */
const NEVER_COPIED = new Set(['node_modules', '.svc', '.DS_Store', 'package-lock.json', '.venv', '__pycache__', 'target'])

/** One file a template writes. */
export interface TemplateFile {
  /** Absolute path of the template file. */
  source: string
  /** Path in the new project, `/`-separated, with `_gitignore`-style names restored. */
  path: string
}

/** The directory holding the templates of the CLI package rooted at `cliRoot`. */
export function templatesDirectory(cliRoot: string): string {
  return join(cliRoot, 'templates')
}

/**
 * The files `template` writes: its base template's files, then its `include` folders', then its
 * own (a file of the same path replaces an earlier layer's). Sorted by path.
 */
export function templateFiles(cliRoot: string, template: TemplateInfo): TemplateFile[] {
  const byPath = new Map<string, TemplateFile>()
  const root = templatesDirectory(cliRoot)
  const layers: Array<[string, string]> = [
    ...(template.base === undefined ? [] : [[template.base, ''] as [string, string]]),
    ...(template.include ?? []).map((folder): [string, string] => [folder, folder.split('/').slice(1).join('/')]),
    [template.name, ''],
  ]
  for (const [folder, prefix] of layers) {
    for (const file of walk(join(root, ...folder.split('/')), prefix)) byPath.set(file.path, file)
  }
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** The files of one folder under `templates/` (`python/workers/math-worker`), at its root. Sorted by path. */
export function templateFolderFiles(cliRoot: string, folder: string): TemplateFile[] {
  return walk(join(templatesDirectory(cliRoot), ...folder.split('/')), '').sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** The output name of a template file name. */
export function outputName(name: string): string {
  return RENAMED_ON_COPY[name] ?? name
}

function walk(directory: string, prefix: string): TemplateFile[] {
  const files: TemplateFile[] = []
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    if (NEVER_COPIED.has(entry.name)) continue
    const source = join(directory, entry.name)
    if (entry.isDirectory()) files.push(...walk(source, posix.join(prefix, entry.name)))
    else if (entry.isFile()) files.push({ source, path: posix.join(prefix, outputName(entry.name)) })
  }
  return files
}
