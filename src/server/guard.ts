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

const digest = async (s: string) =>
  new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));

/**
 * Whether `Authorization` carries `Bearer <key>`, in time that does not depend on where the
 * given key first differs (both sides are hashed, then every byte is compared).
 */
export async function keyMatches(authorization: string | null, key: string): Promise<boolean> {
  const given = authorization?.match(/^Bearer +(.*)$/i)?.[1] ?? "";
  const [a, b] = await Promise.all([digest(given), digest(key)]);
  let diff = authorization === null ? 1 : 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
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
