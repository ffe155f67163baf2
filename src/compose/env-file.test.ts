import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EnvFileError, parseEnvFile } from './env-file.ts'

describe('parseEnvFile', () => {
  it('reads names, quotes, comments and export', () => {
    const entries = parseEnvFile(
      ['# settings', '', 'export DB_URL="sqlite:./x.db"', "RAW='a \\n b'", 'LEVEL=debug # verbose', 'ESC="x\\ny\\"z"', 'EMPTY=', 'HASH=a#b'].join('\n'),
    )
    assert.deepEqual(
      entries.map((e) => [e.name, e.value, e.line]),
      [
        ['DB_URL', 'sqlite:./x.db', 3],
        ['RAW', 'a \\n b', 4],
        ['LEVEL', 'debug', 5],
        ['ESC', 'x\ny"z', 6],
        ['EMPTY', '', 7],
        ['HASH', 'a#b', 8],
      ],
    )
  })

  it('reports bad lines with their number', () => {
    assert.throws(() => parseEnvFile('A=1\nnot a variable\n'), (err: unknown) => err instanceof EnvFileError && err.line === 2)
    assert.throws(() => parseEnvFile('1A=1\n'), /not a valid variable name/)
    assert.throws(() => parseEnvFile('A="open\n'), /unterminated double quote/)
  })
})
