/**
 * The located error of every YAML file svc reads: a problem at a place in a named file.
 */

/** 1-based line and column. */
export interface Place {
  line: number
  column: number
}

/** Options of {@link YamlError}. */
export interface YamlErrorOptions {
  /** Stable code of the failure (`INVALID_MANIFEST`, `INVALID_COMPOSE_FILE`, …); default `INVALID_YAML`. */
  code?: string
  cause?: unknown
}

/**
 * A YAML text svc refuses, or a value in it the file's reader refuses: not valid YAML, over a
 * size, nesting or alias limit, a duplicate key, an unknown field, a wrong type. `message` points
 * at the place, compiler style (cli.md §1):
 * `config.yaml:12:17: alias *lol4 expands the document too much (…)`, or
 * `config.yaml: <problem>` when the problem has no place (a file over the size limit).
 *
 * The one located-error type of the YAML readers: the manifest's and the compose file's errors are
 * subclasses (`ManifestError`, `ComposeFileError`) with their own `code`, so a reader's syntax
 * errors and its own checks read alike and are caught alike (`instanceof YamlError`).
 */
export class YamlError extends Error {
  override readonly name: string = 'YamlError'
  /** The file as the caller named it. */
  readonly file: string
  /** Where the problem is; undefined when it concerns the whole file. */
  readonly place: Place | undefined
  /** The message without the `file:line:col: ` prefix. */
  readonly problem: string
  /** Stable code: `INVALID_YAML`, or the reader's (`INVALID_MANIFEST`, `INVALID_COMPOSE_FILE`, …). */
  readonly code: string

  constructor(file: string, place: Place | undefined, problem: string, options: YamlErrorOptions = {}) {
    super(`${file}${place ? `:${place.line}:${place.column}` : ''}: ${problem}`, options.cause === undefined ? undefined : { cause: options.cause })
    this.file = file
    this.place = place
    this.problem = problem
    this.code = options.code ?? 'INVALID_YAML'
  }

  /** 1-based line; undefined when the problem has no place in the file. */
  get line(): number | undefined {
    return this.place?.line
  }

  /** 1-based column; undefined when the problem has no place in the file. */
  get column(): number | undefined {
    return this.place?.column
  }

  /** `{code, message}`, as a compose call or a `--json` error carries it. */
  toBody(): { code: string; message: string } {
    return { code: this.code, message: this.message }
  }
}
