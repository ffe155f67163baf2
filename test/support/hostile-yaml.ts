/** YAML documents written to hurt a reader, for the tests of every YAML file svc reads (issue 16). */

/**
 * The classic "billion laughs": nine levels of nine aliases each, 10^9 strings once expanded.
 * The reader refuses it at `*lol4`, on line 5 of the block; `indent` prefixes each line.
 */
export function billionLaughs(indent = ''): string {
  const lines = [`${indent}lol1: &lol1 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]`]
  for (let level = 2; level <= 9; level++) {
    lines.push(`${indent}lol${level}: &lol${level} [${Array(9).fill(`*lol${level - 1}`).join(',')}]`)
  }
  return `${lines.join('\n')}\n`
}

/**
 * Pieces of YAML syntax for random texts: indicators, quotes, block scalars, tags, directives,
 * anchors and aliases (some cyclic), merge keys, a second document, and the field names of the
 * file under test (`keys`, e.g. `containers:` or `scripts:`), so random texts reach its checks too.
 * Join an array of them: `fc.array(fc.constantFrom(...yamlFragments(keys))).map((p) => p.join(''))`.
 */
export function yamlFragments(keys: readonly string[] = []): string[] {
  return [
    ...['a', 'key', '- ', '? ', ': ', ', ', '[', ']', '{', '}', '\n', '  ', '"', "'", '#', '---\n', '|\n', '>-\n', '!!str ', '!tag ', '\\', '%YAML 1.1\n', '<<: '],
    ...['&a ', '&b ', '*a', '*b', '*zz', '&a [*b, *a]', '&b {x: *a}', 'null', '~', '0x1F', '1e400', '-.inf', 'true', '""', '__proto__: 1\n'],
    ...keys.flatMap((key) => [`${key}:`, `${key}: `, `\n${key}:\n  `]),
  ]
}
