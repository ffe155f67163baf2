/**
 * The error of the shared YAML reader: a problem at a place in a named file.
 */

/** 1-based line and column. */
export interface Place {
  line: number
  column: number
}

/**
 * A YAML text svc refuses: not valid YAML, over a size, nesting or alias limit, or a duplicate
 * key. `message` points at the place, compiler style (cli.md §1):
 * `config.yaml:12:17: alias *lol4 expands the document too much (…)`, or
 * `config.yaml: <problem>` when the problem has no place (a file over the size limit).
 * Readers with their own error type (ConfigError, ManifestError, ComposeError) rebuild theirs
 * from `file`, `place` and `problem`.
 */
export class YamlError extends Error {
  override readonly name = 'YamlError'
  /** The file as the caller named it. */
  readonly file: string
  /** Where the problem is; undefined when it concerns the whole file. */
  readonly place: Place | undefined
  /** The message without the `file:line:col: ` prefix. */
  readonly problem: string

  constructor(file: string, place: Place | undefined, problem: string) {
    super(`${file}${place ? `:${place.line}:${place.column}` : ''}: ${problem}`)
    this.file = file
    this.place = place
    this.problem = problem
  }
}
