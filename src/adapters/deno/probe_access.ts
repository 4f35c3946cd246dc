/**
 * The probe's cases on which requests a server answers: HTTP/1.0 without `Host`, a DNS-rebinding
 * request, a foreign `Origin`, and CORS preflights from an unlisted and from a listed origin.
 */
import type { Probe, ProbeCase } from "./probe_client.ts";
import { expectStatus, rawStatus } from "./probe_checks.ts";

/** A CORS preflight for a completion with a key, from `origin`. */
const preflight = (p: Probe, origin: string) =>
  fetch(new URL("/v1/completions", p.o.base), {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    },
  });

/** Cases on `Host` and `Origin` (run after the `Host` tricks). */
export const ACCESS_CASES: ProbeCase[] = [
  {
    name: "HTTP/1.0 GET /health without Host is served (200)",
    run: async (p) => rawStatus(await p.raw(["GET /health HTTP/1.0"]), 200),
  },
  {
    name: "DNS rebinding (Host and Origin evil.example) is refused with 421 or 403",
    run: async (p) => {
      const evil = `evil.example:${p.o.base.port || 80}`;
      const body = p.completion();
      const r = await p.raw([
        "POST /v1/completions HTTP/1.1",
        `Host: ${evil}`,
        `Origin: http://${evil}`,
        ...p.authLines(),
        "Content-Type: application/json",
        `Content-Length: ${body.length}`,
        "Connection: close",
      ], { pieces: [new TextEncoder().encode(body)] });
      if (r === undefined) return "no response";
      return r.status === 421 || r.status === 403
        ? undefined
        : `HTTP ${r.status} (want 421 or 403): ${r.body.slice(0, 200)}`;
    },
  },
  {
    name: "a foreign Origin gets 403",
    run: async (p) =>
      expectStatus(
        await p.fetch("/v1/completions", {
          method: "POST",
          headers: { "content-type": "application/json", origin: "http://evil.example" },
          body: p.completion(),
        }),
        403,
      ),
  },
  {
    name: "a preflight from an unlisted Origin is refused (4xx, no Allow-Origin)",
    run: async (p) => {
      const res = await preflight(p, "http://evil.example");
      await res.body?.cancel();
      const got = res.headers.get("access-control-allow-origin");
      if (got !== null) return `HTTP ${res.status} with Access-Control-Allow-Origin: ${got}`;
      return res.status >= 400 && res.status < 500 ? undefined : `HTTP ${res.status} (want 4xx)`;
    },
  },
  {
    name: "a --cors-origins origin's preflight gets 204 with the CORS headers",
    run: async (p) => {
      const origin = p.o.corsOrigin;
      if (origin === undefined) return undefined; // no origin listed: nothing to check
      const res = await preflight(p, origin);
      const failure = await expectStatus(res, 204);
      if (failure) return failure;
      const h = (name: string) => res.headers.get(name) ?? "";
      if (h("access-control-allow-origin") !== origin) {
        return `Allow-Origin ${h("access-control-allow-origin")}`;
      }
      if (!/\bOrigin\b/i.test(h("vary"))) return `Vary: ${h("vary")}`;
      if (!/\bPOST\b/.test(h("access-control-allow-methods"))) return "POST not allowed";
      const headers = h("access-control-allow-headers").toLowerCase();
      if (!/\bauthorization\b/.test(headers) || !/\bcontent-type\b/.test(headers)) {
        return `Allow-Headers: ${headers}`;
      }
      if (!h("access-control-max-age")) return "no Access-Control-Max-Age";
      const actual = await p.fetch("/v1/completions", {
        method: "POST",
        headers: { "content-type": "application/json", origin },
        body: p.completion(),
      });
      const allow = actual.headers.get("access-control-allow-origin");
      return await expectStatus(actual, 200) ??
        (allow === origin ? undefined : `the completion's Allow-Origin: ${allow}`);
    },
  },
];
