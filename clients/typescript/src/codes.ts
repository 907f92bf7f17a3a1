/**
 * The closed set of error codes a reply carries (docs/host-integration.md, "The reply").
 * A reply's `error.code` is one of these; anything else is a protocol breach.
 */
export const ERROR_CODES = [
  // the query service's, as the reply boundary lets them through
  "SESSION_QUERY_ABORTED",
  "SESSION_QUERY_CORRUPT_SESSION",
  "SESSION_QUERY_EVENT_NOT_FOUND",
  "SESSION_QUERY_INDEX_FAILED",
  "SESSION_QUERY_INVALID_CURSOR",
  "SESSION_QUERY_INVALID_FILTER",
  "SESSION_QUERY_INVALID_LIMIT",
  "SESSION_QUERY_INVALID_QUERY",
  "SESSION_QUERY_INVALID_LINEAGE",
  "SESSION_QUERY_INVALID_SURFACE",
  "SESSION_QUERY_INVALID_WINDOW",
  "SESSION_QUERY_PERSISTENCE_FAILED",
  "SESSION_QUERY_SEARCH_DISABLED",
  "SESSION_QUERY_SESSION_NOT_FOUND",
  "SESSION_QUERY_STALE_CURSOR",
  "SESSION_QUERY_TOOL_FAILED",
  // the tools'
  "SESSION_QUERY_TOOL_MISSING_AGENT",
  "SESSION_QUERY_TOOL_UNAUTHORIZED",
  "SESSION_QUERY_TOOL_NO_CURRENT_STEP",
  "INVALID_ARGS",
  "TOOL_TIMEOUT",
  "TOOL_CANCELLED",
  // the transport's: an unverified caller, a full host or workspace, a moved partition
  "SESSION_QUERY_CALLER_UNAUTHENTICATED",
  "SESSION_QUERY_BUSY",
  "SESSION_QUERY_MISROUTED",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const KNOWN: ReadonlySet<string> = new Set(ERROR_CODES);

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && KNOWN.has(code);
}

/**
 * A tool's refusal as an exception (`SessionqClient.callText`): its code from the set,
 * or a cancel reason's own (`isErrorCode` tells which).
 */
export class SessionqToolError extends Error {
  override readonly name = "SessionqToolError";
  constructor(
    readonly code: ErrorCode | (string & {}),
    message: string,
    readonly requestId: string,
  ) {
    super(message);
  }
}
