/**
 * The completion routes of `KilnServer` (`app.ts`) once a body is read: `POST /v1/completions`,
 * `/v1/chat/completions` and `/v1/responses` (the Responses API on the chat path,
 * `responses_route.ts`). The model named is checked, the job built within the server's limits,
 * and the serving layer (`src/openai/serving.ts`) refuses a prompt the KV cache could never
 * hold, then answers whole or as server-sent events (`streaming.ts`).
 */
import { kvGeometry } from "../contract/kv_capacity.ts";
import { parseJob } from "../openai/requests.ts";
import { Serving } from "../openai/serving.ts";
import { modelNotFound, serves } from "./model_routes.ts";
import type { ServerOptions } from "./options.ts";
import { RESPONSES, type ResponsesRoute } from "./responses_route.ts";
import type { ServerState } from "./server_state.ts";
import { eventStream } from "./streaming.ts";

/** The route paths, each with whether it takes the chat form. */
export const COMPLETIONS: Record<string, boolean> = {
  "/v1/completions": false,
  "/v1/chat/completions": true,
  [RESPONSES]: true,
};

/** What a completion runs on: the server's settings, its state and its Responses route. */
export interface CompletionServer {
  options: ServerOptions;
  state: ServerState;
  responses: ResponsesRoute;
}

/**
 * Answer `body` (posted to `path`) on a ready server. Throws for a model not served (404), a bad
 * body or a prompt the KV cache could never hold (400, before a stream's 200), or what `admit`
 * throws (a full server's 429); once `admit` returns, the request's tracker counts it.
 */
export async function completionResponse(
  req: Request,
  path: string,
  body: unknown,
  server: CompletionServer,
  admit: () => void,
): Promise<Response> {
  const { options, state, responses } = server;
  const config = state.config!, text = state.text!;
  const model = (body as { model?: unknown } | null)?.model;
  if (typeof model === "string" && !serves(config, model)) throw modelNotFound(model, config);
  const limits = {
    maxN: options.maxN ?? 8,
    contextLength: config.context_length ?? Infinity,
    maxLogprobs: 20,
  };
  const chat = COMPLETIONS[path]!;
  const rj = path === RESPONSES ? responses.parse(body, text, limits) : undefined;
  const job = rj?.job ?? parseJob(body, chat, text, limits);
  const serving = new Serving({
    engine: options.engine,
    text,
    requests: options.requests,
    kv: kvGeometry(config),
    shutdown: state.shutdown,
    runs: state.inFlight,
  });
  serving.checkFits(job, rj ? "input" : chat ? "messages" : "prompt");
  admit();
  if (rj) return await responses.answer(rj, serving, req.signal);
  if (job.stream) return await eventStream(serving, job, req.signal);
  return Response.json(await serving.whole(job, req.signal));
}
