/**
 * The project a worker command acts on (cli.md §1 project discovery): the config.yaml that
 * `svc start` would use, its directory, and the engine URL.
 */
import { existsSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { CliError, ExitCode } from '../lib/errors.ts'
import { displayPath, locateConfig, resolveEngine } from '../lib/project.ts'
import type { EngineTarget } from '../lib/project.ts'

export interface WorkerProject {
  /** Absolute path of config.yaml. */
  configPath: string
  /** config.yaml as named in messages (as given with --config, else relative to cwd). */
  configLabel: string
  /** The project root: the directory holding config.yaml. */
  root: string
  /** The directory the command runs in; paths in messages are shown relative to it. */
  cwd: string
  /** Engine URL of cli.md §1: SVC_URL, else the first listener of config.yaml, else the default. */
  engineUrl: string
  /** Where `engineUrl` came from and whose engine is there (issue 11). */
  engine?: EngineTarget
}

/**
 * Finds the project like `svc start` does: `--config <file>`, else config.yaml in `cwd` or the
 * nearest parent. Worker commands edit that file, so unlike `svc start` they need one.
 *
 * @throws {CliError} exit 2: `CONFIG_NOT_FOUND` when no config.yaml is found or `--config` names a
 *   missing file
 */
export function openProject(options: { configFlag?: string | undefined; cwd: string; env?: NodeJS.ProcessEnv }): WorkerProject {
  const located = locateConfig(options.configFlag, options.cwd)
  if (located.path === undefined) {
    throw new CliError({
      code: 'CONFIG_NOT_FOUND',
      message: `No config.yaml in ${options.cwd} or any parent directory`,
      hint: 'run svc project init to create a project, or pass --config <file>',
      exitCode: ExitCode.Usage,
    })
  }
  if (!existsSync(located.path) || !statSync(located.path).isFile()) {
    throw new CliError({ code: 'CONFIG_NOT_FOUND', message: `Config file ${located.label} not found`, exitCode: ExitCode.Usage })
  }
  const engineOptions: Parameters<typeof resolveEngine>[0] = { cwd: options.cwd, configFlag: options.configFlag }
  if (options.env !== undefined) engineOptions.env = options.env
  const engine = resolveEngine(engineOptions)
  return {
    configPath: located.path,
    configLabel: located.label ?? displayPath(located.path, options.cwd),
    root: dirname(located.path),
    cwd: options.cwd,
    engineUrl: engine.url,
    engine,
  }
}

/** A project file as shown to the user: relative to the working directory when below it. */
export function shown(project: WorkerProject, path: string): string {
  return displayPath(path, project.cwd)
}
