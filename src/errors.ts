/**
 * Layered errors with stable codes. Every failure that crosses a module boundary is one of these;
 * the original error, if any, is kept as `cause`. Messages never contain secrets or tokens: callers
 * build them from method, path and status only.
 *
 * `outcome` is the value of the `outcome` label of cmdb_endpoint_requests_total for this failure.
 */
export type ErrorCode =
  | 'CMDB_HTTP_STATUS'
  | 'CMDB_TIMEOUT'
  | 'CMDB_NETWORK'
  | 'CMDB_INVALID_BODY'
  | 'CMDB_ENCODING'
  | 'CMDB_TOO_LARGE'
  | 'CMDB_RATE_LIMITED'
  | 'CMDB_REDIRECT_REFUSED'
  | 'CMDB_TOKEN_REJECTED'
  | 'CMDB_UNAUTHORIZED'
  | 'CMDB_ABORTED'
  | 'CONFIG_INVALID'
  | 'FOLDER_IN_USE';

/** An HTTP status as the `outcome` label writes it: `'404'`, `'503'`. */
export type StatusOutcome = `${1 | 2 | 3 | 4 | 5}${number}`;

/** What a failed request came to: the `outcome` label of cmdb_endpoint_requests_total. */
export type FailureOutcome =
  | StatusOutcome
  | 'timeout'
  | 'network'
  | 'invalid_body'
  | 'too_large'
  | 'rate_limited'
  | 'redirect_refused'
  /** The token endpoint refused the client id and secret. */
  | 'rejected'
  | 'aborted';

/**
 * The words besides an HTTP status that the `outcome` label of cmdb_endpoint_requests_total takes:
 * what became of a request that left. A 429 is counted as `429` like any status; `rate_limited`,
 * `rejected` and `aborted` are what a poll came to (a request is never sent, or its answer is
 * already counted by status), never a request's outcome.
 */
export const REQUEST_OUTCOMES = ['timeout', 'network', 'invalid_body', 'too_large', 'redirect_refused'] as const;

/** The `outcome` label of cmdb_endpoint_requests_total. */
export type RequestOutcome = StatusOutcome | (typeof REQUEST_OUTCOMES)[number];

/** The outcome a request that left is counted under, for a failure raised while it was under way. */
export function requestOutcome(err: unknown): RequestOutcome {
  const outcome = err instanceof CmdbError ? err.outcome : 'network';
  return /^\d+$/.test(outcome) || (REQUEST_OUTCOMES as readonly string[]).includes(outcome) ? (outcome as RequestOutcome) : 'network';
}

/**
 * What one poll of an endpoint came to, as the status page and the runner record it. A 403 is
 * `forbidden`: the token lacks a permission, which no retry fixes (the real service answers 403 on
 * /data-ingestion/next to ordinary tokens); it is not the CMDB being down.
 */
export type PollOutcome = 'success' | Exclude<FailureOutcome, '403'> | 'forbidden' | 'blocked' | 'error';

export function statusOutcome(status: number): StatusOutcome {
  return String(status) as StatusOutcome;
}

/** The `code` of a Node or undici error (`ENOENT`, `UND_ERR_SOCKET`), if it has one. */
export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export class ExporterError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** A request to the CMDB failed. `request` is `METHOD /path` with the query string removed. */
export abstract class CmdbError extends ExporterError {
  abstract readonly outcome: FailureOutcome;
  readonly request: string;
  constructor(code: ErrorCode, request: string, detail: string, options?: { cause?: unknown }) {
    super(code, `${request}: ${detail}`, options);
    this.request = request;
  }
}

export class CmdbHttpError extends CmdbError {
  readonly status: number;
  readonly outcome: StatusOutcome;
  constructor(request: string, status: number, statusText: string, options?: { cause?: unknown }) {
    super('CMDB_HTTP_STATUS', request, `${status} ${statusText}`.trim(), options);
    this.status = status;
    this.outcome = statusOutcome(status);
  }
}

export class CmdbTimeoutError extends CmdbError {
  readonly outcome = 'timeout' as const;
  /** `firstByte`: not even the answer's first byte came within `seconds` (a deadline on the start of the answer). */
  constructor(request: string, seconds: number, options?: { cause?: unknown; firstByte?: boolean }) {
    super('CMDB_TIMEOUT', request, options?.firstByte ? `no answer within ${seconds}s` : `no complete response within ${seconds}s`, options);
  }
}

export class CmdbNetworkError extends CmdbError {
  readonly outcome = 'network' as const;
  constructor(request: string, detail: string, options?: { cause?: unknown }) {
    super('CMDB_NETWORK', request, detail, options);
  }
}

/** The body was not JSON, or it lacked a required field or had one of the wrong type. */
export class CmdbInvalidBodyError extends CmdbError {
  readonly outcome = 'invalid_body' as const;
  /** Key path of the first offending field, e.g. `content[3].bridge_name`; empty for non-JSON. */
  readonly field: string;
  /**
   * The body is not JSON at all (a body cut short, a proxy's page): worth a retry, unlike JSON that
   * does not fit the schema, which the same server will send again.
   */
  readonly notJson: boolean;
  constructor(request: string, field: string, detail: string, options?: { cause?: unknown; notJson?: boolean }) {
    super('CMDB_INVALID_BODY', request, `invalid response body: ${field ? `${field}: ` : ''}${detail}`, options);
    this.field = field;
    this.notJson = options?.notJson === true;
  }
}

/**
 * A 2xx in a Content-Encoding the exporter cannot decode, or a compressed body that does not
 * decode. Counted like a body that is not JSON (invalid_body), but never read as a token rejection:
 * the credentials are not what is wrong.
 */
export class CmdbEncodingError extends CmdbError {
  readonly outcome = 'invalid_body' as const;
  constructor(request: string, detail: string, options?: { cause?: unknown }) {
    super('CMDB_ENCODING', request, `invalid response body: ${detail}`, options);
  }
}

export class CmdbTooLargeError extends CmdbError {
  readonly outcome = 'too_large' as const;
  /** `cap`: which limit it was, for the message (the setting, or the record cap of small endpoints). */
  constructor(request: string, limitBytes: number, cap = 'maxResponseBytes', options?: { cause?: unknown }) {
    super('CMDB_TOO_LARGE', request, `response larger than the ${limitBytes}-byte cap (${cap})`, options);
  }
}

/** The server kept answering 429, or asked us to wait longer than we may. */
export class CmdbRateLimitedError extends CmdbError {
  readonly outcome = 'rate_limited' as const;
  constructor(request: string, detail: string, options?: { cause?: unknown }) {
    super('CMDB_RATE_LIMITED', request, detail, options);
  }
}

export class CmdbRedirectRefusedError extends CmdbError {
  readonly outcome = 'redirect_refused' as const;
  constructor(request: string, detail: string) {
    super('CMDB_REDIRECT_REFUSED', request, detail);
  }
}

/** The token endpoint answered, but not with code 200 and a token. */
export class CmdbTokenRejectedError extends CmdbError {
  readonly outcome = 'rejected' as const;
  constructor(request: string, detail: string, options?: { cause?: unknown }) {
    super('CMDB_TOKEN_REJECTED', request, detail, options);
  }
}

/** A 401 with a pre-issued token, or a 401 that persisted after one re-authentication. */
export class CmdbUnauthorizedError extends CmdbError {
  readonly outcome = '401' as const;
  constructor(request: string, detail: string, options?: { cause?: unknown }) {
    super('CMDB_UNAUTHORIZED', request, detail, options);
  }
}

/**
 * 401 on every token the token endpoint had just granted, renewed with back-off a few times: the
 * credentials are good (the token endpoint takes them), but another process with the same client
 * id takes the tokens (a CMDB that keeps one token per client), or the CMDB does not take the
 * tokens it grants. Not "credentials rejected": that is the token endpoint's word alone.
 */
export class CmdbTokensTakenError extends CmdbUnauthorizedError {}

/** The request was cancelled because the exporter is shutting down or reloading. */
export class CmdbAbortedError extends CmdbError {
  readonly outcome = 'aborted' as const;
  constructor(request: string) {
    super('CMDB_ABORTED', request, 'aborted (exporter shutting down)');
  }
}

/** One step of a key path: an object key or an array index. */
export type PathSegment = string | number;

/**
 * A key path for messages: ['stacks', 1, 'baseUrl'] → 'stacks[1].baseUrl', a response's
 * ['content', 3, 'bridge_name'] → 'content[3].bridge_name'; odd keys are quoted: 'defaults["a b"]'.
 */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

export interface ConfigIssue {
  /** Key path such as `stacks[1].baseUrl`, or an environment variable name. */
  path: string;
  message: string;
}

export class ConfigError extends ExporterError {
  readonly issues: readonly ConfigIssue[];
  /** Not problems themselves, but likely behind them: environment variables the exporter does not read (typos). */
  readonly hints: readonly ConfigIssue[];
  constructor(issues: readonly ConfigIssue[], hints: readonly ConfigIssue[] = []) {
    super('CONFIG_INVALID', formatConfigIssues(issues, hints));
    this.issues = issues;
    this.hints = hints;
  }
}

export function formatConfigIssues(issues: readonly ConfigIssue[], hints: readonly ConfigIssue[] = []): string {
  const lines = issues.map((i) => `  ${i.path}: ${i.message}`);
  const report = `invalid configuration (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n${lines.join('\n')}`;
  if (hints.length === 0) return report;
  return `${report}\nperhaps behind them, variables the exporter does not read:\n${hints.map((h) => `  ${h.path}: ${h.message}`).join('\n')}`;
}

/**
 * A folder the exporter keeps its files in (--storage.path, the backfill's --out) is locked by
 * another process that is still running: this one does not start (exit 2). The message names the
 * folder and the holder.
 */
export class FolderInUseError extends ExporterError {
  constructor(message: string) {
    super('FOLDER_IN_USE', message);
  }
}
