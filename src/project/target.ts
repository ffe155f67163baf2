/**
 * The target directory of `svc project init` (cli.md §4.1): `--dir`, else `./NAME`; it must be
 * absent or empty unless `--force`, where dotfiles (`.git`, an existing `.svc/project.ini`, …) do
 * not count.
 */
import { existsSync, readdirSync, statSync } from 'node:fs'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'

/**
 * Written into the target before the template is copied and removed when init succeeds: a
 * directory holding it is an init that did not finish (a failed install, Ctrl-C), which the next
 * `svc project init` completes without `--force`.
 */
export const INIT_MARKER = '.svc/init-incomplete'

/** True when `directory` holds an init that did not finish ({@link INIT_MARKER}). */
export function initIncomplete(directory: string): boolean {
  return existsSync(join(directory, ...INIT_MARKER.split('/')))
}
import { CliError, ExitCode } from '../lib/errors.ts'

/** The absolute target directory: `dir` resolved against `cwd`, else `<cwd>/<name>`. */
export function targetDirectory(cwd: string, name: string, dir: string | undefined): string {
  return resolve(cwd, dir ?? name)
}

/**
 * `directory` as the user would type it from `cwd`: `.`, `./my-app`, `./workers/w` below `cwd`,
 * else the absolute path.
 */
export function displayDirectory(directory: string, cwd: string): string {
  const rel = relative(cwd, directory)
  if (rel === '') return '.'
  if (isAbsolute(rel) || rel === '..' || rel.startsWith(`..${sep}`)) return directory
  return `./${rel.split(sep).join('/')}`
}

/** What is at the target before scaffolding. */
export interface TargetState {
  /** False when the directory does not exist yet. */
  exists: boolean
  /** Entries that are not dotfiles (non-empty only with `force`). */
  entries: string[]
}

/**
 * Checks the target directory.
 * @throws {CliError} `Directory ./my-app is not empty; pass --force to scaffold into it anyway`
 *   (`DIRECTORY_NOT_EMPTY`, exit 1); `./my-app exists and is not a directory` (`NOT_A_DIRECTORY`,
 *   exit 1, even with `force`)
 */
export function checkTargetDirectory(directory: string, cwd: string, force: boolean): TargetState {
  let stat
  try {
    stat = statSync(directory)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { exists: false, entries: [] }
    throw err
  }
  const shown = displayDirectory(directory, cwd)
  if (!stat.isDirectory()) {
    throw new CliError({
      code: 'NOT_A_DIRECTORY',
      message: `${shown} exists and is not a directory`,
      exitCode: ExitCode.Failure,
      hint: 'choose another NAME or --dir',
    })
  }
  const entries = readdirSync(directory).filter((name) => !name.startsWith('.')).sort()
  if (entries.length > 0 && !force && !initIncomplete(directory)) {
    throw new CliError({
      code: 'DIRECTORY_NOT_EMPTY',
      message: `Directory ${shown} is not empty; pass --force to scaffold into it anyway`,
      exitCode: ExitCode.Failure,
    })
  }
  return { exists: true, entries }
}
