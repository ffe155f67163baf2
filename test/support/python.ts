/**
 * The Python environment of the svc Python SDK's tests: a virtual environment under
 * `node_modules/.cache/svc-test-python/` with the SDK's dependencies and test tools from PyPI
 * (built once, reused while its requirement list is unchanged), into which every run installs
 * `svc-helpers` and `svc-sdk` from wheels built from `packages/helpers-python` and
 * `packages/sdk-python` (so the wheels are what is tested). Without Python ≥ 3.10 and its `venv`
 * module it fails with the command that installs them.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from './processes.ts'

const PYTHON = process.env.SVC_TEST_PYTHON ?? 'python3'
export const PYTHON_INSTALL_HINT =
  'install Python 3.10+ with its venv module (Debian: apt-get install -y python3 python3-venv), or point SVC_TEST_PYTHON at such an interpreter'

/** What the tests need besides the two packages; the venv is rebuilt when this list changes. */
const REQUIREMENTS = ['websockets>=13', 'pydantic>=2.5', 'typing-extensions>=4.7', 'opentelemetry-api>=1.25', 'opentelemetry-sdk>=1.25', 'pytest>=8', 'hypothesis>=6.100', 'mypy>=1.10']
const VENV = join(ROOT, 'node_modules', '.cache', 'svc-test-python', `svc-sdk-${createHash('sha256').update(REQUIREMENTS.join('\n')).digest('hex').slice(0, 12)}`)
export const SDK_PYTHON_DIR = join(ROOT, 'packages', 'sdk-python')
export const HELPERS_PYTHON_DIR = join(ROOT, 'packages', 'helpers-python')

const venvPython = (dir: string): string => join(dir, 'bin', 'python')

function run(python: string, args: string[], what: string): string {
  const r = spawnSync(python, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (r.status !== 0) assert.fail(`${what} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}${r.stderr}`)
  return r.stdout
}

let installed: Promise<string> | undefined

/**
 * The venv's interpreter with the current `svc-sdk` and `svc-helpers` installed from freshly built
 * wheels; built once per test process.
 * @throws AssertionError naming what is missing (python3, venv, PyPI) and how to install it.
 */
export function svcPython(): Promise<string> {
  installed ??= build()
  return installed
}

async function build(): Promise<string> {
  if (!existsSync(venvPython(VENV))) {
    const probe = spawnSync(PYTHON, ['-c', 'import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, 10) else 3)'], { encoding: 'utf8' })
    if (probe.error !== undefined) assert.fail(`${PYTHON} was not found (${probe.error.message}): ${PYTHON_INSTALL_HINT}`)
    if (probe.status === 3) assert.fail(`${PYTHON} is older than 3.10, which svc-sdk needs: ${PYTHON_INSTALL_HINT}`)
    if (probe.status !== 0) assert.fail(`${PYTHON} has no venv/ensurepip module (${probe.stderr.trim().split('\n').at(-1)}): ${PYTHON_INSTALL_HINT}`)
    // Built beside its final place and renamed into it: an interrupted build is never reused.
    await mkdir(join(VENV, '..'), { recursive: true })
    const building = `${VENV}.${process.pid}`
    await rm(building, { recursive: true, force: true })
    run(PYTHON, ['-m', 'venv', building], `${PYTHON} -m venv (${PYTHON_INSTALL_HINT})`)
    run(venvPython(building), ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-q', ...REQUIREMENTS], 'pip install of the test requirements (it needs the PyPI registry)')
    await rm(VENV, { recursive: true, force: true })
    await rename(building, VENV)
  }
  const python = venvPython(VENV)
  const wheels = await mkdtemp(join(tmpdir(), 'svc-py-wheels-'))
  try {
    // --no-build-isolation would need hatchling in the venv; an isolated build fetches it once into pip's cache.
    run(python, ['-m', 'pip', 'wheel', '--disable-pip-version-check', '--no-input', '-q', '--no-deps', '-w', wheels, HELPERS_PYTHON_DIR, SDK_PYTHON_DIR], 'building the svc-helpers and svc-sdk wheels')
    const built = readdirSync(wheels).filter((f) => f.endsWith('.whl'))
    assert.equal(built.length, 2, `expected two wheels, got ${built.join(', ')}`)
    run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-q', '--force-reinstall', '--no-deps', ...built.map((f) => join(wheels, f))], 'installing the wheels')
  } finally {
    await rm(wheels, { recursive: true, force: true })
  }
  return python
}

/**
 * Copies the distributions `svc-sdk` needs (by its metadata's requirements) from the Python that
 * runs this into the site-packages directory `argv[1]`: a worker venv without PyPI.
 */
const COPY_SDK = `import importlib.metadata as md, os, re, shutil, sys
target, todo, seen = sys.argv[1], ["svc-sdk"], set()
while todo:
    name = todo.pop()
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        continue
    seen.add(key)
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    todo += [re.match(r"\\s*([A-Za-z0-9._-]+)", r).group(1) for r in dist.requires or [] if "extra ==" not in r]
    for f in dist.files or []:
        rel, src = os.path.normpath(str(f)), os.path.realpath(dist.locate_file(f))
        if rel.startswith("..") or not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(target, rel))
`

/**
 * Makes `<workerDir>/.venv` as svc's inferred Python install would (a venv of the base interpreter
 * of {@link svcPython}, whose `bin/python` links to it by absolute path) and copies `svc-sdk` and
 * its dependencies into it from the test environment: a worker venv without PyPI.
 * @throws AssertionError when the venv cannot be made.
 */
export async function workerVenv(workerDir: string): Promise<void> {
  const python = await svcPython()
  const venv = join(workerDir, '.venv')
  run(python, ['-m', 'venv', '--without-pip', venv], 'python -m venv')
  const version = run(python, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], 'python --version').trim()
  run(python, ['-c', COPY_SDK, join(venv, 'lib', `python${version}`, 'site-packages')], 'copying svc-sdk into the worker venv')
}
