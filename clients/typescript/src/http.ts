import type { Middleware } from "openapi-fetch";

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

/**
 * Throws a RangeError for an id that cannot be a URL path segment: empty, only dots, or holding "/". `fetch` and
 * `URL` fold "." and ".." segments (written %2e%2e too), so DELETE …/users/u1/conversations/.. would go out as
 * DELETE …/users/u1 and erase the whole user; and servers and proxies decode %2F into a path separator before
 * routing, so DELETE …/users/u1%2Fconversations%2Fc1 could erase conversation c1 (docs/contract.md, "Identifiers").
 */
export function checkPathId(name: string, value: unknown): void {
  if (typeof value === "string" && /^\.*$/.test(value)) {
    throw new RangeError(
      `${name} ${JSON.stringify(value)} cannot be an id in a URL path: an id is never empty or only dots ` +
        "('.', '..'), which URL parsers fold into the parent path",
    );
  }
  if (typeof value === "string" && value.includes("/")) {
    throw new RangeError(
      `${name} ${JSON.stringify(value)} cannot be an id in a URL path: an id never holds "/", which servers ` +
        "and proxies decode from %2F into a path separator",
    );
  }
}

/** Checks every path parameter of an openapi-fetch call before the request is sent. */
export const pathIdGuard: Middleware = {
  onRequest({ params }) {
    for (const [name, value] of Object.entries(params.path ?? {})) checkPathId(name, value);
  },
};
