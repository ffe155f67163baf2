/**
 * Reading `/otel` `LOGS` frames into log records (./otlp.ts, builtins.md §12.2–§12.4): a record
 * carries its scope's name and version exactly when the scope has them, as own fields that JSON,
 * `Object.keys` and the store's row see.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { logsOf } from './otlp.ts'

/** An `ExportLogsServiceRequest` with one record under each of `scopes`. */
function request(scopes: Array<Record<string, unknown> | undefined>): unknown {
  return {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'orders' } }] },
        scopeLogs: scopes.map((scope, i) => ({
          ...(scope === undefined ? {} : { scope }),
          logRecords: [{ timeUnixNano: '1700000000000000000', severityNumber: 9, body: { stringValue: `line ${i}` }, attributes: [{ key: 'log.data', value: { kvlistValue: { values: [{ key: 'n', value: { intValue: String(i) } }] } } }] }],
        })),
      },
    ],
  }
}

describe('logsOf', () => {
  it("gives a record its scope's name and version only when the scope has them", () => {
    const logs = logsOf(request([{ name: 'app', version: '1.2.0' }, { name: 'app' }, { version: '2.0.0' }, {}, undefined, { name: 7, version: null }]), 'fallback', 1_700_000_000_000_000_001)
    assert.deepEqual(
      logs.map((l) => [l.body, l.instrumentation_scope_name, l.instrumentation_scope_version, Object.hasOwn(l, 'instrumentation_scope_name'), Object.hasOwn(l, 'instrumentation_scope_version')]),
      [
        ['line 0', 'app', '1.2.0', true, true],
        ['line 1', 'app', undefined, true, false],
        ['line 2', undefined, '2.0.0', false, true],
        ['line 3', undefined, undefined, false, false],
        ['line 4', undefined, undefined, false, false],
        ['line 5', undefined, undefined, false, false],
      ],
    )
    // The rest of the record is the same under every scope.
    assert.deepEqual(JSON.parse(JSON.stringify(logs[1])), {
      timestamp_unix_nano: 1_700_000_000_000_000_000,
      observed_timestamp_unix_nano: 1_700_000_000_000_000_001,
      severity_number: 9,
      severity_text: 'INFO',
      body: 'line 1',
      attributes: { 'log.data.n': 1 },
      resource: { 'service.name': 'orders' },
      service_name: 'orders',
      trace_id: null,
      span_id: null,
      instrumentation_scope_name: 'app',
    })
  })
})
