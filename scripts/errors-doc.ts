/**
 * Generates `docs/reference/errors.md` from the error catalogue (`catalogue()` of
 * `svc-protocol/errors`): one row per code with who produces it, its cause (`when`), the fix, its
 * HTTP status and the exit code of the CLI (cli.md §1.1).
 *
 * Usage: `npm run docs:errors` writes the file; `node scripts/errors-doc.ts --check` exits 1 when
 * the committed file differs from what the catalogue gives (the test in errors-doc.test.ts does the same).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { catalogue, EXIT_CODES, type CatalogueEntry, type ErrorSource, type ExitClass } from 'svc-protocol/errors'

/** Absolute path of the generated file. */
export const ERRORS_DOC_PATH = fileURLToPath(new URL('../docs/reference/errors.md', import.meta.url))

const SOURCE_NAMES: Record<ErrorSource, string> = {
  engine: 'engine',
  sdk: 'SDK',
  provider: 'trigger provider',
  http: 'HTTP worker',
  state: 'state worker',
  queue: 'queue worker',
  pubsub: 'pub/sub worker',
  configuration: 'configuration worker',
  database: 'database worker',
  console: 'console',
  cli: 'CLI',
}

const EXIT_NAMES: Record<ExitClass, string> = {
  failure: 'failed',
  usage: 'usage',
  unreachable: 'unreachable',
  timeout: 'timed out',
}

/** Escapes text for one Markdown table cell. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ')
}

function row(entry: CatalogueEntry): string {
  const producedBy = entry.source.map((s) => SOURCE_NAMES[s]).join(', ') + (entry.wire ? '' : ' (client side only)')
  const exit = `${EXIT_CODES[entry.exit]} (${EXIT_NAMES[entry.exit]})`
  return `| \`${entry.code}\` | ${cell(producedBy)} | ${cell(entry.when)} | ${cell(entry.fix)} | ${entry.status} | ${exit} |`
}

/** The Markdown text of `docs/reference/errors.md` for `entries` (default: the whole catalogue). */
export function renderErrorsDoc(entries: readonly CatalogueEntry[] = catalogue()): string {
  return [
    '# Error codes',
    '',
    '<!-- Generated from the catalogue in packages/protocol/src/errors.ts by `npm run docs:reference` (or `npm run docs:errors`); do not edit by hand. -->',
    '',
    'Every failure svc reports carries a stable code. Engine, built-in workers, SDK and CLI share one',
    'catalogue (`svc-protocol/errors`: `Codes`, `Errors`, `catalogue()`), so a code means the same thing',
    'everywhere. On the wire a failure is `{"code", "message", "stacktrace"?}` (protocol.md §7.1); message',
    'templates are in protocol.md §7.2 and builtins.md. Handlers may also fail with codes of their own.',
    '',
    '- **HTTP status**: the status of the answer when the error itself is the response (HTTP worker, console).',
    '  Codes outside the catalogue answer 500.',
    '- **CLI exit code**: how a `svc` command exits when its operation fails with the code (cli.md §1.1).',
    '  `svc trigger` exits 1 for every error the invoked function returns, whatever its code; only its own',
    '  deadline (`TIMEOUT`, 4) and an unreachable engine (3) differ (cli.md §4.6).',
    '- **Client side only**: produced inside an SDK, never sent on the wire.',
    '- **Cause** and **Fix** come from the catalogue entry; the CLI prints its `Hint:` lines from the',
    '  same entries. Codes the CLI itself produces that scripts test (`--json`) are listed with the',
    '  producer CLI; other failures of the CLI (port in use, no config.yaml, …) are in',
    '  [troubleshooting.md](troubleshooting.md).',
    '',
    '| Code | Produced by | Cause | Fix | HTTP status | CLI exit code |',
    '|---|---|---|---|---|---|',
    ...entries.map(row),
    '',
  ].join('\n')
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = renderErrorsDoc()
  if (process.argv.includes('--check')) {
    let current = ''
    try {
      current = readFileSync(ERRORS_DOC_PATH, 'utf8')
    } catch {
      // missing counts as out of date
    }
    if (current !== text) {
      console.error('docs/reference/errors.md is out of date; run npm run docs:errors')
      process.exit(1)
    }
  } else {
    writeFileSync(ERRORS_DOC_PATH, text)
    console.log(`wrote ${ERRORS_DOC_PATH}`)
  }
}
