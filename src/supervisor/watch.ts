/**
 * What the worker watcher ignores (cli.md §5.4), as a predicate for chokidar (which takes no globs
 * since version 4), and the small glob dialect of `watch.ignore`.
 */
import { isAbsolute, relative, resolve, sep } from 'node:path'

/** Directory (or file) names ignored at any depth (cli.md §5.4). */
export const IGNORED_NAMES = [
  'node_modules',
  '.git',
  'dist',
  'build',
  'out',
  'coverage',
  'target',
  '.venv',
  'venv',
  '__pycache__',
  '.pytest_cache',
  '.mypy_cache',
  '.next',
  '.turbo',
  '.cache',
  '.svc',
] as const

/**
 * Patterns ignored besides {@link IGNORED_NAMES} (cli.md §5.4): `*.log`, and the files editors and
 * atomic writers make beside the file they save (issue 21: one save of config.yaml in a worker at
 * the project root restarted it several times): backups (`index.ts~`), vim's swap files and its
 * write test (`.index.ts.swp`, `4913`), emacs's autosave and lock files (`#index.ts#`, `.#index.ts`),
 * JetBrains' safe-write files, and temporary files (`*.tmp`: svc's own config.yaml, settings and
 * state writers rename `.<name>.<pid>.tmp` over the file).
 */
export const IGNORED_PATTERNS = ['*.log', '*~', '*.swp', '*.swo', '*.swx', '4913', '#*#', '.#*', '*___jb_tmp___', '*___jb_old___', '*.tmp', '.DS_Store'] as const

/**
 * Converts a glob to a regular expression over `/`-separated relative paths: `*` and `?` stay
 * within one segment, `**` spans segments (`a/**` also matches `a` itself, `**\/b` matches `b` at
 * any depth), `{x,y}` is an alternative, `[…]` a character class.
 */
export function globToRegExp(glob: string): RegExp {
  let out = ''
  let i = 0
  let braces = 0
  while (i < glob.length) {
    const c = glob[i]!
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const atStart = i === 0 || glob[i - 1] === '/'
        const slashAfter = glob[i + 2] === '/'
        const atEnd = i + 2 === glob.length
        if (atStart && slashAfter) {
          out += '(?:.*/)?'
          i += 3
          continue
        }
        if (atStart && atEnd && i > 0) {
          // `a/**`: `a` itself and everything below it; the `/` was already emitted.
          out = out.slice(0, -1) + '(?:/.*)?'
          i += 2
          continue
        }
        out += '.*'
        i += 2
        continue
      }
      out += '[^/]*'
    } else if (c === '?') out += '[^/]'
    else if (c === '[') {
      const close = glob.indexOf(']', i + 1)
      if (close < 0) out += '\\['
      else {
        const body = glob.slice(i + 1, close).replace(/^!/, '^').replace(/\\/g, '\\\\')
        out += `[${body}]`
        i = close
      }
    } else if (c === '{') {
      braces++
      out += '(?:'
    } else if (c === '}' && braces > 0) {
      braces--
      out += ')'
    } else if (c === ',' && braces > 0) out += '|'
    else out += c.replace(/[.+^$()|\\]/g, '\\$&')
    i++
  }
  return new RegExp(`^${out}$`)
}

export interface IgnoreOptions {
  /** Absolute worker directory (the watched root). */
  directory: string
  /** The manifest's `watch.ignore` globs, relative to the worker directory. */
  patterns: readonly string[]
  /** Absolute paths ignored with everything below them (project config.yaml, config/, log files). */
  paths: readonly string[]
}

/**
 * The predicate chokidar's `ignored` option gets: true for paths the watcher must not report or
 * descend into. A glob without `/` matches a file or directory name at any depth (`*.tmp`,
 * `fixtures`); a glob with `/` matches the path relative to the worker directory (`src/gen/**`).
 * A path is also ignored when any directory above it is.
 */
export function ignoreMatcher(options: IgnoreOptions): (path: string) => boolean {
  const root = resolve(options.directory)
  const names = new Set<string>(IGNORED_NAMES)
  const nameGlobs: RegExp[] = []
  const pathGlobs: RegExp[] = []
  for (const pattern of [...IGNORED_PATTERNS, ...options.patterns]) {
    const clean = pattern.replace(/^\.\//, '').replace(/\/+$/, '')
    if (clean === '') continue
    if (clean.includes('/')) pathGlobs.push(globToRegExp(clean.replace(/^\//, '')))
    else nameGlobs.push(globToRegExp(clean))
  }
  const paths = options.paths.map((p) => resolve(p))
  return (path: string) => {
    const absolute = isAbsolute(path) ? path : resolve(root, path)
    for (const p of paths) if (absolute === p || absolute.startsWith(p + sep)) return true
    const rel = relative(root, absolute)
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return false
    const segments = rel.split(sep)
    for (let n = 0; n < segments.length; n++) {
      const name = segments[n]!
      if (names.has(name) || nameGlobs.some((g) => g.test(name))) return true
      if (pathGlobs.length > 0) {
        const prefix = segments.slice(0, n + 1).join('/')
        if (pathGlobs.some((g) => g.test(prefix))) return true
      }
    }
    return false
  }
}
