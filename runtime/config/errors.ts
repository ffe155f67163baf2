/**
 * Errors of the config.yaml loader (protocol.md §12, cli.md §2.1).
 */
import type { YamlError } from '../yaml/errors.ts'

/** Codes of {@link ConfigError}: an invalid file, or an explicit `--config` that does not exist. */
export type ConfigErrorCode = 'INVALID_CONFIG' | 'CONFIG_NOT_FOUND'

export interface ConfigErrorInit {
  /** The file name as the caller gave it (shown unchanged in the message). */
  file: string
  /** What is wrong, without the location prefix. */
  problem: string
  /** 1-based line of the offending key or value; undefined when the problem has no place in the file. */
  line?: number
  /** 1-based column. */
  column?: number
  code?: ConfigErrorCode
  /** Use `problem` as the whole message, without the file prefix. */
  plain?: boolean
}

/**
 * A config.yaml that cannot be used. `message` points at the place, compiler style:
 * `config.yaml:14:5: unknown built-in worker 'databse' (did you mean 'database'?)`, or
 * `config.yaml: <problem>` when no line applies. The CLI maps it to exit code 2 (cli.md §1.1).
 *
 * @example
 * try { loadConfig('config.yaml', { cwd }) }
 * catch (err) { if (err instanceof ConfigError) console.error(`Error: ${err.message}`) }
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
  readonly code: ConfigErrorCode
  readonly file: string
  readonly line: number | undefined
  readonly column: number | undefined
  /** The message without the `file:line:col: ` prefix. */
  readonly problem: string

  constructor(init: ConfigErrorInit) {
    const where =
      init.line === undefined ? init.file : `${init.file}:${init.line}${init.column === undefined ? '' : `:${init.column}`}`
    super(init.plain ? init.problem : `${where}: ${init.problem}`)
    this.code = init.code ?? 'INVALID_CONFIG'
    this.file = init.file
    this.line = init.line
    this.column = init.column
    this.problem = init.problem
  }

  /** The same problem as a YAML reader's error (size, syntax, nesting, aliases), `INVALID_CONFIG`. */
  static fromYaml(error: YamlError): ConfigError {
    const init: ConfigErrorInit = { file: error.file, problem: error.problem }
    if (error.place) {
      init.line = error.place.line
      init.column = error.place.column
    }
    return new ConfigError(init)
  }

  /** `Config file <path> not found` (cli.md §3 step 1), for a file named explicitly. */
  static notFound(file: string): ConfigError {
    return new ConfigError({ file, problem: `Config file ${file} not found`, code: 'CONFIG_NOT_FOUND', plain: true })
  }
}
