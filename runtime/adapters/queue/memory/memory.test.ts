import { runQueueBackendConformance } from '../conformance.ts'
import { openMemoryQueue } from './memory.ts'

runQueueBackendConformance('memory', () => openMemoryQueue())
