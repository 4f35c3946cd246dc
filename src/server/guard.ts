/**
 * Checks on a request before any route runs: the `Host` header's form (which names are answered
 * is `access.ts`), the body's media type, the API key (compared in constant time) and reading the
 * body under a size limit and a deadline.
 */
import { HttpError } from "./errors.ts";

/**
 * A `Host` that is only host[:port] (RFC 9110 §7.2): a name or IPv4 address, or an IPv6 literal
 * in brackets, and an optional port. Anything else (a path, a query, userinfo) is refused: Deno
 * builds `Request.url` from it, so a `Host` of `h/v1/models?` would move the route.
 */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;

/**
 * 400 for a `Host` that is not host[:port] (an empty one included). A request with no `Host` is
 * served: HTTP/1.0 does not require one, and Deno (whose `Request` carries no HTTP version, and
 * which accepts HTTP/1.1 without `Host` itself) builds `req.url` from the address it listens on.
 */
export function checkHost(req: Request): void {
  const host = req.headers.get("host");
  if (host === null) return;
  if (!HOST.test(host) || !URL.canParse(`http://${host}/`)) {
    throw HttpError.badRequest("the Host header must be host[:port]");
  }
}

/** The longest part of a refused `Content-Type` echoed in the 415's message. */
const TYPE_SHOWN = 100;

/**
 * Only JSON bodies run a completion (415 otherwise): `text/plain`, form-encoded and multipart
 * bodies, and bodies with no type, are what a web page may send cross-origin without a CORS
 * preflight. The 415 names the type expected and the one given: `Content-Type must be
 * application/json (got text/plain)`.
 */
export function checkJson(req: Request): void {
  const type = req.headers.get("content-type");
  const [media = "", ...params] = (type ?? "").split(";").map((s) => s.trim().toLowerCase());
  const json = media === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(media);
  const charset = params.find((p) => p.startsWith("charset="))?.slice(8).replace(/"/g, "");
  if (!json || (charset !== undefined && charset !== "utf-8")) {
    const got = type === null
      ? "none"
      : type.length > TYPE_SHOWN
      ? `${type.slice(0, TYPE_SHOWN)}…`
      : type;
    const want = json ? "application/json with charset=utf-8 or none" : "application/json";
    throw new HttpError(
      415,
      `Content-Type must be ${want} (got ${got})`,
      "invalid_request_error",
      null,
      "unsupported_media_type",
    );
  }
}

/** The length of the digests compared: SHA-256's, whatever the keys' lengths. */
export const DIGEST_BYTES = 32;

/** A compare of two key digests (injectable, so tests can run a weakened one through the checks). */
export type DigestCompare = (a: Uint8Array, b: Uint8Array) => boolean;

/**
 * Whether two digests are equal, reading all {@linkcode DIGEST_BYTES} bytes of both whatever
 * they hold: the differences are OR-ed together with no early exit, so the time taken does not
 * depend on where they first differ. A digest of any other length is unequal.
 */
export function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = (a.length ^ DIGEST_BYTES) | (b.length ^ DIGEST_BYTES);
  for (let i = 0; i < DIGEST_BYTES; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

const digest = async (bytes: Uint8Array) =>
  new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));

/**
 * The bytes a header value arrived as: Deno hands each byte of a header as the character of that
 * code (a key sent as UTF-8 arrives as its UTF-8 bytes, one character each); a character past
 * 0xFF (only from an in-process `Request`) makes the value unusable (`undefined`).
 */
function headerBytes(value: string): Uint8Array | undefined {
  const bytes = new Uint8Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c > 0xff) return undefined;
    bytes[i] = c;
  }
  return bytes;
}

/**
 * Whether `Authorization` carries exactly `Bearer <key>` (the scheme in any case, then spaces),
 * the key compared as its UTF-8 bytes. Both sides are hashed to SHA-256 and the fixed-length
 * digests compared by `equal` ({@linkcode digestsEqual}: every byte, no early exit), so the time
 * taken does not depend on the given key's content or where it first differs. No header, another
 * scheme, a value that is not bytes, and an empty configured key never match.
 */
export async function keyMatches(
  authorization: string | null,
  key: string,
  equal: DigestCompare = digestsEqual,
): Promise<boolean> {
  const given = authorization?.match(/^Bearer +(.*)$/i)?.[1];
  const bytes = given === undefined ? undefined : headerBytes(given);
  const [a, b] = await Promise.all([
    digest(bytes ?? new Uint8Array()),
    digest(new TextEncoder().encode(key)),
  ]);
  const same = equal(a, b);
  return same && bytes !== undefined && key !== "";
}

/** 401 with the challenge RFC 6750 asks for. */
export function unauthorized(given: boolean): HttpError {
  return new HttpError(
    401,
    "missing or wrong API key",
    "invalid_request_error",
    null,
    "invalid_api_key",
  )
    .with({
      "www-authenticate": given
        ? 'Bearer realm="kiln", error="invalid_token"'
        : 'Bearer realm="kiln"',
    });
}

export interface BodyLimits {
  maxBytes: number;
  /** The whole body must arrive within this many milliseconds of the headers (408 after). */
  timeoutMs: number;
}

/** Read and parse a JSON body: 413 over `maxBytes`, 408 past the deadline, 400 if not JSON. */
export async function readJson(req: Request, limits: BodyLimits): Promise<unknown> {
  const { maxBytes, timeoutMs } = limits;
  const tooLarge = () => new HttpError(413, `request body over ${maxBytes} bytes`);
  const length = req.headers.get("content-length");
  if (length !== null && !(Number(length) <= maxBytes)) throw tooLarge();
  if (!req.body) throw HttpError.badRequest("a JSON body is required");
  const reader = req.body.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new HttpError(408, `request body not received within ${timeoutMs} ms`, "timeout_error")
            .with({ connection: "close" }),
        ),
      timeoutMs,
    );
  });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await Promise.race([reader.read(), late]);
      } catch (e) {
        if (e instanceof HttpError) throw e;
        throw HttpError.badRequest(`request body: ${(e as Error).message}`);
      }
      if (r.done) break;
      size += r.value.byteLength;
      if (size > maxBytes) throw tooLarge().with({ connection: "close" });
      chunks.push(r.value);
    }
  } catch (e) {
    reader.cancel().catch(() => {});
    throw e;
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(
      await new Blob(chunks as BlobPart[]).bytes(),
    );
  } catch {
    throw HttpError.badRequest("the body is not UTF-8");
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw HttpError.badRequest(`malformed JSON: ${(e as Error).message}`);
  }
}
