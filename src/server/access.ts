/**
 * Which `Host` names and `Origin`s the server answers, and CORS for the origins it lists.
 *
 * DNS rebinding: a page on a name the attacker controls, re-pointed at 127.0.0.1, is same-origin
 * with a loopback server and may use it and read its answers; only the `Host` header (the
 * attacker's name) gives it away. So a loopback-bound server answers only loopback names
 * (`localhost`, 127.0.0.0/8, `[::1]`, any port) plus `allowedHosts`, and refuses any other with
 * 421 Misdirected Request (RFC 9110 §15.5.20: the server is not authoritative for that name). A
 * request whose `Origin` is neither same-origin with its `Host` nor listed in `corsOrigins` gets
 * 403: that page may not use the server. Listed origins get CORS: a preflight is answered 204 and
 * every response (errors and streams too) carries `Access-Control-Allow-Origin` echoing the origin.
 * No `*`: an origin must be named, and no response allows credentials (the API key travels in
 * `Authorization`, which a page sets itself; no cookies are used).
 */
import { HttpError, quote } from "./errors.ts";

/** The access options of `ServerOptions`. */
export interface AccessOptions {
  /** The address the server listens on; loopback (with no `allowedHosts`): loopback Hosts only. */
  bindHost?: string;
  /** Host names (no port) answered besides the loopback ones; `["*"]`: any. */
  allowedHosts?: readonly string[];
  /** Exact origins (`scheme://host[:port]`) allowed to call cross-origin, with CORS. */
  corsOrigins?: readonly string[];
}

/** Methods a listed origin may use. */
export const CORS_METHODS = "GET, HEAD, POST";
/** Request headers always allowed in a preflight (more are allowed when the preflight asks). */
export const CORS_HEADERS = "Authorization, Content-Type";
/** Seconds a browser may cache a preflight answer. */
export const CORS_MAX_AGE = 600;
/** Response headers a page may read besides the CORS-safelisted ones. */
const EXPOSED = "Retry-After, WWW-Authenticate";
/** An HTTP token (RFC 9110 §5.6.2): a header name a preflight may ask for. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * `name` (no port) as URLs write a host: lower case, IPv4 dotted, IPv6 bracketed, no trailing
 * dot; undefined if it is not a host name or address.
 */
export function canonicalName(name: string): string | undefined {
  const ipv6 = /^\[?[0-9A-Fa-f:.]+\]?$/.test(name) && name.includes(":");
  if (!ipv6 && !/^[A-Za-z0-9._-]+$/.test(name)) return undefined;
  try {
    const url = new URL(`http://${ipv6 && !name.startsWith("[") ? `[${name}]` : name}/`);
    return url.hostname.replace(/\.$/, "") || undefined;
  } catch {
    return undefined;
  }
}

/** Whether a canonical name is loopback: `localhost`, 127.0.0.0/8 or `[::1]`. */
export function isLoopback(name: string): boolean {
  return name === "localhost" || name === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/** The origin `o` serialises to, or undefined when it is not a `scheme://host[:port]` origin. */
function canonicalOrigin(o: string): string | undefined {
  try {
    const url = new URL(o);
    const origin = url.origin;
    if (origin === "null" || `${origin}/` !== url.href.replace(/\/?$/, "/")) return undefined;
    return origin;
  } catch {
    return undefined;
  }
}

/** The policy of one server: `check` and `preflight` before routing, `decorate` on every answer. */
export class Access {
  /** Whether a canonical Host name is answered; undefined: any. */
  readonly #hostOk: ((name: string) => boolean) | undefined;
  readonly #origins: Set<string>;
  /** Off (as before this policy existed): no bind address or a non-loopback one, no options. */
  readonly #guarded: boolean;
  readonly #describe: string;

  /** Throws `TypeError` naming a bad entry (an origin that is not one, `*`, a port). */
  constructor(o: AccessOptions) {
    const bind = o.bindHost === undefined ? undefined : canonicalName(o.bindHost);
    if (o.bindHost !== undefined && bind === undefined) {
      throw new TypeError(`bindHost ${quote(o.bindHost)} is not a host name or address`);
    }
    const names = o.allowedHosts?.map((h) => {
      const name = h === "*" ? h : canonicalName(h);
      if (name === undefined) {
        throw new TypeError(`allowed host ${quote(h)} is not a host name or address (no port)`);
      }
      return name;
    });
    this.#origins = new Set((o.corsOrigins ?? []).map((origin) => {
      const c = canonicalOrigin(origin);
      if (c === undefined) {
        throw new TypeError(
          `CORS origin ${quote(origin)} is not an exact origin (scheme://host[:port]); ` +
            `"*" is refused: it would let every web page use this server`,
        );
      }
      return c;
    }));
    const loopbackBind = bind !== undefined && isLoopback(bind);
    if (names !== undefined && !names.includes("*")) {
      const set = new Set(names);
      if (bind !== undefined && bind !== "0.0.0.0" && bind !== "[::]") set.add(bind);
      this.#hostOk = (n) => isLoopback(n) || set.has(n);
      this.#describe = `loopback names and ${[...set].join(", ")}`;
    } else if (names === undefined && loopbackBind) {
      this.#hostOk = isLoopback;
      this.#describe = "loopback names only (localhost, 127.x.x.x, [::1])";
    } else {
      this.#hostOk = undefined;
      this.#describe = "any name";
    }
    this.#guarded = loopbackBind || names !== undefined || this.#origins.size > 0;
  }

  #listed(origin: string): boolean {
    const c = canonicalOrigin(origin);
    return c !== undefined && this.#origins.has(c);
  }

  /**
   * Throws 421 when the `Host` (or an absolute request target's host) is not answered here, 403
   * when the `Origin` is neither same-origin with the `Host` nor listed. A request with no `Host`
   * (HTTP/1.0) is taken as addressed to the bound address, as Deno takes it for `req.url`.
   */
  check(req: Request): void {
    if (!this.#guarded) return;
    const host = req.headers.get("host");
    if (host !== null && this.#hostOk !== undefined) {
      const names = [new URL(`http://${host}`).hostname, new URL(req.url).hostname];
      for (const name of new Set(names.map((n) => n.replace(/\.$/, "")))) {
        if (!this.#hostOk(name)) {
          throw new HttpError(
            421,
            `Host ${quote(name)} is not served here (this server answers ${this.#describe}; ` +
              `serve's --allowed-hosts adds names)`,
            "invalid_request_error",
            null,
            "host_not_allowed",
          );
        }
      }
    }
    const origin = req.headers.get("origin");
    if (origin !== null && !this.#listed(origin) && !sameOrigin(origin, host)) {
      throw new HttpError(
        403,
        `Origin ${quote(origin)} may not use this server (serve's --cors-origins lists the ` +
          `origins allowed)`,
        "invalid_request_error",
        null,
        "origin_not_allowed",
      );
    }
  }

  /** The answer to a CORS preflight (204 for a listed origin, else 403), or undefined if not one. */
  preflight(req: Request): Response | undefined {
    const origin = req.headers.get("origin");
    if (
      req.method !== "OPTIONS" || origin === null ||
      !req.headers.has("access-control-request-method")
    ) return undefined;
    if (!this.#listed(origin)) {
      throw new HttpError(
        403,
        `CORS is not enabled for Origin ${quote(origin)} (serve's --cors-origins lists origins)`,
        "invalid_request_error",
        null,
        "origin_not_allowed",
      );
    }
    const asked = (req.headers.get("access-control-request-headers") ?? "").split(",")
      .map((h) => h.trim()).filter((h) => TOKEN.test(h)).slice(0, 64);
    const base = CORS_HEADERS.toLowerCase().split(", ");
    const extra = asked.filter((h) => !base.includes(h.toLowerCase()));
    const headers = new Headers({
      "access-control-allow-origin": origin,
      "access-control-allow-methods": CORS_METHODS,
      "access-control-allow-headers": [CORS_HEADERS, ...extra].join(", "),
      "access-control-max-age": String(CORS_MAX_AGE),
      vary: "Origin, Access-Control-Request-Headers",
    });
    // Chrome's Private Network Access preflight, for a public page calling a loopback server.
    if (req.headers.get("access-control-request-private-network") === "true") {
      headers.set("access-control-allow-private-network", "true");
    }
    return new Response(null, { status: 204, headers });
  }

  /** `res` with `Vary: Origin` and, for a listed origin, the CORS headers (when CORS is on). */
  decorate(req: Request, res: Response): Response {
    if (this.#origins.size === 0 || res.headers.has("access-control-allow-origin")) return res;
    res.headers.append("vary", "Origin");
    const origin = req.headers.get("origin");
    if (origin !== null && this.#listed(origin)) {
      res.headers.set("access-control-allow-origin", origin);
      res.headers.set("access-control-expose-headers", EXPOSED);
    }
    return res;
  }
}

/** Whether `origin` is the origin of a page served under `host` (scheme's default port implied). */
function sameOrigin(origin: string, host: string | null): boolean {
  if (host === null) return false;
  try {
    const o = new URL(origin);
    return o.origin !== "null" && o.host === new URL(`${o.protocol}//${host}`).host;
  } catch {
    return false;
  }
}
