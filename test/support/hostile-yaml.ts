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
