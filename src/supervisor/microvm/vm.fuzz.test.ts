/**
 * Hostile `-M help` answers for the machine choice (vm.ts `machineAvailable`, the q35 fallback of
 * cli.md §5.7), with fast-check: any text a patched, localized or broken QEMU prints never throws,
 * and `microvm` counts as available only from a line that names exactly that machine (or when the
 * answer cannot be read, so the boot decides).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { machineAvailable } from './vm.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-vm-fuzz-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

const line = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('microvm              microvm (i386)', 'microvm', 'microvm\t', ' microvm  indented', 'microvm-2.0   not it', 'xmicrovm  not it', 'q35  Standard PC', 'Supported machines are:', '\u0000microvm x', 'MICROVM  upper'),
)

describe('the -M help answer (fast-check)', () => {
  it('never throws; microvm is available exactly when a line starts with "microvm" and a blank', () => {
    let n = 0
    fc.assert(
      fc.property(fc.array(line, { maxLength: 6 }), (lines) => {
        const text = lines.join('\n')
        const data = join(scratch, `answer${++n}`)
        writeFileSync(data, text)
        const qemu = join(scratch, `qemu${n}`)
        writeFileSync(qemu, `#!/bin/sh\ncat '${data}'\n`, { mode: 0o755 })
        assert.equal(machineAvailable(qemu, 'microvm'), /^microvm\s/m.test(text))
      }),
      { numRuns: 60 },
    )
  })
})
