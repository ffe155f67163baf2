/**
 * Hostile inputs for the usable-KVM probe (cli.md §5.7), with fast-check: any bytes in the per-boot
 * cache file (another svc version, a crash mid-write, a user's edit), any boot id, any module
 * names, any `SVC_MICROVM_ACCEL` value. Each property names what a user could otherwise see.
 */
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { BACKEND_CACHE_FILE, checkKvm } from './probe.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-probe-fuzz-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

const odd = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: fc.constantFrom(...'{}[]":,\n\u0000 é🙂kvm_intelamdpvmboot-hardwaresoftnone\\'.split('')), maxLength: 80 }),
  fc.constantFrom('', 'null', '[]', '{}', '{"boot_id":"b","kind":"hardware","module":"kvm_evil"}', '{"boot_id":"b","kind":"software","module":"x; rm -rf ~"}', '{"boot_id":"b","kind":"software","module":"kvm_pvm\\nsecond line"}'),
)

let n = 0
function host(modules: string[], bootId: string, cacheText: string | undefined): { options: Parameters<typeof checkKvm>[0]; cacheDir: string } {
  const root = join(scratch, `h${++n}`)
  mkdirSync(join(root, 'mods'), { recursive: true })
  for (const m of modules) mkdirSync(join(root, 'mods', m))
  writeFileSync(join(root, 'kvm'), '')
  writeFileSync(join(root, 'boot_id'), bootId)
  const cacheDir = join(root, 'cache')
  mkdirSync(cacheDir)
  if (cacheText !== undefined) writeFileSync(join(cacheDir, BACKEND_CACHE_FILE), cacheText)
  return {
    cacheDir,
    options: { platform: 'linux', devicePath: join(root, 'kvm'), sysModuleDir: join(root, 'mods'), procModulesPath: join(root, 'none'), bootIdPath: join(root, 'boot_id'), cacheDir, env: {} },
  }
}

const moduleName = fc.oneof(fc.constantFrom('kvm', 'kvm_intel', 'kvm_amd', 'kvm_pvm', 'kvm_x', 'vhost_net', 'kvmgt'), fc.stringMatching(/^[a-z_]{1,12}$/))

describe('the usable-KVM probe (fast-check)', () => {
  it('a cache file with any content never changes the verdict a fresh scan gives, and never throws', () => {
    fc.assert(
      fc.property(fc.uniqueArray(moduleName, { maxLength: 4 }), odd, odd, (modules, bootId, cacheText) => {
        const fresh = checkKvm({ ...host(modules, bootId, undefined).options, cacheDir: false })
        const withCache = checkKvm(host(modules, bootId, cacheText.replaceAll('"b"', JSON.stringify(bootId.trim()))).options)
        // A cache entry svc itself wrote could only hold what a scan found; anything else is re-scanned.
        const validOwn = /"module":"kvm_(intel|amd|pvm)"/.test(cacheText) && !cacheText.includes('kvm_evil')
        if (!validOwn) assert.deepEqual(withCache, fresh)
        if (!withCache.ok) assert.doesNotMatch(withCache.message, /[\u0000-\u001f]/)
      }),
      { numRuns: 150 },
    )
  })

  it('any SVC_MICROVM_ACCEL: tcg passes, kvm and empty probe, anything else is one line naming the value', () => {
    fc.assert(
      fc.property(odd, (value) => {
        const result = checkKvm({ ...host(['kvm_intel'], 'b', undefined).options, cacheDir: false, env: { SVC_MICROVM_ACCEL: value } })
        if (value === 'tcg') assert.deepEqual(result, { ok: true, accel: 'tcg' })
        else if (value === '' || value === 'kvm') assert.deepEqual(result, { ok: true, accel: 'kvm', backend: 'kvm_intel' })
        else {
          assert.equal(result.ok, false)
          if (result.ok) return
          assert.equal(result.code, 'INVALID_ARGUMENT')
          assert.doesNotMatch(result.message, /[\u0000-\u001f]/)
          assert.ok(result.message.length < 200)
        }
      }),
      { numRuns: 150 },
    )
  })
})
