// Declarations of bin/engine-heap.js (plain JavaScript: bin/run.js loads it before anything else).
export declare const ENGINE_V8_FLAGS: readonly string[]
export declare function hostsEngine(argv: readonly string[]): boolean
export declare function heapChosen(execArgv: readonly string[], nodeOptions: string | undefined): boolean
