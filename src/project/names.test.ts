import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CliError, ExitCode } from '../lib/errors.ts'
import { invalidNameMessage, isValidName, validateProjectName } from './names.ts'
import { substitute, workerNameFor } from './substitute.ts'

describe('project names (cli.md §4.1)', () => {
  it('accepts lower-case letters, digits, - and _, starting with a letter or digit, up to 64', () => {
    for (const name of ['a', 'my-app', 'app_2', '9lives', 'a-b_c-1', 'x'.repeat(64)]) assert.ok(isValidName(name), name)
    assert.equal(validateProjectName('my-app'), 'my-app')
  })

  it('rejects anything else with the message of cli.md §4.1 and exit code 2', () => {
    for (const name of ['', 'My-App', '-app', '_app', 'my app', 'my.app', 'app/x', 'é', 'x'.repeat(65)]) {
      assert.equal(isValidName(name), false, name)
      assert.throws(
        () => validateProjectName(name),
        (err: unknown) =>
          err instanceof CliError &&
          err.exitCode === ExitCode.Usage &&
          err.message === `Invalid project name '${name}': use lower-case letters, digits, '-' and '_' (max 64)`,
      )
    }
    assert.equal(invalidNameMessage('X'), "Invalid project name 'X': use lower-case letters, digits, '-' and '_' (max 64)")
  })
})

describe('placeholder substitution (cli.md §4.1)', () => {
  const vars = { project_name: 'demo', worker_name: 'math-worker', svc_version: '1.2.3' }

  it('replaces {{project_name}}, {{worker_name}} and {{svc_version}}, every occurrence', () => {
    assert.equal(
      substitute('# {{project_name}}\nname: {{worker_name}} ({{project_name}}) svc-sdk ^{{svc_version}}', vars),
      '# demo\nname: math-worker (demo) svc-sdk ^1.2.3',
    )
  })

  it('leaves other braces alone', () => {
    const text = '${{ github.ref }} {{ project_name }} {{other}} {project_name} ${HTTP_PORT:3111}'
    assert.equal(substitute(text, vars), text)
  })

  it('names the worker after its directory under workers/, else after the project', () => {
    assert.equal(workerNameFor('workers/math-worker/svc.worker.yaml', 'demo'), 'math-worker')
    assert.equal(workerNameFor('workers/links/src/worker.js', 'demo'), 'links')
    assert.equal(workerNameFor('svc.worker.yaml', 'billing'), 'billing')
    assert.equal(workerNameFor('config.yaml', 'demo'), 'demo')
  })
})
