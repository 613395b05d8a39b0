// The part of seed 000's `@flowgpt/agent-core-tools/memory` that docs/clients.md's host wiring uses (the package
// itself is published with restricted access): the store contract of createMemoryTools.
declare module "@flowgpt/agent-core-tools/memory" {
  type Memory = Record<string, unknown>;
  interface Tool {
    execute(id: string, args: unknown, signal: AbortSignal): Promise<{ details: unknown }>;
  }
  export function createMemoryTools(options: {
    store: {
      get(signal: AbortSignal): Promise<{ revision: number; memory: Memory | null }>;
      compareAndSet(commit: { expectedRevision: number; memory: Memory }, signal: AbortSignal): Promise<number>;
    };
    beforeUpdate?(memory: Memory): void;
  }): [Tool, Tool];
}
