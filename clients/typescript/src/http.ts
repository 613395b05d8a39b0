import { errorFrom } from "./errors.js";

/** A JSON memory document: a plain JSON object (at most 64 KiB, depth 32). */
export type MemoryObject = Record<string, unknown>;
/** What a read of a memory document answers: revision 0 and memory null when nothing is stored. */
export interface MemorySnapshot {
  revision: number;
  memory: MemoryObject | null;
}

type Result<T> = { data?: T; error?: unknown; response: Response };

/** The body of a success, or the typed error (MemoryHubError and its subclasses) of an error answer. */
export async function unwrap<T>(pending: Promise<Result<T>>): Promise<T> {
  const { data, error, response } = await pending;
  if (!response.ok) throw errorFrom(response, error);
  return data as T;
}

