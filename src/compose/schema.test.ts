import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parse } from 'yaml'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { BUILTIN_KEYS, parseComposeFile, PATH_KEYS, TOP_KEYS } from './file.ts'
import { composeFileSchema } from './schema.ts'

const validate = new Ajv2020({ strict: false }).compile(composeFileSchema())

describe('compose::schema: the JSON Schema of worker-compose.yaml', () => {
  it('names exactly the keys the parser accepts', () => {
    const schema = composeFileSchema()
    assert.deepEqual(Object.keys(schema.properties).sort(), [...TOP_KEYS].sort())
    const rule = schema.properties.containers.additionalProperties
    assert.deepEqual(Object.keys(rule.else.properties).sort(), [...PATH_KEYS].sort())
    assert.deepEqual(Object.keys(rule.then.properties).sort(), [...BUILTIN_KEYS].sort())
  })

  const good = [
    'containers: {}\n',
    'namespace: shop\nstartup_timeout: 60s\nstop_timeout: 10000\ncontainers:\n  api:\n    worker: path://./workers/api\n    depends_on: [database]\n    restart: never\n    environment: { LOG_LEVEL: debug }\n    scripts: { pre_run: npm run migrate, pre_run_timeout: 2m }\n  database:\n    worker: builtin://database\n    config: { databases: {} }\n',
  ]
  const bad = [
    ['no containers', 'namespace: x\n'],
    ['unknown top key', 'containers: {}\nextra: 1\n'],
    ['bad restart policy', 'containers:\n  api:\n    worker: path://./api\n    restart: sometimes\n'],
    ['path key on a built-in', 'containers:\n  db:\n    worker: builtin://database\n    watch: false\n'],
    ['bad container key', 'containers:\n  Api:\n    worker: path://./api\n'],
  ]

  it('accepts files the parser accepts', () => {
    for (const text of good) {
      parseComposeFile(text, { env: {} })
      assert.equal(validate(parse(text)), true, `${text}\n${JSON.stringify(validate.errors)}`)
    }
  })

  it('refuses files the parser refuses', () => {
    for (const [what, text] of bad) {
      assert.throws(() => parseComposeFile(text!, { env: {} }), Error, what)
      assert.equal(validate(parse(text!)), false, what)
    }
  })
})
