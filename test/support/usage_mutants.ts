/**
 * For usage tests: planted errors put between a client and Kiln's server, each a `fetch` that
 * hands the client what a broken server would have sent.
 */

type Usage = { completion_tokens: number; total_tokens: number };

function drop(u: Usage, n: number): void {
  u.completion_tokens -= n;
  u.total_tokens -= n;
}

/**
 * The server as if its usage left out the tokens of the chunk that completed a stop string
 * (`chunk` tokens, every chunk of the engine that serves it): requests with `stop` get usage
 * short by that much, whole or in a stream's usage chunk.
 */
export function dropStopChunk(chunk: number): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const body = JSON.parse(String(init?.body ?? "{}"));
    if (body.stop === undefined || res.status >= 400) return res;
    const text = await res.text();
    let out: string;
    if (body.stream) {
      out = text.split("\n").map((line) => {
        if (!line.startsWith("data: {")) return line;
        const e = JSON.parse(line.slice(6));
        if (!e.usage) return line;
        drop(e.usage, chunk);
        return `data: ${JSON.stringify(e)}`;
      }).join("\n");
    } else {
      const j = JSON.parse(text);
      drop(j.usage, chunk);
      out = JSON.stringify(j);
    }
    return new Response(out, { status: res.status, headers: res.headers });
  };
}
