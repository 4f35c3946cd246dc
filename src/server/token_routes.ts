/**
 * vLLM's token routes, `POST /tokenize` and `POST /detokenize` (the bodies: `src/openai/
 * tokenize.ts`), behind the same host check, API key, JSON type and body limits as the
 * completions. They run nothing on the engine, so they take no place in the queue and are not
 * counted in `dynamo_frontend_*`.
 */
import type { EngineConfig } from "../contract/types.ts";
import type { ModelText } from "../text/load.ts";
import { detokenize, tokenize } from "../openai/tokenize.ts";
import { HttpError } from "./errors.ts";
import { modelNotFound, serves } from "./model_routes.ts";

/** The token routes' paths. */
export const TOKEN_ROUTES: ReadonlySet<string> = new Set(["/tokenize", "/detokenize"]);

/**
 * The answer of token route `path` to `body` (read and parsed): 404 when its `model` names
 * another model, 400 naming the field for a bad body.
 */
export function tokenResponse(
  path: string,
  body: unknown,
  config: EngineConfig,
  text: ModelText,
): Response {
  const model = (body as { model?: unknown } | null)?.model;
  if (model !== undefined && model !== null) {
    if (typeof model !== "string") throw HttpError.badRequest("model: expected a string", "model");
    if (!serves(config, model)) throw modelNotFound(model, config);
  }
  return Response.json(
    path === "/tokenize" ? tokenize(body, text, config.context_length) : detokenize(body, text),
  );
}
