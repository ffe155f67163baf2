import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { addContainerText, removeContainerText } from './edit.ts'
import { parseComposeFile } from './file.ts'

const PROJECT = `# shop project
namespace: shop   # must match the daemon

containers:
  # the public API
  api:
    worker: path://./workers/api
    environment: { LOG_LEVEL: debug, URL: "http://example.com/a/very/long/path/that/should/never/be/folded/by/the/yaml/printer" }
  database:
    worker: builtin://database
`

describe('addContainerText', () => {
  it('creates a file from nothing', () => {
    const text = addContainerText(undefined, 'api', 'path://./workers/api')
    assert.equal(text, 'containers:\n  api:\n    worker: path://./workers/api\n')
    assert.deepEqual(parseComposeFile(text).startOrder, ['api'])
  })

  it('turns containers: {} into a block mapping', () => {
    assert.equal(addContainerText('containers: {}\n', 'db', 'builtin://database'), 'containers:\n  db:\n    worker: builtin://database\n')
    assert.equal(addContainerText('namespace: x\ncontainers:\n', 'db', 'builtin://database'), 'namespace: x\ncontainers:\n  db:\n    worker: builtin://database\n')
    assert.equal(addContainerText('namespace: x\n', 'db', 'builtin://database'), 'namespace: x\ncontainers:\n  db:\n    worker: builtin://database\n')
  })

  it('appends to a block mapping, leaving every other byte as written', () => {
    const text = addContainerText(PROJECT, 'web', 'path://./workers/web')
    assert.equal(text, `${PROJECT}  web:\n    worker: path://./workers/web\n`)
    assert.deepEqual(parseComposeFile(text).startOrder, ['api', 'database', 'web'])
  })

  it('inserts after the last entry, before what follows containers', () => {
    const source = 'containers:\n    api:\n        worker: path://./a\n        depends_on: [db]   # db first\n    db:\n        worker: builtin://database\n\n# settings\nstop_timeout: 5s\n'
    const text = addContainerText(source, 'web', 'path://./w')
    assert.equal(
      text,
      'containers:\n    api:\n        worker: path://./a\n        depends_on: [db]   # db first\n    db:\n        worker: builtin://database\n    web:\n      worker: path://./w\n\n# settings\nstop_timeout: 5s\n',
    )
    assert.deepEqual(parseComposeFile(text).startOrder, ['db', 'api', 'web'])
    assert.equal(addContainerText('containers:\n  a:\n    worker: path://./a', 'b', 'path://./b'), 'containers:\n  a:\n    worker: path://./a\n  b:\n    worker: path://./b\n')
  })

  it('quotes values YAML would misread', () => {
    const text = addContainerText('containers:\n  a:\n    worker: path://./a\n', 'b', 'path://./my dir: x')
    assert.equal((parseComposeFile(text).containers[1] as { path: string }).path, './my dir: x')
  })

  it('refuses text that is not a YAML mapping', () => {
    assert.throws(() => addContainerText('- a\n', 'x', 'path://./x'), { code: 'INVALID_COMPOSE_FILE' })
    assert.throws(() => addContainerText('containers: [a]\n', 'x', 'path://./x'), { code: 'INVALID_COMPOSE_FILE' })
  })
})

describe('removeContainerText', () => {
  it('removes one entry and keeps the rest byte for byte', () => {
    assert.equal(removeContainerText(PROJECT, 'database'), PROJECT.replace('  database:\n    worker: builtin://database\n', ''))
  })

  it('takes the comment lines above the entry with it', () => {
    const text = removeContainerText(PROJECT, 'api')
    assert.doesNotMatch(text, /the public API/)
    assert.match(text, /^# shop project\nnamespace: shop   # must match the daemon\n\ncontainers:\n  database:\n/)
    assert.deepEqual(parseComposeFile(text).startOrder, ['database'])
  })

  it('leaves text without the key unchanged', () => {
    assert.equal(removeContainerText(PROJECT, 'nope'), PROJECT)
  })

  it('writes an emptied mapping as {}', () => {
    const text = removeContainerText('containers:\n  api:\n    worker: path://./a\n', 'api')
    assert.equal(text, 'containers: {}\n')
    assert.deepEqual(parseComposeFile(text).containers, [])
  })
})
