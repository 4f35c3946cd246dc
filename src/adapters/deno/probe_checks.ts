/** Status checks the probe's cases share: each returns `undefined` when the server held. */
import type { RawResponse } from "./raw_http.ts";

/** `undefined` when `res` has status `want`, else what it had. */
export async function expectStatus(
  res: Response,
  want: number,
  header?: string,
): Promise<string | undefined> {
  const body = await res.text();
  if (res.status !== want) return `HTTP ${res.status} (want ${want}): ${body.slice(0, 200)}`;
  if (header !== undefined && !res.headers.get(header)) return `HTTP ${want} without ${header}`;
  return undefined;
}

/** `undefined` when the raw response `r` has status `want`, else what it had. */
export const rawStatus = (r: RawResponse | undefined, want: number): string | undefined =>
  r === undefined
    ? "no response"
    : r.status === want
    ? undefined
    : `HTTP ${r.status} (want ${want}): ${r.body.slice(0, 200)}`;
