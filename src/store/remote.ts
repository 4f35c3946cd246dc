/**
 * What a server says about a file before it is downloaded: its size, its validator (ETag) and,
 * where it gives one, its SHA-256 (Hugging Face's `x-linked-etag` on an LFS file's resolve URL,
 * or an ETag that is 64 hex digits). And how its failures map to `EngineError` types.
 */
import { EngineError } from "../contract/errors.ts";
import { isHtmlType } from "../formats/html.ts";

/** A file as the server describes it. */
export interface Remote {
  size: number;
  validator?: string;
  sha256?: string;
}

/** A failure worth trying again (a dropped connection, a 5xx, a 429). */
export class Retryable extends Error {
  constructor(readonly error: EngineError) {
    super(error.message);
  }
}

/** The SHA-256 an (ETag-like) header carries, if it is one: 64 hex digits, quoted or not. */
export function shaOf(value: string | null): string | undefined {
  const v = value?.trim().replace(/^W\//, "").replace(/^"|"$/g, "").toLowerCase();
  return v !== undefined && /^[0-9a-f]{64}$/.test(v) ? v : undefined;
}

/** The validator of a response: its ETag, else its Last-Modified. */
export function validatorOf(headers: Headers): string | undefined {
  return headers.get("etag") ?? headers.get("last-modified") ?? undefined;
}

/** `Content-Length` when it is a whole number. */
export function lengthOf(headers: Headers): number | undefined {
  const text = headers.get("content-length");
  const n = text === null || text.trim() === "" ? NaN : Number(text);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** A `Content-Range`'s first byte, last byte and total (`bytes A-B/T`). */
export function rangeOf(
  headers: Headers,
): { start: number; end: number; total?: number } | undefined {
  const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(headers.get("content-range")?.trim() ?? "");
  if (!m) return undefined;
  return {
    start: Number(m[1]),
    end: Number(m[2]),
    ...(m[3] === "*" ? {} : { total: Number(m[3]) }),
  };
}

/** The typed error (or a `Retryable`) for an HTTP status other than 200/206. */
export function statusError(url: string, res: Response): Error {
  const what = `${url}: HTTP ${res.status} ${res.statusText}`.trim();
  if (res.status === 408 || res.status === 429 || (res.status >= 500 && res.status !== 507)) {
    return new Retryable(new EngineError("CannotConnect", what));
  }
  if (res.status === 507 || res.status === 413) return new EngineError("ResourceExhausted", what);
  return EngineError.invalidArgument(what);
}

/** `fetch`, its failure a `Retryable` `CannotConnect`. */
export async function send(
  fetchFn: typeof fetch,
  url: string,
  init: RequestInit,
): Promise<Response> {
  try {
    return await fetchFn(url, init);
  } catch (e) {
    throw new Retryable(
      new EngineError("CannotConnect", `${url}: ${(e as Error).message}`, { cause: e }),
    );
  }
}

/** Drop a response's body unread. */
export async function drop(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => {});
}

/**
 * What the server says about `url`: `"missing"` (404), `"html"` (an HTML page in its place),
 * or its size, validator and hash (HEAD; a `bytes=0-0` GET where HEAD is refused or sizeless).
 */
export async function describeRemote(
  fetchFn: typeof fetch,
  url: string,
): Promise<Remote | "missing" | "html"> {
  const head = await send(fetchFn, url, { method: "HEAD" });
  if (head.status === 404) return "missing";
  if (head.ok && isHtmlType(head.headers)) return "html";
  const refused = head.status === 405 || head.status === 501;
  if (!head.ok && !refused) throw statusError(url, head);
  const size = head.ok ? lengthOf(head.headers) : undefined;
  const res = size !== undefined && size > 0
    ? head
    : await send(fetchFn, url, { headers: { range: "bytes=0-0" } });
  if (res !== head) {
    await drop(res);
    if (res.status === 404) return "missing";
    if (isHtmlType(res.headers)) return "html";
    if (res.status !== 200 && res.status !== 206) throw statusError(url, res);
  }
  const total = res === head
    ? size
    : res.status === 206
    ? rangeOf(res.headers)?.total
    : lengthOf(res.headers);
  if (total === undefined) {
    throw new EngineError("CannotConnect", `${url}: the server gave no size`);
  }
  const validator = validatorOf(res.headers);
  const sha256 = shaOf(res.headers.get("x-linked-etag")) ?? shaOf(res.headers.get("etag"));
  return {
    size: total,
    ...(validator === undefined ? {} : { validator }),
    ...(sha256 === undefined ? {} : { sha256 }),
  };
}
