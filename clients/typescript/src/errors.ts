/** Every memoryhub error answer is the envelope {"error": {code, message, details}} (docs/contract.md). */
export interface ErrorBody {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** An error answer of memoryhub: `code` is stable and meant for programs, `status` is the HTTP status. */
export class MemoryHubError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown>;
  readonly status: number;

  constructor(status: number, body: ErrorBody) {
    super(body.message);
    this.name = new.target.name;
    this.code = body.code;
    this.details = body.details;
    this.status = status;
  }
}

/** 400: the request is malformed; `details` names the place (field, path or fields). */
export class InvalidRequest extends MemoryHubError {}
/** 401: no, unknown, expired or revoked key or tool token. */
export class Unauthenticated extends MemoryHubError {}
/** 403: a tool token used beyond its scope. */
export class Forbidden extends MemoryHubError {}
/** 404: no such resource in this product. */
export class NotFound extends MemoryHubError {}
/** 409: the resource is in another state (erasure_in_progress, turn_already_completed, …). */
export class Conflict extends MemoryHubError {}
/** 413: over a size limit. */
export class TooLarge extends MemoryHubError {}
/** 422: valid, but a rule refuses it. */
export class Unprocessable extends MemoryHubError {}
/** 5xx: a dependency is down or failed (details.dependency), or a bug. */
export class ServerError extends MemoryHubError {}

/**
 * 409 revision_conflict: a compare-and-set lost. Re-read, decide again, and write with the new revision; never
 * send the old change again with the new revision.
 */
export class RevisionConflict extends Conflict {
  readonly currentRevision: number;
  readonly currentVersion: number | undefined;

  constructor(status: number, body: ErrorBody) {
    super(status, body);
    this.currentRevision = Number(body.details.currentRevision);
    const version = body.details.currentVersion;
    this.currentVersion = typeof version === "number" ? version : undefined;
  }
}

/** 429: over a rate; `retryAfter` is the seconds of the Retry-After header. */
export class RateLimited extends MemoryHubError {
  readonly retryAfter: number | undefined;

  constructor(status: number, body: ErrorBody, retryAfter?: number) {
    super(status, body);
    this.retryAfter = retryAfter;
  }
}

const BY_STATUS: Record<number, new (status: number, body: ErrorBody) => MemoryHubError> = {
  400: InvalidRequest,
  401: Unauthenticated,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: TooLarge,
  422: Unprocessable,
};

function isErrorBody(value: unknown): value is { error: ErrorBody } {
  if (typeof value !== "object" || value === null || !("error" in value)) return false;
  const error = (value as { error: unknown }).error;
  return typeof error === "object" && error !== null && typeof (error as ErrorBody).code === "string";
}

/** The typed error of an error answer (a body that is not the envelope becomes a MemoryHubError with code "http_<status>"). */
export function errorFrom(response: Response, body: unknown): MemoryHubError {
  const envelope: ErrorBody = isErrorBody(body)
    ? { ...body.error, details: body.error.details ?? {} }
    : { code: `http_${response.status}`, message: `HTTP ${response.status}`, details: {} };
  if (envelope.code === "revision_conflict") return new RevisionConflict(response.status, envelope);
  if (response.status === 429) {
    const header = Number(response.headers.get("Retry-After"));
    return new RateLimited(response.status, envelope, Number.isFinite(header) ? header : undefined);
  }
  const kind = BY_STATUS[response.status] ?? (response.status >= 500 ? ServerError : MemoryHubError);
  return new kind(response.status, envelope);
}
