/** The in-process pub/sub adapter (`builtin` and `memory`) against the shared conformance suite. */
import { runPubSubAdapterConformance } from '../conformance.ts'
import { MemoryPubSubAdapter } from './memory.ts'

runPubSubAdapterConformance('builtin (memory)', () => ({ open: (context) => new MemoryPubSubAdapter(context) }))
