/**
 * `env_file` files of compose containers (cli.md §2.3, §5.2): `NAME=value` lines in the common
 * dotenv form. Values are taken literally (no placeholder expansion), as most dotenv readers do.
 */

/** One variable and the 1-based line it was set on. */
export interface EnvFileEntry {
  name: string
  value: string
  line: number
}

/** A line that is not `NAME=value`, a comment or blank. */
export class EnvFileError extends Error {
  override readonly name = 'EnvFileError'
  readonly line: number

  constructor(line: number, problem: string) {
    super(problem)
    this.line = line
  }
}

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/

/**
 * Parses dotenv text: blank lines and `#` comments are skipped, an `export ` prefix is allowed,
 * values may be single-quoted (literal), double-quoted (`\n`, `\t`, `\"`, `\\` escapes) or bare
 * (trimmed, ` #` starts a comment). Later lines win.
 *
 * @throws {EnvFileError} for a line without `=`, a bad name or an unterminated quote.
 * @example parseEnvFile('# db\nexport DB_URL="sqlite:./x.db"\nLEVEL=debug # verbose\n')
 * // [{ name: 'DB_URL', value: 'sqlite:./x.db', line: 2 }, { name: 'LEVEL', value: 'debug', line: 3 }]
 */
export function parseEnvFile(text: string): EnvFileEntry[] {
  const out: EnvFileEntry[] = []
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1
    let line = lines[i]!.trim()
    if (line === '' || line.startsWith('#')) continue
    if (line.startsWith('export ')) line = line.slice('export '.length).trimStart()
    const eq = line.indexOf('=')
    if (eq < 0) throw new EnvFileError(lineNo, `expected NAME=value, got '${line}'`)
    const name = line.slice(0, eq).trim()
    if (!NAME.test(name)) throw new EnvFileError(lineNo, `'${name}' is not a valid variable name`)
    const rest = line.slice(eq + 1).trim()
    let value: string
    if (rest.startsWith('"')) {
      const end = closingQuote(rest, '"')
      if (end < 0) throw new EnvFileError(lineNo, `unterminated double quote in the value of ${name}`)
      value = rest.slice(1, end).replace(/\\([nrt"\\])/g, (_m, c: string) => ({ n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' })[c]!)
    } else if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1)
      if (end < 0) throw new EnvFileError(lineNo, `unterminated single quote in the value of ${name}`)
      value = rest.slice(1, end)
    } else {
      const comment = rest.search(/\s#/)
      value = (comment < 0 ? rest : rest.slice(0, comment)).trim()
    }
    out.push({ name, value, line: lineNo })
  }
  return out
}

function closingQuote(text: string, quote: string): number {
  for (let i = 1; i < text.length; i++) {
    if (text[i] === '\\') i++
    else if (text[i] === quote) return i
  }
  return -1
}
